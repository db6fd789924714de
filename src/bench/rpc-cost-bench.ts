import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { RootKeyRow, RootKeyTable } from "../../projections/root-keys.ts";
import { newAllocation } from "../../streams/allocs.ts";
import { chooseSigningKey } from "../identity/alloc-identities.ts";
import type { RunningServer } from "../server.ts";
import { writeEvents } from "../store/writer.ts";
import { startBenchServer } from "./bench-server.ts";
import { startCpuProfile } from "./cpu-profile.ts";
import { load, loadFromProcess } from "./http-load.ts";
import type { LoadCall } from "./http-load-worker.ts";
import { mainThreadCpuUs } from "./main-thread-cpu.ts";
import { minimalAllocJob } from "./minimal-alloc-job.ts";
import { type CallingNode, heartbeatCall, registerCall, simRegisterCall } from "./node-rpc-calls.ts";
import { percentile } from "./percentile.ts";

export interface RpcCostOptions {
  readonly nodes?: number;
  /** Calls of each method in the measured run. */
  readonly calls?: number;
  readonly concurrency?: number;
  /**
   * The server with ACLs enabled and bootstrapped: every call is then
   * authenticated by the ACL authenticator before its route checks the
   * node (nodes call with their secrets, as Nomad's clients do).
   */
  readonly acl?: boolean;
  /**
   * Allocations per node (default 1): Node.GetClientAllocs then answers a
   * map of this many, and Alloc.GetAllocs pulls them all, as a node's
   * client does after a placement burst (50,000 on 5,000 nodes: 10).
   */
  readonly allocsPerNode?: number;
  /**
   * Allocations placed with the server's active root key, as the plan
   * applier places them: Alloc.GetAllocs answers each with its tasks'
   * SignedIdentities (one task each).
   */
  readonly signed?: boolean;
  /**
   * A directory to write a CPU profile of the server's main thread for each
   * method's measured run (`<method>.cpuprofile`). The sampler costs the
   * thread some time of its own: the figures of a profiled run are not
   * comparable with those of a plain one.
   */
  readonly cpuProfileDir?: string;
  /** Only these of RPC_COST_METHODS (all by default). */
  readonly methods?: readonly string[];
  readonly progress?: (what: string) => void;
}

/** One client RPC method, called back to back by keep-alive clients in another process. */
export interface RpcMethodCost {
  readonly calls: number;
  readonly concurrency: number;
  readonly calls_per_s: number;
  /** The server process's CPU time (user + system, every thread) per call. */
  readonly server_cpu_us_per_call: number;
  /** The main thread's part of it (Linux: /proc/self/task/<pid>/stat, 10 ms ticks; -1 elsewhere). */
  readonly main_thread_cpu_us_per_call: number;
  readonly p50_ms: number;
  readonly p99_ms: number;
  /** Messages posted to the scheduler threads with records, per call (-1 without threads). */
  readonly thread_posts_per_call: number;
}

/** The methods measured, in the order they run. */
export const RPC_COST_METHODS: readonly string[] = [
  "Node.UpdateStatus",
  "Node.UpdateAlloc",
  "Node.GetClientAllocs",
  "Alloc.GetAllocs",
  "Node.Register",
];

/** `nodes`, `acl` (1: ACLs on), and each method's figures as `<method>.<figure>` (flat, as the bench table prints one level). */
export type RpcCostFigures = Readonly<Record<string, number>>;

interface BenchNode extends CallingNode {
  allocIDs: string[];
}

/**
 * What one client RPC costs the server: `nodes` registered nodes, ready, one
 * allocation each; then each method in turn (Node.UpdateStatus heartbeats
 * that change nothing, Node.UpdateAlloc reporting the allocation running,
 * Node.GetClientAllocs and Alloc.GetAllocs answered at once) called `calls`
 * times round-robin over the nodes by `concurrency` keep-alive clients in a
 * child process, after a warm-up pass; last, Node.Register of `calls / 4`
 * nodes the server has not seen, with the simulator's body (a registration
 * storm's call), after a warm-up of other fresh nodes. The server runs in
 * this process and does nothing else meanwhile, so its CPU time over the
 * run is the calls'.
 * With `acl`, the same on a server with ACLs on.
 */
