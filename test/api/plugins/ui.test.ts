import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Fastify, { type FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApiContext } from "../../../src/api/context.ts";
import { CONTENT_SECURITY_POLICY, UI_DIST_DIR, UI_NOT_BUILT, uiAssets } from "../../../src/api/plugins/ui.ts";
import { type AclServer, startAclServer } from "../../acl/acl-fixtures.ts";

/**
 * The history explorer's files. The plugin itself on a directory of the
 * test's own (content types, traversal, revalidation, the answer while
 * nothing is built), and the real server with ACLs on: public routes, the
 * redirect of `/`, at_index refused.
 */

/** The plugin alone, serving `dir`; it reads nothing of the context. */
async function assetsServer(dir: string): Promise<FastifyInstance> {
  const app = Fastify();
  await app.register(uiAssets(dir), {} as ApiContext);
  await app.ready();
  return app;
}

describe("uiAssets on a built directory", () => {
  let dir: string;
  let app: FastifyInstance;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "chronomad-ui-"));
    const dist = join(dir, "dist");
    await mkdir(join(dist, "img"), { recursive: true });
    await writeFile(join(dist, "index.html"), "<!doctype html><title>chronomad</title>");
    await writeFile(join(dist, "app.js"), "export {};");
    await writeFile(join(dist, "app.js.map"), "{}");
    await writeFile(join(dist, "styles.css"), "body{}");
    await writeFile(join(dist, "img", "logo.svg"), "<svg/>");
    await writeFile(join(dist, ".hidden"), "no");
    await writeFile(join(dir, "secret.txt"), "outside the dist directory");
    app = await assetsServer(dist);
  });
  afterAll(async () => {
    await app.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("serves index.html at /ui/ and each file with its content type", async () => {
    const cases: [string, string, string][] = [
      ["/ui/", "text/html; charset=utf-8", "<!doctype html><title>chronomad</title>"],
      ["/ui/index.html", "text/html; charset=utf-8", "<!doctype html><title>chronomad</title>"],
      ["/ui/app.js", "text/javascript; charset=utf-8", "export {};"],
      ["/ui/app.js.map", "application/json; charset=utf-8", "{}"],
      ["/ui/styles.css", "text/css; charset=utf-8", "body{}"],
      ["/ui/img/logo.svg", "image/svg+xml", "<svg/>"],
    ];
    for (const [url, type, body] of cases) {
      const res = await app.inject({ url });
      expect(res.statusCode, url).toBe(200);
      expect(res.headers["content-type"], url).toBe(type);
      expect(res.headers["cache-control"], url).toBe("no-cache");
      expect(res.body, url).toBe(body);
    }
  });

  it("sends the page with a Content-Security-Policy of its own origin only", async () => {
    const res = await app.inject({ url: "/ui/" });
    expect(res.headers["content-security-policy"]).toBe(CONTENT_SECURITY_POLICY);
    expect(CONTENT_SECURITY_POLICY).toContain("default-src 'self'");
    expect(CONTENT_SECURITY_POLICY).toContain("frame-ancestors 'none'");
    expect(res.headers["x-content-type-options"]).toBe("nosniff");
  });

  it("answers a HEAD as the GET, without the body", async () => {
    const res = await app.inject({ method: "HEAD", url: "/ui/app.js" });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toBe("text/javascript; charset=utf-8");
    expect(res.body).toBe("");
  });

  it("answers 304 to a matching If-None-Match, and 200 to a stale one", async () => {
    const first = await app.inject({ url: "/ui/app.js" });
    const etag = first.headers.etag;
    expect(etag).toMatch(/^W\/"[0-9a-f]+-[0-9a-f]+"$/);
    const again = await app.inject({ url: "/ui/app.js", headers: { "if-none-match": String(etag) } });
    expect(again.statusCode).toBe(304);
    expect(again.body).toBe("");
    const stale = await app.inject({ url: "/ui/app.js", headers: { "if-none-match": 'W/"0-0"' } });
    expect(stale.statusCode).toBe(200);
  });

  it("answers 404 for unknown files, directories, hidden files and any way out of the directory", async () => {
    for (const url of [
      "/ui/nope.js",
      "/ui/img",
      "/ui/img/",
      "/ui/.hidden",
      "/ui/../secret.txt",
      "/ui/%2e%2e/secret.txt",
      "/ui/img/%2e%2e/%2e%2e/secret.txt",
      "/ui/..%2fsecret.txt",
      "/ui/..%5csecret.txt",
      "/ui/%2fetc%2fpasswd",
      "/ui//etc/passwd",
      "/ui/app.js%00.html",
    ]) {
      const res = await app.inject({ url });
      expect(res.statusCode, url).toBe(404);
      expect(res.body, url).not.toContain("outside the dist directory");
    }
  });

  it("redirects / to /ui/ with 307, as Nomad does, and /ui to /ui/", async () => {
    const root = await app.inject({ url: "/" });
    expect(root.statusCode).toBe(307);
    expect(root.headers.location).toBe("/ui/");
    const bare = await app.inject({ url: "/ui" });
    expect(bare.statusCode).toBe(301);
    expect(bare.headers.location).toBe("/ui/");
  });
});

describe("uiAssets before the UI is built", () => {
  it("answers 503 saying to run npm run build:ui, and serves the files once they are built", async () => {
    const dir = await mkdtemp(join(tmpdir(), "chronomad-ui-"));
    const dist = join(dir, "dist");
    const app = await assetsServer(dist);
    try {
      for (const url of ["/ui/", "/ui/app.js"]) {
        const res = await app.inject({ url });
        expect(res.statusCode, url).toBe(503);
        expect(res.body, url).toBe(UI_NOT_BUILT);
        expect(res.body).toContain("run npm run build:ui");
      }
      await mkdir(dist);
      await writeFile(join(dist, "index.html"), "<!doctype html>");
      const built = await app.inject({ url: "/ui/" });
      expect(built.statusCode).toBe(200);
      expect(built.body).toBe("<!doctype html>");
    } finally {
      await app.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("the history explorer's routes on a real server with ACLs on", () => {
  let acl: AclServer;
  beforeAll(async () => {
    acl = await startAclServer();
  });
  afterAll(async () => acl?.s.stop());

  it("redirects / to /ui/ without a token", async () => {
    const res = await acl.call(undefined, "/", "GET");
    // fetch follows redirects: the final answer is the page (or the 503 before a build).
    expect(res.redirected).toBe(true);
    expect(new URL(res.url).pathname).toBe("/ui/");
    const direct = await acl.s.call("/", { redirect: "manual" });
    expect(direct.status).toBe(307);
    expect(direct.headers.get("location")).toBe("/ui/");
  });

  it("serves /ui/ without a token: the page when ui/dist is built, else 503 saying how to build it", async () => {
    const res = await acl.call(undefined, "/ui/");
    if (existsSync(UI_DIST_DIR)) {
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
      expect(await res.text()).toMatch(/<html/i);
    } else {
      expect(res.status).toBe(503);
      expect(await res.text()).toBe(UI_NOT_BUILT);
    }
  });

  it("answers 404 for a file that is not there (once built), and refuses at_index", async () => {
    const missing = await acl.call(undefined, "/ui/no-such-file.js");
    expect(missing.status).toBe(existsSync(UI_DIST_DIR) ? 404 : 503);
    const res = await acl.call(undefined, "/ui/?at_index=1");
    expect(res.status).toBe(400);
    expect(await res.text()).toMatch(/^at_index is not supported by \/ui\/\*/);
  });
});
