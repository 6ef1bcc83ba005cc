// The table's chat view-model (issue 44, docs/rules.md §15): the two channels apart, quick
// phrases in the reader's language, mutes in one's own view, the unread badge, what the
// composer offers partners during a deal, and the server's refusals said as such.
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { PartnerChat, TableOptionsSchema, Variant } from "../src/gen/trix/v1/common_pb";
import { ChatChannelKind, ChatLineSchema, QuickPhraseSchema } from "../src/gen/trix/v1/social_pb";
import { emptyState } from "../src/client/state";
import type { GameState } from "../src/client/state";
import {
  composer,
  emptyChat,
  history,
  KEPT_LINES,
  lineText,
  markReported,
  receive,
  refusalOf,
  setMuted,
  setOpen,
  setShowSpectators,
  undelivered,
  visible,
} from "../src/social/chat";
import { PHRASES } from "../src/social/phrases";

const line = (id: number, author: string, content: { text: string } | { phrase: string }, kind = ChatChannelKind.TABLE_PLAYERS, table = "t1") =>
  create(ChatLineSchema, {
    channel: { kind, id: table },
    lineId: BigInt(id),
    authorId: author,
    authorName: author.toUpperCase(),
    content: "text" in content ? { case: "text", value: content.text } : { case: "phrase", value: create(QuickPhraseSchema, { id: content.phrase }) },
    sentAt: timestampFromMs(1_000 * id),
  });

describe("the table's two channels", () => {
  it("keep the spectators' lines apart and show them to a player only if his setting says so", () => {
    let s = emptyChat("t1", "me");
    s = receive(s, line(1, "ali", { text: "hi" }));
    s = receive(s, line(1, "sam", { text: "go ali" }, ChatChannelKind.TABLE_SPECTATORS));
    expect(visible(s, "players").map((l) => l.text)).toEqual(["hi"]);
    expect(visible(s, "spectators")).toEqual([]);
    expect(s.unread).toBe(1); // the spectators' line is not counted while hidden
    s = setShowSpectators(s, true);
    expect(visible(s, "spectators").map((l) => l.text)).toEqual(["go ali"]);
  });
  it("are both read by a spectator, whatever a player's setting", () => {
    let s = emptyChat("t1", "sam", false, true);
    s = receive(s, line(1, "ali", { text: "hi" }));
    s = receive(s, line(1, "noor", { text: "nice" }, ChatChannelKind.TABLE_SPECTATORS));
    expect([visible(s, "players").length, visible(s, "spectators").length, s.unread]).toEqual([1, 1, 2]);
  });
  it("ignore another table's lines and direct messages", () => {
    let s = emptyChat("t1", "me");
    s = receive(s, line(1, "ali", { text: "elsewhere" }, ChatChannelKind.TABLE_PLAYERS, "t2"));
    s = receive(s, line(2, "ali", { text: "dm" }, ChatChannelKind.DIRECT, "ali"));
    expect(s.lines.players).toEqual([]);
    expect(s.unread).toBe(0);
  });
  it("keep a line once however often it is delivered, in line order, the last 100 only", () => {
    let s = emptyChat("t1", "me");
    for (const id of [3, 1, 2, 3, 1]) s = receive(s, line(id, "ali", { text: `l${id}` }));
    expect(visible(s, "players").map((l) => l.text)).toEqual(["l1", "l2", "l3"]);
    for (let i = 4; i < 4 + KEPT_LINES; i++) s = receive(s, line(i, "ali", { text: `l${i}` }));
    expect(s.lines.players.length).toBe(KEPT_LINES);
    expect(s.lines.players[0]?.text).toBe("l4");
  });
});

describe("quick phrases", () => {
  it("are shown in the reader's language: the five the issue names, in Arabic and English", () => {
    const ids = PHRASES.map((p) => p.id);
    for (const id of ["greeting", "well_played", "hurry_up", "thank_you", "good_game"]) expect(ids).toContain(id);
    const s = receive(emptyChat("t1", "me"), line(1, "ali", { phrase: "greeting" }));
    const [l] = visible(s, "players");
    expect(lineText(l!, "ar")).toBe("السلام عليكم");
    expect(lineText(l!, "en")).toBe("Hello!");
    expect(lineText({ ...l!, phraseId: "well_played" }, "ar")).toBe("يعطيك العافية، لعب حلو");
  });
  it("unknown to this page are shown with the texts the server sent", () => {
    const m = line(1, "ali", { phrase: "new_one" });
    if (m.content.case === "phrase") Object.assign(m.content.value, { textEn: "New!", textAr: "جديد!" });
    const [l] = visible(receive(emptyChat("t1", "me"), m), "players");
    expect([lineText(l!, "en"), lineText(l!, "ar")]).toEqual(["New!", "جديد!"]);
  });
});