export async function benchRpcCost(options: RpcCostOptions = {}): Promise<RpcCostFigures> {
  const count = options.nodes ?? 1_000;
  const total = options.calls ?? 20_000;
  const concurrency = options.concurrency ?? 16;
  const progress = options.progress ?? (() => undefined);
  const acl = options.acl === true;
  const dir = await mkdtemp(join(tmpdir(), "chronomad-bench-rpc-cost-"));
  const server = await startBenchServer(["--data-dir", dir, ...(acl ? ["--acl-enabled"] : [])]);
  const url = `http://${server.address}`;
  try {
    if (acl) await bootstrapAcl(url);
    const nodes: BenchNode[] = Array.from({ length: count }, () => ({
      id: randomUUID(),
      secret: randomUUID(),
      allocIDs: [],
    }));
    progress(`rpc cost: registering ${count} nodes`);
    await load(url, nodes.map(registerCall), { concurrency: 32 });
    await load(url, nodes.map(heartbeatCall), { concurrency: 32 });
    const signingKey = options.signed ? await activeKeyOf(server) : undefined;
    await placeAllocs(server, nodes, options.allocsPerNode ?? 1, signingKey);

    const figures: Record<string, number> = {
      nodes: count,
      acl: acl ? 1 : 0,
      allocs_per_node: options.allocsPerNode ?? 1,
      signed: signingKey === undefined ? 0 : 1,
    };
    // Node.UpdateAlloc answers after its 50 ms coalescing window: 16 clients
    // would take a minute, longer than a node's heartbeat TTL, so it gets
    // more clients in flight (each a different node's) and fewer calls.
    const updates = { calls: Math.ceil(total / 4), concurrency: Math.min(count, concurrency * 12) };
    const roundRobin =
      (call: (n: BenchNode) => LoadCall) =>
      (n: number): LoadCall[] =>
        Array.from({ length: n }, (_, i) => call(nodes[i % count]!));
    // Registrations of nodes the server has not seen, as in a registration
    // storm: the warm-up's nodes are others than the measured run's. Last,
    // so the other methods run on a server of `count` nodes.
    let registered = count;
    const freshNodes = (n: number): LoadCall[] =>
      Array.from({ length: n }, () =>
        simRegisterCall({ id: randomUUID(), secret: randomUUID() }, registered++),
      );
    const plan: [string, (n: number) => LoadCall[], { calls: number; concurrency: number }][] = [
      ["Node.UpdateStatus", roundRobin(heartbeatCall), { calls: total, concurrency }],
      ["Node.UpdateAlloc", roundRobin(updateAllocCall), updates],
      ["Node.GetClientAllocs", roundRobin(clientAllocsCall), { calls: total, concurrency }],
      ["Alloc.GetAllocs", roundRobin(getAllocsCall), { calls: total, concurrency }],
      ["Node.Register", freshNodes, { calls: Math.ceil(total / 4), concurrency }],
    ];
    for (const [method, makeCalls, size] of plan) {
      if (options.methods && !options.methods.includes(method)) continue;
      const warmUp = makeCalls(Math.min(size.calls, 2_000));
      const calls = makeCalls(size.calls);
      progress(`rpc cost: ${method}, ${size.calls} calls by ${size.concurrency} clients`);
      // Nodes stay ready (a down node's updates are refused) however long the previous method took.
      await load(url, nodes.map(heartbeatCall), { concurrency: 32 });
      await loadFromProcess(url, warmUp, size);
      const profiling = options.cpuProfileDir
        ? await startCpuProfile(join(options.cpuProfileDir, `${method}.cpuprofile`))
        : undefined;
      const posts0 = server.schedulerThreads?.forwarding.messages;
      const main0 = mainThreadCpuUs();
      const cpu0 = process.cpuUsage();
      const run = await loadFromProcess(url, calls, size);
      const cpu = process.cpuUsage(cpu0);
      const main = mainThreadCpuUs() - main0;
      await profiling?.();
      const latencies = [...run.latencies];
      const cost: RpcMethodCost = {
        calls: size.calls,
        concurrency: size.concurrency,
        calls_per_s: Math.round(size.calls / run.seconds),
        server_cpu_us_per_call: round1((cpu.user + cpu.system) / size.calls),
        main_thread_cpu_us_per_call: Number.isNaN(main) ? -1 : round1(main / size.calls),
        p50_ms: percentile(latencies, 0.5),
        p99_ms: percentile(latencies, 0.99),
        thread_posts_per_call:
          posts0 === undefined
            ? -1
            : round2((server.schedulerThreads!.forwarding.messages - posts0) / size.calls),
      };
      for (const [figure, value] of Object.entries(cost)) figures[`${method}.${figure}`] = value;
    }
    return figures;
  } finally {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  }
}

