import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { pino } from "pino";
import type { AllocRow } from "../../projections/allocs.ts";
import { taskNames } from "../identity/claims.ts";
import { PlanIdentities } from "../identity/plan-identities.ts";
import { Keyring } from "../keyring/keyring.ts";
import { startBenchServer } from "./bench-server.ts";
import { c2mJob } from "./c2m-job.ts";
import { idle, placed, putJob, readyNodes } from "./scheduler-bench.ts";

export interface IdentityFigures {
  readonly nodes: number;
  readonly allocs: number;
  readonly tasks_per_alloc: number;
  /** From the job's registration until the scheduler is idle, every identity signed. */
  readonly placement_seconds: number;
  readonly placements_per_s: number;
  /** Workload identities (one JWT per task) the plan applier signed during the placement. */
  readonly jwts: number;
  readonly jwts_per_s: number;
  /** The same JWTs signed again alone (no cache, one core): what signing costs on its own. */
  readonly sign_only_jwts_per_s: number;
  /** Share of the placement's time spent signing, from the two rates. */
  readonly sign_share_pct: number;
  /** The server's event loop delay while it placed and signed (1 ms resolution). */
  readonly loop_delay_p50_ms: number;
  readonly loop_delay_p99_ms: number;
  readonly loop_delay_max_ms: number;
}

export interface IdentityBenchOptions {
  readonly nodes?: number;
  readonly allocs?: number;
  readonly fsync?: "always" | "never";
}

const TASKS = 3;

/**
 * Workload identity signing while the scheduler places one job of 10,000
 * allocations (3 tasks each) over 5,000 nodes, against a server in this
 * process (file log, fdatasync on): the JWTs the plan applier signs per
 * second of placement, the server's event loop delay meanwhile, and the rate
 * of signing alone for comparison.
 */
export async function benchIdentity(options: IdentityBenchOptions = {}): Promise<IdentityFigures> {
  const nodes = options.nodes ?? 5_000;
  const count = options.allocs ?? 10_000;
  const dir = await mkdtemp(join(tmpdir(), "chronomad-bench-identity-"));
  const server = await startBenchServer(["--data-dir", dir, "--fsync", options.fsync ?? "always"]);
  try {
    await readyNodes(server, nodes);
    const loop = monitorEventLoopDelay({ resolution: 1 });
    loop.enable();
    const t0 = performance.now();
    // One JWT per task: each allocation runs TASKS small tasks.
    const spec = c2mJob("signed", count, { cpu: 20, memoryMB: 20, tasks: TASKS });
    await putJob(`http://${server.address}`, { Job: spec });
    await placed(server, "signed", count);
    // The plan applier signs each plan's allocations right after its apply.
    await idle(server);
    const seconds = (performance.now() - t0) / 1000;
    loop.disable();

    const allocs = [...server.store.table<AllocRow>("allocs").all()].filter((a) => a.JobID === "signed");
    const stamped = allocs.filter((a) => a.SigningKeyID);
    if (stamped.length !== count) {
      throw new Error(`${count - stamped.length} allocations were placed without workload identities`);
    }
    const jwts = stamped.reduce((n, a) => n + taskNames(a).length, 0);

    // A fresh keyring with the same material has an empty JWT cache: every one is signed again.
    const keyId = stamped[0]!.SigningKeyID!;
    const material = server.keyring.get(keyId);
    if (!material) throw new Error(`the bench server lost root key ${keyId}`);
    const fresh = new Keyring();
    fresh.add(material);
    const t1 = performance.now();
    const signedAgain = await new PlanIdentities(fresh, pino({ level: "silent" })).sign(stamped);
    const signSeconds = (performance.now() - t1) / 1000;
    if (signedAgain !== jwts) throw new Error(`signed ${signedAgain} JWTs again, expected ${jwts}`);

    const ms = (ns: number) => Math.round(ns / 1e3) / 1e3;
    const signOnlyRate = jwts / signSeconds;
    return {
      nodes,
      allocs: count,
      tasks_per_alloc: TASKS,
      placement_seconds: Math.round(seconds * 1000) / 1000,
      placements_per_s: Math.round(count / seconds),
      jwts,
      jwts_per_s: Math.round(jwts / seconds),
      sign_only_jwts_per_s: Math.round(signOnlyRate),
      sign_share_pct: Math.round((jwts / signOnlyRate / seconds) * 1000) / 10,
      loop_delay_p50_ms: ms(loop.percentile(50)),
      loop_delay_p99_ms: ms(loop.percentile(99)),
      loop_delay_max_ms: ms(loop.max),
    };
  } finally {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  }
}
