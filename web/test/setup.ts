// Every test file's rules engine: the .wasm `make web-wasm` built (web/build), read from disk
// where the page would fetch it.
import { readFileSync } from "node:fs";
import { setEngineSource } from "../src/client/engine";

setEngineSource(async () => {
  const bytes = readFileSync(new URL("../build/trix_engine.wasm", import.meta.url));
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
});
