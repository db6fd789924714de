import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { useTempDirs } from "../store/helpers.ts";
import { spawnServe } from "./serve-process.ts";

describe("chronomad serve", () => {
  const tempDir = useTempDirs();

  it("on SIGTERM finishes in-flight writes, writes a snapshot and exits 0", async () => {
    const dir = await tempDir();
    const server = await spawnServe(["--data-dir", dir]);
    const writes = Array.from({ length: 40 }, (_, i) =>
      fetch(`${server.url}/v1/namespace/ns-${i}`, { method: "PUT", body: "{}" }).then(
        (r) => (r.ok ? i : -1),
        () => -1,
      ),
    );
    // Let some requests reach the server, then stop it while others are in flight.
    await writes[5];
    server.child.kill("SIGTERM");
    expect(await server.exited).toBe(0);
    const acknowledged = (await Promise.all(writes)).filter((i) => i >= 0);
    expect(acknowledged.length).toBeGreaterThan(0);
    expect(readdirSync(join(dir, "snapshots")).some((f) => f.endsWith(".snapshot"))).toBe(true);
    expect(server.lines.some((l) => l.msg === "chronomad stopped")).toBe(true);

    const again = await spawnServe(["--data-dir", dir]);
    try {
      const names = ((await (await fetch(`${again.url}/v1/namespaces`)).json()) as { Name: string }[]).map(
        (n) => n.Name,
      );
      for (const i of acknowledged) expect(names).toContain(`ns-${i}`);
      expect(again.lines.some((l) => l.msg === "snapshot loaded")).toBe(true);
    } finally {
      again.child.kill("SIGTERM");
      await again.exited;
    }
  });

  it("prints its usage for --help and exits 0", async () => {
    const { spawnSync } = await import("node:child_process");
    const bin = join(import.meta.dirname, "../../bin/chronomad.js");
    const run = spawnSync(process.execPath, [bin, "serve", "--log-level", "debug", "--help"], {
      encoding: "utf8",
    });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stderr).toBe("");
    expect(run.stdout).toMatch(/^Usage: chronomad serve \[flags\]/);
    expect(run.stdout).toMatch(/--http-addr HOST:PORT +.*default 127\.0\.0\.1:4646; env CHRONOMAD_HTTP_ADDR/);
  }, 120_000);

  it("refuses an unknown flag or a malformed setting, naming it", async () => {
    const { spawnSync } = await import("node:child_process");
    const bin = join(import.meta.dirname, "../../bin/chronomad.js");
    const bad = spawnSync(process.execPath, [bin, "serve", "--bogus", "1"], { encoding: "utf8" });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/unknown flag --bogus/);
    const ttl = spawnSync(process.execPath, [bin, "serve", "--min-heartbeat-ttl", "soon"], {
      encoding: "utf8",
    });
    expect(ttl.status).toBe(2);
    expect(ttl.stderr).toMatch(/min_heartbeat_ttl .* must be a duration/);
    const log = spawnSync(
      process.execPath,
      [bin, "serve", "--log", "ftp://x", "--http-addr", "127.0.0.1:0"],
      {
        encoding: "utf8",
      },
    );
    expect(log.status).toBe(1);
    expect(log.stderr).toMatch(/unsupported log URL "ftp:\/\/x"/);
  });
});