describe("mutes, reports and the badge", () => {
  it("a muted player's lines leave the reader's view and the badge, and come back on unmute", () => {
    let s = setMuted(emptyChat("t1", "me"), "bad", true);
    s = receive(s, line(1, "bad", { text: "spam" }));
    s = receive(s, line(2, "ali", { text: "hi" }));
    expect(visible(s, "players").map((l) => l.authorId)).toEqual(["ali"]);
    expect(s.unread).toBe(1);
    expect(visible(setMuted(s, "bad", false), "players").map((l) => l.authorId)).toEqual(["bad", "ali"]);
  });
  it("counts others' lines while closed, none of the reader's own nor of history; opening clears it", () => {
    let s = emptyChat("t1", "me");
    s = history(s, [line(2, "ali", { text: "old" }), line(1, "bob", { text: "older" })]);
    expect(s.unread).toBe(0);
    s = receive(s, line(3, "me", { text: "mine" }));
    s = receive(s, line(4, "ali", { text: "new" }));
    expect(s.unread).toBe(1);
    s = setOpen(s, true);
    expect(s.unread).toBe(0);
    s = receive(s, line(5, "ali", { text: "seen" }));
    expect(s.unread).toBe(0);
  });
  it("marks a reported line, and keeps an undelivered line in its author's view alone", () => {
    let s = receive(emptyChat("t1", "me"), line(7, "bad", { text: "x" }));
    s = markReported(s, "players", 7n);
    expect(s.lines.players[0]?.reported).toBe(true);
    s = undelivered(s, "players", "filtered words", "", 9_000);
    const own = s.lines.players.find((l) => l.undelivered);
    expect(own?.authorId).toBe("me");
    expect(own?.lineId).toBe(0n);
  });
});

const partnership = (partnerChat?: PartnerChat, over: Partial<GameState> = {}): GameState => ({
  ...emptyState("t1", 0),
  sequence: 10n,
  variant: Variant.TRIX_PARTNERSHIP,
  options: create(TableOptionsSchema, partnerChat === undefined ? {} : { partnerChat }),
  hand: [1, 2, 3],
  ...over,
});

describe("the composer (docs/rules.md §15)", () => {
  it("offers partners quick phrases only while a deal is played under the default option", () => {
    expect(composer(partnership(), false)).toEqual({ room: "players", freeText: false, why: "partners" });
    expect(composer(partnership(PartnerChat.PHRASES_DURING_DEALS), false).freeText).toBe(false);
  });
  it("offers free text between deals, after the game, with FREE_TEXT, and in the singles variants", () => {
    const scored = { dealIndex: 0, kingdom: 0, owner: 0, contract: 0, points: [0, 0, 0, 0], doubles: [] };
    expect(composer(partnership(undefined, { deals: [scored] }), false).freeText).toBe(true);
    expect(composer(partnership(undefined, { finished: true }), false).freeText).toBe(true);
    expect(composer(partnership(PartnerChat.FREE_TEXT), false).freeText).toBe(true);
    expect(composer(partnership(undefined, { variant: Variant.TRIX }), false).freeText).toBe(true);
  });
  it("writes a spectator in the spectators' channel, never the players'", () => {
    expect(composer(partnership(), true)).toEqual({ room: "spectators", freeText: true, why: "" });
  });
});

describe("the server's refusals", () => {
  it("are named by their status, the server's message kept", () => {
    expect(refusalOf(new ConnectError("free text between partners is refused during a deal", Code.PermissionDenied), 0)).toEqual({
      kind: "partners",
      message: "free text between partners is refused during a deal",
    });
    expect(refusalOf(new ConnectError("a spectator writes in the spectators' channel", Code.PermissionDenied), 0).kind).toBe("spectator");
    expect(refusalOf(new ConnectError("too fast; retry in 2 s", Code.ResourceExhausted), 1000)).toEqual({ kind: "tooFast", message: "too fast; retry in 2 s", untilMs: 3000 });
    expect(refusalOf(new ConnectError("timed out of chat; retry in 900 s", Code.ResourceExhausted), 0).kind).toBe("timedOut");
    expect(refusalOf(new ConnectError("over 280 characters", Code.InvalidArgument), 0).kind).toBe("invalid");
    expect(refusalOf(new Error("boom"), 0).kind).toBe("failed");
  });
});
