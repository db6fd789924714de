import { fork } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { RunningServer } from "../server.ts";
import { startBenchServer } from "./bench-server.ts";
import { mainThreadCpuUs, mainThreadRunqueueWaitUs, profilerClockUs } from "./main-thread-cpu.ts";
import { percentile } from "./percentile.ts";
import { type RegistrationResult, type RegistrationRun, wallClockMs } from "./registration-client.ts";

export interface RegistrationBenchOptions {
  /** Any Nomad-API server (chronomad, Nomad itself); none starts an in-process chronomad. */
  readonly url?: string;
  readonly jobs?: number;
  readonly concurrency?: number;
  /**
   * Jobs registered (and, unless the broker is paused, evaluated) before the
   * measured run, which is then a warmed-up server's (JIT, caches, tables);
   * default 0: the measured run starts on a fresh server.
   */
  readonly warmup?: number;
  /** The in-process chronomad's --fsync; ignored with `url`. */
  readonly fsync?: "always" | "never";
  /**
   * Registers with the eval broker paused (PauseEvalBroker in the scheduler
   * configuration): the write path alone. The evaluations are then not waited for.
   */
  readonly pauseBroker?: boolean;
  /** How long to wait for the evaluations before giving up. */
  readonly evalTimeoutMs?: number;
  readonly progress?: (what: string) => void;
}

export interface RegistrationFigures {
  readonly jobs: number;
  readonly warmup_jobs: number;
  readonly concurrency: number;
  /** From the first request sent to the last answer received. */
  readonly register_seconds: number;
  readonly registrations_per_s: number;
  readonly register_p50_ms: number;
  readonly register_p99_ms: number;
  /** From the first registration until no evaluation of these jobs is pending (0 with pauseBroker). */
  readonly evals_processed_seconds: number;
  /** The part of it after the last registration was answered. */
  readonly evals_after_last_registration_seconds: number;
  /** The client process's CPU time over the registrations, in % of one core (it shares the machine). */
  readonly client_cpu_percent: number;
  /** The same CPU time per registration (µs): on a shared 2-core machine, CPU the server does not get. */
  readonly client_cpu_us_per_registration: number;
  /** Only for the in-process chronomad: its CPU time over the registrations, in % of one core. */
  readonly server_cpu_percent?: number;
  /**
   * The same CPU time per registration (µs), scheduling of the evaluations
   * meanwhile included: what a busy machine cannot take away, unlike the rate.
   */
  readonly server_cpu_us_per_registration?: number;
  /**
   * The in-process server's main thread alone, per registration (µs; Linux
   * only, 10 ms ticks): the thread the goal is bound by.
   */
  readonly server_main_thread_cpu_us_per_registration?: number;
  /**
   * The time its main thread was runnable but waited for a core, per
   * registration (µs; Linux schedstat): latency the busy machine added.
   */
  readonly server_main_thread_runqueue_wait_us_per_registration?: number;
}

const CLIENT = join(import.meta.dirname, "registration-client.ts");
const ROOT = join(import.meta.dirname, "../..");
const POLL_MS = 20;

/**
 * The side-by-side registration benchmark: `jobs` small batch jobs
 * registered with `PUT /v1/jobs` by `concurrency` keep-alive clients, against
 * any Nomad-API server, and the time until every evaluation they made is
 * processed. It uses only what Nomad 1.6.1 serves too (job register,
 * evaluation list with a filter, the scheduler configuration), so the same
 * run measures chronomad and Nomad. With no nodes, each evaluation ends
 * complete with a blocked follow-up; "processed" is "no longer pending".
 */
