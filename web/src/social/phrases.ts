// The quick phrases the chat offers (docs/rules.md §15), in both languages: phrases.json is
// generated from the server's list (tests/web/social_phrases.py; a test fails when it
// differs), never edited by hand.
import data from "./phrases.json";
import type { Lang } from "../ui/i18n";

export type { Lang };
export type Phrase = { id: string; en: string; ar: string };

/** Every quick phrase, in the order the picker shows them. */
export const PHRASES: readonly Phrase[] = data.phrases;

const BY_ID = new Map(PHRASES.map((p) => [p.id, p]));

/** A phrase's text in the reader's language; "" for an id this page does not know. */
export function phraseText(id: string, lang: Lang): string {
  const p = BY_ID.get(id);
  return p ? p[lang] : "";
}
