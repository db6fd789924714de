import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { describe, expect, it } from "vitest";
import { bundledWorkerEntries, prepareNomadShim, workerEntries } from "./prepare-nomad-shim.ts";

describe("the Nomad shim's bundle", () => {
  it("finds the worker entries a bundle names beside itself", () => {
    const bundle = [
      'startTypeScriptWorker(new URL("./replica-thread.ts", import.meta.url), data);',
      'const WORKER_ENTRY = new URL( "./heartbeat-worker.ts" , import.meta.url);',
      'new URL("./replica-thread.ts", import.meta.url).href;',
      'new URL("../elsewhere.ts", import.meta.url); new URL("./data.json", import.meta.url);',
    ].join("\n");
    expect(workerEntries(bundle)).toEqual(["heartbeat-worker.ts", "replica-thread.ts"]);
  });

  it("loads neither the other log backends' clients nor nodesim's when it serves", async () => {
    const dir = await prepareNomadShim();
    const entry = readFileSync(join(dir, "chronomad.mjs"), "utf8");
    const serve = /import\("\.\/(chunk-[\w-]+\.mjs)"\)\)\.runServe/.exec(entry)?.[1];
    expect(serve, "the serve command's chunk").toBeDefined();
    // What `import … from` brings in when that chunk loads, following the chunks it imports statically.
    const packages = new Set<string>();
    const seen = new Set<string>();
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      const text = readFileSync(join(dir, file), "utf8");
      for (const m of text.matchAll(/^import\s+(?:[^"';]*?\s+from\s+)?"([^"]+)";/gm)) {
        const spec = m[1]!;
        if (spec.startsWith("./")) visit(spec.slice(2));
        else packages.add(spec);
      }
    };
    visit(serve!);
    expect(packages).toContain("fastify");
    for (const unused of ["kafkajs", "@eventstore/db-client", "undici"])
      expect(packages).not.toContain(unused);
  }, 60_000);

  it("starts a server whose scheduler runs on its threads, as npm start's does", async () => {
    const dir = await prepareNomadShim();
    const entries = await bundledWorkerEntries(dir);
    expect(entries).toContain("replica-thread.ts");
    for (const entry of entries) expect(existsSync(join(dir, entry)), entry).toBe(true);

    const data = mkdtempSync(join(tmpdir(), "shim-threads-"));
    const server = spawn(
      process.execPath,
      [
        join(dir, "chronomad.mjs"),
        "serve",
        "--data-dir",
        data,
        "--http-addr",
        "127.0.0.1:0",
        "--rpc-addr",
        "127.0.0.1:0",
        "--scheduler-workers",
        "1",
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    try {
      const outcome = await new Promise<string>((resolve) => {
        const lines = createInterface({ input: server.stdout });
        lines.on("line", (line) => {
          if (line.includes("scheduler replica ready")) resolve("ready");
          else if (line.includes("scheduler thread lost")) resolve(line);
        });
        server.on("exit", (code) => resolve(`exited with ${code}`));
      });
      expect(outcome).toBe("ready");
    } finally {
      if (server.exitCode === null && server.signalCode === null) {
        const exited = new Promise((resolve) => server.once("exit", resolve));
        server.kill("SIGTERM");
        await exited;
      }
      rmSync(data, { recursive: true, force: true });
    }
  }, 60_000);
});
