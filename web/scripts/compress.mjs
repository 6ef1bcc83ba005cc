// The built app pre-compressed at the highest quality (issue 39: the first load on the wire
// under 120 KB in both languages): beside each text file of dist/ its brotli (quality 11) and
// gzip (level 9) forms, FILE.br and FILE.gz, which the web app server (services/trix/webapp.py)
// sends with Content-Encoding to a browser that accepts them. The edge's own compressor, at a
// lower quality, passes an encoded response through untouched. Binary formats that are
// compressed already (woff2, png) get none; a form no smaller than the file is not written.
import { readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";

const TEXT = [".html", ".js", ".css", ".svg", ".webmanifest", ".json", ".wasm"];
const dist = new URL("../dist/", import.meta.url).pathname;

function* files(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* files(path);
    else yield path;
  }
}

let raw = 0;
let br = 0;
let count = 0;
for (const path of [...files(dist)]) {
  if (path.endsWith(".br") || path.endsWith(".gz")) {
    rmSync(path); // an earlier build's
    continue;
  }
  if (!TEXT.some((ext) => path.endsWith(ext))) continue;
  const data = readFileSync(path);
  const brotli = brotliCompressSync(data, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY,
      [constants.BROTLI_PARAM_LGWIN]: constants.BROTLI_MAX_WINDOW_BITS,
      [constants.BROTLI_PARAM_SIZE_HINT]: data.length,
      [constants.BROTLI_PARAM_MODE]: path.endsWith(".wasm") ? constants.BROTLI_MODE_GENERIC : constants.BROTLI_MODE_TEXT,
    },
  });
  const gzip = gzipSync(data, { level: 9 });
  if (brotli.length < data.length) writeFileSync(`${path}.br`, brotli);
  if (gzip.length < data.length) writeFileSync(`${path}.gz`, gzip);
  raw += data.length;
  br += Math.min(brotli.length, data.length);
  count += 1;
}
const kb = (n) => (n / 1024).toFixed(1);
console.log(`web compress: ${count} files pre-compressed (brotli 11, gzip 9): ${kb(raw)} KB -> ${kb(br)} KB brotli`);
