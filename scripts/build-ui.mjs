#!/usr/bin/env node
// Builds the history explorer (ui/, served at /ui/ by src/api/plugins/ui.ts)
// into ui/dist/: ui/src/main.ts bundled by esbuild into one ES module with
// its source map, beside ui/index.html, ui/styles.css and uPlot's stylesheet.
// Run by `npm run build:ui` and by npm's `prepare` (after `npm ci`/`npm install`).
// Everything comes from node_modules: nothing is fetched at build or run time.
import { copyFile, mkdir, rm, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const ui = join(root, "ui");
const dist = join(ui, "dist");
const entry = join(ui, "src", "main.ts");

/** Files copied as they are: [source, name in ui/dist]. */
const COPIED = [
  [join(ui, "index.html"), "index.html"],
  [join(ui, "styles.css"), "styles.css"],
  [join(root, "node_modules", "uplot", "dist", "uPlot.min.css"), "uPlot.min.css"],
];

async function exists(path) {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

async function loadEsbuild() {
  try {
    return await import("esbuild");
  } catch {
    // esbuild is a devDependency: an `npm ci --omit=dev` (or NODE_ENV=production)
    // install has none. The server still runs; /ui/ answers 503 until the UI is built.
    return undefined;
  }
}

async function main() {
  // `prepare` must not fail an install over the UI when it cannot be built
  // (a production install, or a tree without ui/); an explicit build must.
  const preparing = process.env.npm_lifecycle_event === "prepare";
  if (!(await exists(entry))) {
    console.error(`build-ui: ${entry} not found; the history explorer is not built`);
    return preparing ? 0 : 1;
  }
  const esbuild = await loadEsbuild();
  if (!esbuild) {
    const message = [
      "build-ui: esbuild is not installed (it is a devDependency; installs with --omit=dev skip it),",
      "so the history explorer (/ui/) is not built and the server answers /ui/ with 503.",
      "To build it: install the devDependencies too (`npm ci` without --omit=dev), then `npm run build:ui`.",
    ].join("\n");
    console.error(message);
    return preparing ? 0 : 1;
  }
  await rm(dist, { recursive: true, force: true });
  await mkdir(dist, { recursive: true });
  const result = await esbuild.build({
    entryPoints: [entry],
    outfile: join(dist, "app.js"),
    bundle: true,
    format: "esm",
    platform: "browser",
    target: ["es2022"],
    minify: true,
    sourcemap: true,
    legalComments: "linked",
    logLevel: "warning",
    metafile: true,
  });
  for (const [source, name] of COPIED) await copyFile(source, join(dist, name));
  const bytes = Object.values(result.metafile.outputs).reduce((sum, out) => sum + out.bytes, 0);
  console.error(`build-ui: ui/dist built (${Math.round(bytes / 1024)} KiB of scripts and maps)`);
  return 0;
}

try {
  process.exitCode = await main();
} catch (err) {
  console.error(`build-ui: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
}
