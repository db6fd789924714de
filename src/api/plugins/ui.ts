import { readFile, stat } from "node:fs/promises";
import { extname, join, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import type { ApiContext } from "../context.ts";

/** Where `npm run build:ui` (scripts/build-ui.mjs) writes the history explorer. */
export const UI_DIST_DIR = fileURLToPath(new URL("../../../ui/dist/", import.meta.url));

/** The answer while ui/dist does not exist (a tree not built, or an install without devDependencies). */
export const UI_NOT_BUILT =
  "the history explorer is not built: run npm run build:ui (it needs the devDependency esbuild)";

/**
 * The page's own files and its own origin's API, nothing else: no inline
 * script or style markup, no framing (uPlot and the page set styles through
 * the CSSOM, which this allows). Defence in depth: the page already builds
 * its DOM from data as text, never as markup.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".map": "application/json; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".txt": "text/plain; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".woff2": "font/woff2",
};

/**
 * The history explorer's files (ui/dist) at `/ui/` and `/ui/<file>`, and
 * `GET /` sent to `/ui/` as Nomad does. Public, as Nomad's UI assets are:
 * the page holds no cluster data; it asks the API with the user's token.
 * The page routes by hash (`/ui/#/timeline/...`), so only files are served.
 *
 * The directory is read per request (a build after the server started is
 * served), and answers are revalidated: the file names carry no content
 * hash, so `no-cache` with an ETag of size and mtime.
 */
export function uiAssets(distDir: string): FastifyPluginAsync<ApiContext> {
  const root = resolve(distDir);
  return async (app) => {
    // Nomad answers `/` with 307 to `/ui/`.
    app.get("/", async (_request, reply) => reply.redirect("/ui/", 307));
    app.get("/ui", async (_request, reply) => reply.redirect("/ui/", 301));
    app.get("/ui/*", async (request, reply) => {
      const rest = (request.params as { "*": string })["*"];
      return serveFile(root, rest === "" ? "index.html" : rest, request, reply);
    });
  };
}

export const uiPlugin = uiAssets(UI_DIST_DIR);

async function serveFile(root: string, wanted: string, request: FastifyRequest, reply: FastifyReply) {
  if (!(await isDirectory(root))) {
    return reply.status(503).type("text/plain; charset=utf-8").send(UI_NOT_BUILT);
  }
  const path = insideRoot(root, wanted);
  const info = path === undefined ? undefined : await stat(path).catch(() => undefined);
  if (path === undefined || info === undefined || !info.isFile()) {
    return reply
      .status(404)
      .type("text/plain; charset=utf-8")
      .send(`chronomad does not serve ${request.method} ${request.url.split("?", 1)[0]}`);
  }
  const etag = `W/"${info.size.toString(16)}-${Math.floor(info.mtimeMs).toString(16)}"`;
  reply
    .header("ETag", etag)
    .header("Cache-Control", "no-cache")
    .header("X-Content-Type-Options", "nosniff")
    .type(CONTENT_TYPES[extname(path).toLowerCase()] ?? "application/octet-stream");
  if (path.endsWith(".html")) reply.header("Content-Security-Policy", CONTENT_SECURITY_POLICY);
  if (request.headers["if-none-match"] === etag) return reply.status(304).send();
  return reply.send(await readFile(path));
}

/**
 * The file a URL path names under `root`, or undefined when it would leave
 * it or names a hidden file: no `..` or `.name` segment, no backslash or
 * NUL, and the resolved path checked against the root besides.
 */
function insideRoot(root: string, wanted: string): string | undefined {
  if (wanted.includes("\\") || wanted.includes("\0")) return undefined;
  const segments = wanted.split("/");
  if (segments.some((s) => s.startsWith(".") || s === "")) return undefined;
  const path = resolve(join(root, ...segments));
  return path.startsWith(root + sep) ? path : undefined;
}

async function isDirectory(path: string): Promise<boolean> {
  return (await stat(path).catch(() => undefined))?.isDirectory() ?? false;
}
