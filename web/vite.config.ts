// Vite build of the Trix browser client (issue 20). `npm run build` writes dist/, which
// `trix up` serves on the edge's origin; `npm test` runs the Vitest unit tests.
import { defineConfig } from "vitest/config";

export default defineConfig({
  base: "/",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: { outDir: "dist", emptyOutDir: true, target: "es2022", sourcemap: false },
  test: { include: ["test/**/*.test.ts"], environment: "node", setupFiles: ["test/setup.ts"] },
});