export async function benchRegistration(
  options: RegistrationBenchOptions = {},
): Promise<RegistrationFigures> {
  const jobs = options.jobs ?? 2_000;
  const concurrency = options.concurrency ?? 16;
  const progress = options.progress ?? (() => undefined);
  let server: RunningServer | undefined;
  let dir: string | undefined;
  let url = options.url?.replace(/\/+$/, "");
  if (!url) {
    dir = await mkdtemp(join(tmpdir(), "chronomad-bench-registration-"));
    server = await startBenchServer(["--data-dir", dir, "--fsync", options.fsync ?? "always"]);
    // A fresh server is measured once it has started: its scheduler threads
    // load their modules and catch up in the background, seconds on a busy
    // machine, and until then the first evaluations wait or run in process.
    await server.schedulerThreads?.whenReady();
    // Likewise the routes' schemas, compiled in the turns after the start.
    await server.http.routeSchemasCompiled;
    url = `http://${server.address}`;
  }
  try {
    // A prefix of its own, so a server that has seen other runs is measured on this one's jobs only.
    const prefix = `regbench-${randomBytes(4).toString("hex")}-`;
    const bodies = batchJobBodies(prefix, jobs);
    const restore = options.pauseBroker ? await pauseEvalBroker(url) : undefined;
    try {
      const warmup = options.warmup ?? 0;
      if (warmup > 0) {
        progress(`warming up: ${warmup} jobs`);
        const warm = await inClientProcess({
          url,
          bodies: batchJobBodies(`${prefix}warmup-`, warmup),
          concurrency,
        });
        if (warm.errors > 0)
          throw new Error(`${warm.errors} warm-up registrations failed, first: ${warm.firstError}`);
        if (!options.pauseBroker)
          await evalsProcessed(url, `${prefix}warmup-`, options.evalTimeoutMs ?? 600_000);
      }
      progress(`registering ${jobs} batch jobs with ${concurrency} clients against ${url}`);
      const cpuBefore = process.cpuUsage();
      const mainBefore = mainThreadCpuUs();
      const waitBefore = mainThreadRunqueueWaitUs();
      const windowFrom = profilerClockUs();
      const threadsBefore = process.env.REGISTRATION_BENCH_THREADS ? threadCpuUs() : undefined;
      const run = await inClientProcess({ url, bodies, concurrency });
      const cpu = process.cpuUsage(cpuBefore);
      const mainCpuUs = mainThreadCpuUs() - mainBefore;
      const mainWaitUs = mainThreadRunqueueWaitUs() - waitBefore;
      // For profiles (--cpu-prof): the registrations' window on the profiler's clock, in µs.
      if (process.env.REGISTRATION_BENCH_WINDOW)
        process.stderr.write(`window ${windowFrom} ${profilerClockUs()}\n`);
      if (threadsBefore) {
        for (const [tid, us] of threadCpuUs()) {
          const d = us - (threadsBefore.get(tid) ?? 0);
          if (d > 0) process.stderr.write(`thread ${tid} ${Math.round(d / jobs)} us/registration\n`);
        }
      }
      if (run.errors > 0) throw new Error(`${run.errors} registrations failed, first: ${run.firstError}`);
      const registerSeconds = (run.endedAt - run.startedAt) / 1000;
      let processedAt = run.endedAt;
      if (!options.pauseBroker) {
        progress("waiting until no evaluation of these jobs is pending");
        processedAt = await evalsProcessed(url, measuredJobs(prefix), options.evalTimeoutMs ?? 600_000);
        await checkEvals(url, measuredJobs(prefix), jobs);
      }
      const wallMs = run.endedAt - run.startedAt;
      const serverCpuMs = (cpu.user + cpu.system) / 1000;
      return {
        jobs,
        warmup_jobs: warmup,
        concurrency,
        register_seconds: round(registerSeconds),
        registrations_per_s: Math.round(jobs / registerSeconds),
        register_p50_ms: percentile(run.latencies, 0.5),
        register_p99_ms: percentile(run.latencies, 0.99),
        evals_processed_seconds: options.pauseBroker ? 0 : round((processedAt - run.startedAt) / 1000),
        evals_after_last_registration_seconds: options.pauseBroker
          ? 0
          : round(Math.max(0, processedAt - run.endedAt) / 1000),
        client_cpu_percent: Math.round((run.cpuMs / wallMs) * 100),
        client_cpu_us_per_registration: Math.round((run.cpuMs * 1000) / jobs),
        ...(server
          ? {
              server_cpu_percent: Math.round((serverCpuMs / wallMs) * 100),
              server_cpu_us_per_registration: Math.round((serverCpuMs * 1000) / jobs),
              ...(Number.isNaN(mainCpuUs)
                ? {}
                : { server_main_thread_cpu_us_per_registration: Math.round(mainCpuUs / jobs) }),
              ...(Number.isNaN(mainWaitUs)
                ? {}
                : { server_main_thread_runqueue_wait_us_per_registration: Math.round(mainWaitUs / jobs) }),
            }
          : {}),
      };
    } finally {
      await restore?.();
    }
  } finally {
    await server?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  }
}

function batchJobBodies(prefix: string, count: number): string[] {
  return Array.from({ length: count }, (_, i) =>
    JSON.stringify(batchJob(`${prefix}${String(i).padStart(6, "0")}`)),
  );
}

/** A pattern for the measured run's job IDs (`^prefix` followed by digits only: not the warm-up's). */
function measuredJobs(prefix: string): string {
  return `${prefix}[0-9]`;
}

