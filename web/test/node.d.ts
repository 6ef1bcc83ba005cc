// The two node:fs calls the tests make (Vitest runs on Node; the app itself has no Node types).
declare module "node:fs" {
  export function readFileSync(path: URL): Uint8Array;
  export function readFileSync(path: URL, encoding: "utf-8"): string;
  export function readdirSync(path: URL): string[];
}
