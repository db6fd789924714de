import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import type { ACLPolicyRow, ACLRoleRow, ACLTokenRow } from "../../projections/acl.ts";
import type { NodeRow, NodeSecretRow } from "../../projections/nodes.ts";
import { AclAuthenticator } from "../auth/acl-authenticator.ts";
import { loadConfig } from "../config.ts";
import { type RunningServer, startServer } from "../server.ts";
import { systemClock } from "../util/clock.ts";
import { load } from "./http-load.ts";
import { percentile } from "./percentile.ts";

export interface AclFigures {
  /** One cached token lookup (hash, table, constant-time compare, ACL from the cache) plus one namespace check. */
  readonly authorize_p50_us: number;
  readonly authorize_p99_us: number;
  /** GET /v1/jobs (100 jobs) over keep-alive HTTP, 16 in flight. */
  readonly jobs_list_off_per_s: number;
  readonly jobs_list_on_per_s: number;
  /** (off − on) / off, percent: the throughput ACLs cost. */
  readonly throughput_cost_pct: number;
  readonly jobs_list_off_p50_ms: number;
  readonly jobs_list_on_p50_ms: number;
}

const JOBS = 100;
const POLICIES = 5;

async function start(dir: string, acl: boolean): Promise<RunningServer> {
  const args = [
    "--http-addr",
    "127.0.0.1:0",
    "--data-dir",
    dir,
    "--log",
    "memory:",
    "--shed-reads-after-lag",
    "0",
  ];
  if (acl) args.push("--acl-enabled");
  return startServer(await loadConfig(args, {}), { logger: pino({ level: "silent" }) });
}

async function call(server: RunningServer, path: string, method: string, token: string, body?: unknown) {
  const res = await fetch(`http://${server.address}${path}`, {
    method,
    headers: token ? { "X-Nomad-Token": token } : {},
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return res;
}

/** Bootstraps, writes policies and a client token holding all of them, registers the jobs; answers the token's secret. */
async function populate(server: RunningServer, acl: boolean): Promise<string> {
  let root = "";
  let client = "";
  if (acl) {
    root = ((await (await call(server, "/v1/acl/bootstrap", "POST", "")).json()) as { SecretID: string })
      .SecretID;
    const names: string[] = [];
    for (let i = 0; i < POLICIES; i++) {
      const name = `bench-${i}`;
      names.push(name);
      const rules = `namespace "team-${i}-*" { policy = "write" }\nnamespace "default" { policy = "read" }\nnode { policy = "read" }`;
      await call(server, `/v1/acl/policy/${name}`, "PUT", root, { Name: name, Rules: rules });
    }
    client = (
      (await (
        await call(server, "/v1/acl/token", "PUT", root, { Type: "client", Policies: names })
      ).json()) as {
        SecretID: string;
      }
    ).SecretID;
  }
  for (let i = 0; i < JOBS; i++) {
    const job = {
      ID: `bench-${i}`,
      Name: `bench-${i}`,
      Type: "batch",
      Datacenters: ["dc1"],
      TaskGroups: [{ Name: "g", Tasks: [{ Name: "t", Driver: "exec", Config: { command: "true" } }] }],
    };
    await call(server, "/v1/jobs", "PUT", root, { Job: job });
  }
  return client;
}

/** The authorization step alone, as each request runs it, timed one call at a time. */
function timeAuthorization(server: RunningServer, secret: string): { p50: number; p99: number } {
  const table = <R extends { CreateIndex: number; ModifyIndex: number }>(name: string) =>
    server.store.table<R>(name);
  const authenticator = new AclAuthenticator(
    {
      aclTokens: table<ACLTokenRow>("acl_tokens"),
      aclPolicies: table<ACLPolicyRow>("acl_policies"),
      aclRoles: table<ACLRoleRow>("acl_roles"),
      nodes: table<NodeRow>("nodes"),
      nodeSecrets: table<NodeSecretRow>("node_secrets"),
    },
    systemClock,
  );
  const samples: number[] = [];
  let allowed = 0;
  for (let i = 0; i < 200_000; i++) {
    const t0 = performance.now();
    const identity = authenticator.resolve(secret);
    if (identity.allows("default", "list-jobs")) allowed++;
    samples.push(performance.now() - t0);
  }
  if (allowed !== samples.length) throw new Error("the bench token was refused");
  const warm = samples.slice(10_000);
  return { p50: percentile(warm, 0.5) * 1000, p99: percentile(warm, 0.99) * 1000 };
}

/**
 * What ACLs cost a read: the per-request authorization step in isolation,
 * and GET /v1/jobs throughput on a server with ACLs off and one with ACLs on
 * (a client token with five policies), measured in alternation so both see
 * the same machine.
 */
export async function benchAcl(): Promise<AclFigures> {
  const dirs = [
    await mkdtemp(join(tmpdir(), "chronomad-bench-acl-")),
    await mkdtemp(join(tmpdir(), "chronomad-bench-acl-")),
  ];
  const off = await start(dirs[0]!, false);
  const on = await start(dirs[1]!, true);
  try {
    await populate(off, false);
    const token = await populate(on, true);
    const authorize = timeAuthorization(on, token);
    const runs: { off: number[]; on: number[]; offMs: number[]; onMs: number[] } = {
      off: [],
      on: [],
      offMs: [],
      onMs: [],
    };
    for (let round = 0; round < 3; round++) {
      for (const [name, server, secret] of [
        ["off", off, ""],
        ["on", on, token],
      ] as const) {
        const result = await load(
          `http://${server.address}`,
          [{ method: "GET", path: "/v1/jobs", token: secret, body: "" }],
          {
            concurrency: 16,
            durationMs: 3000,
            warmupMs: 500,
          },
        );
        runs[name].push(result.latencies.length / result.seconds);
        runs[name === "off" ? "offMs" : "onMs"].push(percentile([...result.latencies], 0.5));
      }
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const offRate = median(runs.off);
    const onRate = median(runs.on);
    return {
      authorize_p50_us: Math.round(authorize.p50 * 10) / 10,
      authorize_p99_us: Math.round(authorize.p99 * 10) / 10,
      jobs_list_off_per_s: Math.round(offRate),
      jobs_list_on_per_s: Math.round(onRate),
      throughput_cost_pct: Math.round(((offRate - onRate) / offRate) * 1000) / 10,
      jobs_list_off_p50_ms: median(runs.offMs),
      jobs_list_on_p50_ms: median(runs.onMs),
    };
  } finally {
    await on.close();
    await off.close();
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  }
}