/** A batch job Nomad 1.6.1 accepts as it is: one raw_exec task, default resources. */
export function batchJob(id: string): unknown {
  return {
    Job: {
      ID: id,
      Name: id,
      Type: "batch",
      Datacenters: ["dc1"],
      TaskGroups: [
        {
          Name: "g",
          Count: 1,
          Tasks: [
            {
              Name: "t",
              Driver: "raw_exec",
              Config: { command: "/bin/true" },
              Resources: { CPU: 100, MemoryMB: 64 },
            },
          ],
        },
      ],
    },
  };
}

function inClientProcess(run: RegistrationRun): Promise<RegistrationResult> {
  const child = fork(CLIENT, ["--registration-client"], {
    cwd: ROOT,
    execArgv: ["--import", "tsx"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  return new Promise<RegistrationResult>((resolve, reject) => {
    let settled = false;
    child.on("message", (m: { result?: RegistrationResult; error?: string }) => {
      settled = true;
      if (m.error !== undefined) reject(new Error(`registration client: ${m.error}`));
      else resolve(m.result!);
    });
    child.on("exit", (code) => {
      if (!settled) reject(new Error(`registration client exited with ${code}`));
    });
    child.send(run);
  });
}

/** The wall-clock time at which no evaluation of the jobs whose IDs match `^pattern` was pending any more. */
async function evalsProcessed(url: string, pattern: string, timeoutMs: number): Promise<number> {
  const filter = `Status == "pending" and JobID matches "^${pattern}"`;
  const query = `/v1/evaluations?per_page=1&filter=${encodeURIComponent(filter)}`;
  const deadline = wallClockMs() + timeoutMs;
  for (;;) {
    const asked = wallClockMs();
    const res = await fetch(`${url}${query}`);
    const text = await res.text();
    // A lagging chronomad sheds list reads with 429: ask again.
    if (res.status !== 429) {
      if (!res.ok) throw new Error(`listing evaluations failed: ${res.status} ${text}`);
      // The answer holds as of when it was asked for, not when it arrived.
      if ((JSON.parse(text) as unknown[]).length === 0) return asked;
    }
    if (asked > deadline) throw new Error(`evaluations still pending after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

/**
 * Every registration made its evaluation, and none is left pending. One
 * unpaginated list: Nomad 1.6.1 compares its evaluation page tokens
 * ("CreateIndex.ID") as text, so its later pages repeat or skip rows.
 */
async function checkEvals(url: string, pattern: string, jobs: number): Promise<void> {
  const filter = `TriggeredBy == "job-register" and JobID matches "^${pattern}"`;
  for (;;) {
    const res = await fetch(`${url}/v1/evaluations?filter=${encodeURIComponent(filter)}`);
    const text = await res.text();
    if (res.status === 429) {
      await new Promise((r) => setTimeout(r, 200));
      continue;
    }
    if (!res.ok) throw new Error(`listing evaluations failed: ${res.status} ${text}`);
    const evals = JSON.parse(text) as { Status: string }[];
    if (evals.some((e) => e.Status === "pending"))
      throw new Error("an evaluation is pending again after none was");
    if (evals.length !== jobs) throw new Error(`${jobs} registrations made ${evals.length} evaluations`);
    return;
  }
}

/** Pauses the eval broker; resolves with what puts the configuration back. */
async function pauseEvalBroker(url: string): Promise<() => Promise<void>> {
  const path = `${url}/v1/operator/scheduler/configuration`;
  const res = await fetch(path);
  if (!res.ok)
    throw new Error(`reading the scheduler configuration failed: ${res.status} ${await res.text()}`);
  const { SchedulerConfig } = (await res.json()) as { SchedulerConfig: Record<string, unknown> };
  const put = async (config: Record<string, unknown>) => {
    const r = await fetch(path, { method: "PUT", body: JSON.stringify(config) });
    if (!r.ok) throw new Error(`writing the scheduler configuration failed: ${r.status} ${await r.text()}`);
  };
  const { CreateIndex: _c, ModifyIndex: _m, ...writable } = SchedulerConfig;
  await put({ ...writable, PauseEvalBroker: true });
  return () => put({ ...writable });
}

const round = (n: number) => Math.round(n * 1000) / 1000;

/** Each thread's CPU time (µs) from Linux's per-thread stat, by thread id: where a run's CPU went. */
function threadCpuUs(): Map<number, number> {
  const out = new Map<number, number>();
  for (const tid of readdirSync("/proc/self/task")) {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    out.set(Number(tid), (Number(fields[11]) + Number(fields[12])) * 10_000);
  }
  return out;
}
