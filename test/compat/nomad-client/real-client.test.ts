import { existsSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FAST_HEARTBEATS } from "../../nodesim/fixtures.ts";
import { startTestServer, type TestServer } from "../../server-harness.ts";
import {
  type ClientAgent,
  hasNomad,
  NOMAD_BIN,
  startClientAgent,
  stopAllAgents,
  waitFor,
} from "./client-agent.ts";
import {
  type AllocView,
  Api,
  alive,
  batchJob,
  describeAllocs,
  type NodeView,
  pidFiles,
  pidWriter,
  serviceJob,
} from "./fixtures.ts";

if (!hasNomad)
  console.warn(`real Nomad client tests skipped: no nomad binary at ${NOMAD_BIN} (set NOMAD_BIN)`);

describe.skipIf(!hasNomad)("a real Nomad 1.6.1 client agent against chronomad", () => {
  let s: TestServer;
  let api: Api;
  let agent: ClientAgent;
  let work: string;

  beforeAll(async () => {
    // A wider grace than FAST_HEARTBEATS': a real agent on a busy 2-core machine can beat late.
    s = await startTestServer({ args: [...FAST_HEARTBEATS, "--heartbeat-grace", "5s"] });
    api = new Api(s.url);
    work = await mkdtemp(join(tmpdir(), "nomad-client-work-"));
    agent = await startClientAgent({
      servers: [s.rpcAddress],
      name: "real-client-1",
      serverUrl: s.url,
      nodeClass: "compat",
      meta: { suite: "real-client" },
    });
  });

  afterAll(async () => {
    await stopAllAgents();
    await s?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  /** The node once chronomad has it ready (each test waits, so a failure names its own step). */
  const readyNode = () =>
    waitFor(
      async () => {
        const id = await agent.nodeID();
        const node = id ? await api.node(id) : undefined;
        return node?.Status === "ready" ? node : undefined;
      },
      {
        what: "the client's node to be ready in chronomad",
        timeoutMs: 90_000,
        everyMs: 100,
        detail: async () => `chronomad's nodes: ${JSON.stringify(await api.get("/v1/nodes").catch(String))}`,
      },
    );

  it("registers the node, which becomes ready with the client's drivers and HTTP address", async () => {
    const node: NodeView = await readyNode();
    console.log(
      `real client: nomad agent start -> node ready in chronomad: ${Date.now() - agent.startedAt} ms`,
    );
    expect(node.Name).toBe("real-client-1");
    expect(node.HTTPAddr).toBe(agent.httpAddr);
    expect(node.Drivers.raw_exec).toMatchObject({ Detected: true, Healthy: true });
    expect(node.Attributes["nomad.version"]).toBe("1.6.1");
    expect(node.NodeClass).toBe("compat");
    expect(node.Meta?.suite).toBe("real-client");
    expect(node.ID).toBe(readFileSync(join(agent.dataDir, "client", "client-id"), "utf8").trim());
  }, 120_000);

  it("runs a raw_exec batch job to completion", async () => {
    await readyNode();
    const out = join(work, "batch.out");
    const registeredAt = Date.now();
    await api.register(batchJob("write-file", { script: `echo "hello from $NOMAD_ALLOC_ID" > ${out}` }));
    const content = await waitFor(() => existsSync(out) && readFileSync(out, "utf8"), {
      what: `the batch task to write ${out}`,
      timeoutMs: 90_000,
      everyMs: 100,
      detail: async () => describeAllocs(await api.allocs("write-file")),
    });
    console.log(`real client: batch job register -> file written: ${Date.now() - registeredAt} ms`);
    const done = await waitFor(
      async () => {
        const [a] = await api.allocs("write-file");
        return a && a.ClientStatus === "complete" ? await api.alloc(a.ID) : undefined;
      },
      {
        what: "the batch allocation to be complete in chronomad",
        timeoutMs: 60_000,
        detail: async () => describeAllocs(await api.allocs("write-file")),
      },
    );
    expect(content.trim()).toBe(`hello from ${done.ID}`);
    expect(done.DesiredStatus).toBe("run");
    expect(done.TaskStates?.main).toMatchObject({ State: "dead", Failed: false });
    const events = (done.TaskStates?.main?.Events ?? []).map((e) => e.Type);
    expect(events).toContain("Started");
    expect(events).toContain("Terminated");
    const summary = await api.get<{ Summary: Record<string, Record<string, number>> }>(
      "/v1/job/write-file/summary",
    );
    expect(summary.Summary.g).toMatchObject({ Complete: 1, Running: 0, Failed: 0 });
  }, 180_000);

  it("runs a count=2 service, replaces both processes on a destructive update, and kills them on stop", async () => {
    await readyNode();
    const dir = join(work, "pids");
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir);
    const job = (version: string) =>
      serviceJob(
        "sleepers",
        2,
        { script: pidWriter(dir), env: { VERSION: version } },
        // A real deployment: both at once, healthy on task state, as the client reports it.
        {
          update: {
            MaxParallel: 2,
            HealthCheck: "task_states",
            MinHealthyTime: 1_000_000_000,
            HealthyDeadline: 60_000_000_000,
            ProgressDeadline: 120_000_000_000,
          },
        },
      );
    const live = (allocs: readonly AllocView[]) =>
      allocs.filter((a) => a.DesiredStatus === "run" && a.ClientStatus === "running");
    const detail = async () =>
      `${describeAllocs(await api.allocs("sleepers"))}\npid files: ${JSON.stringify([...pidFiles(dir)])}`;

    const registeredAt = Date.now();
    await api.register(job("1"));
    const first = await waitFor(
      () => {
        const pids = pidFiles(dir);
        return pids.size === 2 && [...pids.values()].every(alive) ? pids : undefined;
      },
      { what: "two sleepers running", timeoutMs: 90_000, everyMs: 100, detail },
    );
    console.log(
      `real client: service job register -> both processes running: ${Date.now() - registeredAt} ms`,
    );
    const v1 = await waitFor(
      async () =>
        live(await api.allocs("sleepers")).length === 2 ? await api.allocs("sleepers") : undefined,
      {
        what: "chronomad to show both allocations running",
        timeoutMs: 60_000,
        detail,
      },
    );
    expect(new Set(v1.map((a) => a.ID))).toEqual(new Set(first.keys()));
    for (const a of v1) expect(a.TaskStates?.main?.State).toBe("running");

    await api.update(job("2"));
    const second = await waitFor(
      () => {
        const pids = pidFiles(dir);
        const fresh = [...pids].filter(([id]) => !first.has(id));
        return fresh.length === 2 && fresh.every(([, pid]) => alive(pid)) ? new Map(fresh) : undefined;
      },
      { what: "two new sleepers after the update", timeoutMs: 90_000, everyMs: 100, detail },
    );
    await waitFor(() => [...first.values()].every((pid) => !alive(pid)), {
      what: "the old sleepers to be gone",
      timeoutMs: 60_000,
      detail,
    });
    const v2 = await waitFor(
      async () => {
        const all = await api.allocs("sleepers");
        const running = live(all);
        const old = all.filter((a) => first.has(a.ID));
        return running.length === 2 &&
          old.every((a) => a.DesiredStatus === "stop" && a.ClientStatus === "complete")
          ? all
          : undefined;
      },
      {
        what: "chronomad to show the new allocations running and the old ones stopped",
        timeoutMs: 60_000,
        detail,
      },
    );
    expect(new Set(live(v2).map((a) => a.ID))).toEqual(new Set(second.keys()));
    for (const a of live(v2)) expect(a.JobVersion).toBe(1);

    // The client judges the new allocations healthy (task states, 1 s) and says so through Node.UpdateAlloc.
    const deployment = await waitFor(
      async () => {
        const d = await api.find<{ ID: string; Status: string; JobVersion: number }>(
          "/v1/job/sleepers/deployment",
        );
        return d?.JobVersion === 1 && d.Status === "successful" ? d : undefined;
      },
      {
        what: "the update's deployment to succeed on the client's health reports",
        timeoutMs: 90_000,
        detail: async () =>
          `deployment: ${JSON.stringify(await api.find("/v1/job/sleepers/deployment"))}\n${await detail()}`,
      },
    );
    const healthy = await api.get<{ DeploymentStatus?: { Healthy?: boolean } | null }[]>(
      `/v1/deployment/allocations/${deployment.ID}`,
    );
    expect(healthy.map((a) => a.DeploymentStatus?.Healthy)).toEqual([true, true]);

    await api.stopJob("sleepers");
    await waitFor(() => [...second.values()].every((pid) => !alive(pid)), {
      what: "the sleepers to be killed after the job was stopped",
      timeoutMs: 60_000,
      detail,
    });
    await waitFor(
      async () =>
        (await api.allocs("sleepers")).every(
          (a) => a.DesiredStatus === "stop" && a.ClientStatus === "complete",
        ),
      { what: "every allocation stopped and complete in chronomad", timeoutMs: 60_000, detail },
    );
  }, 300_000);

  it("keeps its node and running task across an agent restart on the same data dir", async () => {
    const node = await readyNode();
    const dir = join(work, "restart-pids");
    await mkdir(dir);
    const detail = async () =>
      `${describeAllocs(await api.allocs("survivor"))}\npid files: ${JSON.stringify([...pidFiles(dir)])}`;
    await api.register(serviceJob("survivor", 1, { script: pidWriter(dir) }));
    const [allocID, pid] = await waitFor(
      async () => {
        const [a] = await api.allocs("survivor");
        const p = a && pidFiles(dir).get(a.ID);
        return a?.ClientStatus === "running" && p && alive(p) ? ([a.ID, p] as const) : undefined;
      },
      { what: "the service running", timeoutMs: 90_000, detail },
    );
    const before = await api.alloc(allocID);

    const mark = agent.logText().length;
    await agent.restart();
    const since = () => agent.logText().slice(mark);
    // The restarted agent re-registers and fetches its allocations again; it must not restart the task.
    await waitFor(() => since().includes("node registration complete"), {
      what: "the restarted agent to register again",
      timeoutMs: 90_000,
      detail,
    });
    const again = await readyNode();
    expect(again.ID).toBe(node.ID);
    await waitFor(() => since().includes("allocation updates applied"), {
      what: "the restarted agent to apply its allocations",
      timeoutMs: 60_000,
      detail,
    });
    expect(alive(pid)).toBe(true);
    const allocs = await api.allocs("survivor");
    expect(allocs.map((a) => [a.ID, a.ClientStatus, a.DesiredStatus])).toEqual([[allocID, "running", "run"]]);
    expect(pidFiles(dir).size).toBe(1);
    const after = await api.alloc(allocID);
    expect(after.TaskStates?.main?.State).toBe("running");
    console.log(
      `real client: restart kept pid ${pid}; allocation ModifyIndex ${before.ModifyIndex} -> ${after.ModifyIndex}`,
    );

    await api.stopJob("survivor");
    await waitFor(() => !alive(pid), { what: "the service stopped", timeoutMs: 60_000, detail });
  }, 240_000);

  it("called only RPC methods chronomad serves", async () => {
    const text = await (await s.call("/v1/metrics?format=prometheus")).text();
    const series = (name: string) =>
      text
        .split("\n")
        .filter((l) => l.startsWith(`${name}{`))
        .map((l) => l.slice(name.length));
    console.log(
      `real client: RPC calls by method over this file's tests:\n  ${series("chronomad_rpc_calls").join("\n  ")}`,
    );
    expect(series("chronomad_rpc_calls").length).toBeGreaterThan(0);
    expect(series("chronomad_rpc_unknown_method")).toEqual([]);
    expect(agent.logText()).not.toMatch(/rpc: can't find (service|method)/);
  });
});
