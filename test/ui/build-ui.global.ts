import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";

/**
 * vitest's globalSetup for the main project: builds ui/dist (scripts/build-ui.mjs)
 * when it is missing or older than ui/'s sources, once before any test file
 * runs, so the browser tests and the routes' tests see the page as the tree
 * has it and never race over a build. `npm ci` builds it too (prepare).
 */
const root = join(import.meta.dirname, "..", "..");
const ui = join(root, "ui");

function newest(path: string): number {
  if (!existsSync(path)) return 0;
  const info = statSync(path);
  if (!info.isDirectory()) return info.mtimeMs;
  let most = info.mtimeMs;
  for (const entry of readdirSync(path)) most = Math.max(most, newest(join(path, entry)));
  return most;
}

export default function setup(): void {
  if (!existsSync(join(ui, "src", "main.ts"))) return;
  const built = join(ui, "dist", "app.js");
  const sources = Math.max(
    newest(join(ui, "src")),
    newest(join(ui, "index.html")),
    newest(join(ui, "styles.css")),
    newest(join(root, "scripts", "build-ui.mjs")),
  );
  if (existsSync(built) && statSync(built).mtimeMs >= sources) return;
  execFileSync(process.execPath, [join(root, "scripts", "build-ui.mjs")], { stdio: "inherit" });
}
