import { execFile, spawnSync } from "node:child_process";
import { readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import type { AllocRow } from "../../projections/allocs.ts";
import type { JobRow } from "../../projections/jobs.ts";
import type { NodeRow } from "../../projections/nodes.ts";
import { runExport } from "../../src/cli/export-command.ts";
import { NodeSimulator } from "../../src/nodesim/simulator.ts";
import { eventually, FAST_DRIVER } from "../nodesim/fixtures.ts";
import { startTestServer } from "../server-harness.ts";
import { serviceJob } from "../services/scheduler/scenario.ts";
import { useTempDirs } from "../store/helpers.ts";

/**
 * docs/recipes/alloc_transitions.py, as docs/consumer-recipes.md tells a
 * reader to run it, on a real export: a job placed, run, stopped and
 * collected, then the recipe's summary and table checked against what the
 * server did.
 */

const recipe = join(dirname(fileURLToPath(import.meta.url)), "../../docs/recipes/alloc_transitions.py");
const hasPython = spawnSync("python3", ["--version"], { stdio: "ignore" }).status === 0;
if (!hasPython) process.stderr.write("consumer recipe test skipped: python3 is not installed\n");

/** Asynchronous: the server the export came from runs in this process. */
function python(args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      "python3",
      [...args],
      { env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1" } },
      (err, out, e) =>
        err ? reject(new Error(`python3 ${args.join(" ")}: ${err.message}\n${e}`)) : resolve(out),
    );
  });
}

interface Summary {
  allocations: number;
  transitions: number;
  by_field: Record<string, number>;
  deleted: number;
}

describe.skipIf(!hasPython)("the allocation transitions recipe", () => {
  const tempDir = useTempDirs();
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0).reverse()) await c();
  });

  it("builds one ClientStatus transition to running per allocation and counts what GC deleted", async () => {
    const s = await startTestServer();
    cleanup.push(() => s.stop());
    const sim = new NodeSimulator({
      server: s.url,
      nodes: 3,
      seed: "consumer-recipe",
      initialHeartbeatStaggerMs: 200,
      driver: FAST_DRIVER,
    });
    cleanup.push(() => sim.stop());
    await sim.start();

    const dir = await tempDir();
    const file = join(dir, "changes.ndjson");
    const stopExport = new AbortController();
    const quiet = { write: () => true } as unknown as NodeJS.WritableStream;
    const exporter = runExport(["--to", `file:${file}`, "--server", s.url], quiet, stopExport.signal);
    cleanup.push(async () => {
      stopExport.abort();
      await exporter;
    });

    const call = async (path: string, method: string, body?: unknown) => {
      const res = await fetch(s.url + path, {
        method,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      expect(res.status, `${method} ${path}: ${await res.clone().text()}`).toBe(200);
    };
    const allocs = () => [...s.store.table<AllocRow>("allocs").all()];

    await eventually(
      "three ready nodes",
      () => [...s.store.table<NodeRow>("nodes").all()].filter((n) => n.Status === "ready").length === 3,
    );
    await call("/v1/jobs", "PUT", { Job: serviceJob("web", 3) });
    await eventually(
      "web running",
      () => allocs().filter((a) => a.DesiredStatus === "run" && a.ClientStatus === "running").length === 3,
    );
    await call("/v1/job/web", "DELETE");
    await eventually(
      "web stopped",
      () =>
        s.store.table<JobRow>("jobs").get("default\u0000web")?.Status === "dead" &&
        allocs().every((a) => a.ClientStatus === "complete"),
    );
    const created = new Set(allocs().map((a) => a.ID));
    await call("/v1/system/gc", "PUT");
    const collected = created.size - allocs().length;
    expect(collected).toBeGreaterThan(0);

    const last = s.log.lastIndex();
    const position = async () => {
      try {
        return (JSON.parse(await readFile(`${file}.position`, "utf8")) as { index: number }).index;
      } catch {
        return 0;
      }
    };
    await eventually(`the export to reach index ${last}`, async () => (await position()) >= last);
    // Stopped, so the recipe reads whole lines only.
    stopExport.abort();
    await exporter;

    const db = join(dir, "transitions.db");
    const summary = JSON.parse(await python([recipe, file, "--db", db])) as Summary;
    expect(summary.allocations).toBe(created.size);
    expect(summary.deleted).toBe(collected);
    expect(summary.transitions).toBe(Object.values(summary.by_field).reduce((a, b) => a + b, 0));
    expect(summary.by_field).toMatchObject({ ClientStatus: expect.any(Number), "(deleted)": collected });

    const query = [
      "import json, sqlite3, sys",
      "db = sqlite3.connect(sys.argv[1])",
      "sql = \"SELECT DISTINCT alloc_id FROM alloc_transitions WHERE field = 'ClientStatus' AND to_value = 'running'\"",
      "print(json.dumps(sorted(r[0] for r in db.execute(sql))))",
    ].join("\n");
    const running = JSON.parse(await python(["-c", query, db])) as string[];
    expect(running).toEqual([...created].sort());
  });
});
