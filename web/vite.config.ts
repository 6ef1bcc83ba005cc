// Vite build of the Trix browser client (issue 20). `npm run build` writes dist/, which
// `trix up` serves on the edge's origin; `npm test` runs the Vitest unit tests.
import { defineConfig } from "vitest/config";

export default defineConfig({
  base: "/",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    sourcemap: false,
    // The service worker (src/sw.ts) is built beside the page as /sw.js: its scope is the
    // whole origin, and its name must not change with its content.
    rolldownOptions: {
      input: { index: "index.html", sw: "src/sw.ts" },
      output: { entryFileNames: (chunk) => (chunk.name === "sw" ? "sw.js" : "assets/[name]-[hash].js") },
    },
  },
  test: { include: ["test/**/*.test.ts"], environment: "node", setupFiles: ["test/setup.ts"] },
});