const round1 = (n: number) => Math.round(n * 10) / 10;
const round2 = (n: number) => Math.round(n * 100) / 100;

/** ACLs bootstrapped, as a cluster running with them is: its management token is not needed further. */
async function bootstrapAcl(url: string): Promise<void> {
  const res = await fetch(`${url}/v1/acl/bootstrap`, { method: "POST" });
  if (!res.ok) throw new Error(`ACL bootstrap: ${res.status} ${await res.text()}`);
}

/** The active root key, once the server has made it and holds its material. */
async function activeKeyOf(server: RunningServer): Promise<string> {
  const rootKeys = server.store.table<RootKeyRow>("root_keys") as RootKeyTable;
  for (let waited = 0; waited < 10_000; waited += 50) {
    const choice = chooseSigningKey(server.keyring, rootKeys);
    if ("keyId" in choice) return choice.keyId;
    await sleep(50);
  }
  throw new Error("the benchmark server made no root key to sign workload identities with");
}

/**
 * `perNode` allocations per node, written as the plan applier writes
 * placements (with `signingKey`, stamped with it as the plan applier
 * stamps them), in records of at most 5,000.
 */
async function placeAllocs(
  server: RunningServer,
  nodes: BenchNode[],
  perNode: number,
  signingKey: string | undefined,
): Promise<void> {
  const now = Date.now();
  const job = minimalAllocJob("rpc-cost", [
    { Name: "web", Count: nodes.length * perNode, Tasks: [{ Name: "server" }] },
  ]);
  const allocs = [];
  let i = 0;
  for (let k = 0; k < perNode; k++) {
    for (const n of nodes) {
      const id = randomUUID();
      n.allocIDs.push(id);
      allocs.push(
        newAllocation({
          ID: id,
          Namespace: "default",
          JobID: job.ID,
          Name: `rpc-cost.web[${i++}]`,
          TaskGroup: "web",
          NodeID: n.id,
          Job: job,
          CreateTime: now * 1e6,
          ...(signingKey === undefined ? {} : { SigningKeyID: signingKey }),
        }),
      );
    }
  }
  for (let at = 0; at < allocs.length; at += 5_000) {
    const { outcomes } = await writeEvents(server.store, now, { kind: "server", id: "bench" }, [
      {
        type: "AllocsPlanApplied",
        v: 1,
        data: { EvalID: "", Placed: allocs.slice(at, at + 5_000), Updated: [], Stopped: [], Preempted: [] },
      },
    ]);
    if (outcomes[0]?.status !== "applied") throw new Error("placing the benchmark allocations failed");
  }
}

const clientAllocsCall = (n: BenchNode): LoadCall => ({
  path: "/v1/rpc/Node.GetClientAllocs",
  token: n.secret,
  body: JSON.stringify({ NodeID: n.id, MinQueryIndex: 0 }),
});

const getAllocsCall = (n: BenchNode): LoadCall => ({
  path: "/v1/rpc/Alloc.GetAllocs",
  token: n.secret,
  body: JSON.stringify({ AllocIDs: n.allocIDs, MinQueryIndex: 0 }),
});

/** The allocation reported running, as a client reports it after each task event. */
const updateAllocCall = (n: BenchNode): LoadCall => ({
  path: "/v1/rpc/Node.UpdateAlloc",
  token: n.secret,
  body: JSON.stringify({
    Alloc: [{ ID: n.allocIDs[0], NodeID: n.id, ClientStatus: "running", TaskStates: {} }],
  }),
});
