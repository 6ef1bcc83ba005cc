// The first load of the app (index.html and every asset it pulls in), gzipped: issue 20
// asks for under 250 KB. Prints the figure; exits 1 above the budget.
import { readFileSync, readdirSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { join } from "node:path";

const BUDGET = 250 * 1024;
const dist = new URL("../dist/", import.meta.url).pathname;
// The first load is index.html and what it names (script, stylesheet); the Verify page's code
// and its rules engine (.wasm, issue 39) are fetched only when a record is checked, the chat and
// friends panels (issue 44) once a player has signed in.
const html = readFileSync(join(dist, "index.html"), "utf-8");
// Each file's pre-compressed forms (FILE.br, FILE.gz: scripts/compress.mjs) are not files of
// their own.
const assets = readdirSync(join(dist, "assets"))
  .filter((f) => !f.endsWith(".br") && !f.endsWith(".gz"))
  .map((f) => join("assets", f));
const first = assets.filter((f) => html.includes(`/${f}`));
// The bundled Arabic font (issue 39) is fetched by the Arabic page only (its unicode-range).
const fonts = assets.filter((f) => f.endsWith(".woff2"));
const later = assets.filter((f) => !first.includes(f) && !fonts.includes(f));
const files = ["index.html", ...first];
const sizes = (list) => {
  let raw = 0;
  let gz = 0;
  for (const f of list) {
    const data = readFileSync(join(dist, f));
    raw += data.length;
    gz += gzipSync(data, { level: 9 }).length;
  }
  return { raw, gz };
};
const { raw, gz } = sizes(files);
const lazy = sizes(later);
const kb = (n) => (n / 1024).toFixed(1);
console.log(`web size: first load ${kb(gz)} KB gzipped (${kb(raw)} KB raw, ${files.length} files; budget 250 KB)`);
console.log(`web size: loaded later (a record checked; chat and friends once signed in) ${kb(lazy.gz)} KB gzipped (${later.join(", ")})`);
const font = sizes(fonts);
console.log(`web size: the Arabic page adds its font, ${kb(font.raw)} KB (woff2, not compressed further: ${fonts.join(", ")})`);
if (gz >= BUDGET) {
  console.error("web size: over the 250 KB budget");
  process.exit(1);
}
