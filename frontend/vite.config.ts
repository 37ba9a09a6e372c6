import { defineConfig } from "vite";

// The workbench UI is built into web/app, which package frontend embeds.
// Relative asset URLs keep it working under any path prefix (Wails' asset
// server, or the browser server behind a proxy).
export default defineConfig({
  base: "./",
  build: {
    outDir: "web/app",
    emptyOutDir: true,
    chunkSizeWarningLimit: 4000,
    sourcemap: false,
  },
});
