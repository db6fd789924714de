import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../../server-harness.ts";
import { hasNomad, NOMAD_BIN, startClientAgent, stopAllAgents, waitFor } from "./client-agent.ts";
import { type AllocView, Api, alive, describeAllocs, pidFiles, pidWriter, serviceJob } from "./fixtures.ts";

if (!hasNomad)
  console.warn(`real Nomad client reconnect test skipped: no nomad binary at ${NOMAD_BIN} (set NOMAD_BIN)`);

const FIVE_MINUTES_NS = 5 * 60 * 1_000_000_000;

describe.skipIf(!hasNomad)("a real Nomad 1.6.1 client that goes silent and comes back", () => {
  let s: TestServer | undefined;
  let work = "";

  afterAll(async () => {
    await stopAllAgents();
    await s?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it("has its allocation go unknown and replaced, then keeps one of the two on reconnect, with the history to show it", async () => {
    // Short TTLs so a pause outlasts them quickly; a grace wide enough that a
    // busy machine does not make a running agent miss one.
    s = await startTestServer({
      args: ["--min-heartbeat-ttl", "2s", "--max-heartbeats-per-second", "1000", "--heartbeat-grace", "4s"],
    });
    const api = new Api(s.url);
    work = await mkdtemp(join(tmpdir(), "nomad-reconnect-work-"));
    const dir = join(work, "pids");
    await mkdir(dir);
    const allocs = () => api.allocs("tolerant");
    const detail = async () =>
      `${describeAllocs(await allocs())}\npid files: ${JSON.stringify([...pidFiles(dir)])}\nnodes: ${JSON.stringify(
        (await api.get<{ ID: string; Name: string; Status: string }[]>("/v1/nodes")).map(
          (n) => `${n.Name} ${n.ID.slice(0, 8)} ${n.Status}`,
        ),
      )}`;
    const readyNode = (agent: Awaited<ReturnType<typeof startClientAgent>>) =>
      waitFor(
        async () => {
          const id = await agent.nodeID();
          return id && (await api.node(id))?.Status === "ready" ? id : undefined;
        },
        { what: `node ${agent.name} ready`, timeoutMs: 90_000, detail },
      );

    // Client A alone, so the allocation lands there.
    const a = await startClientAgent({ servers: [s.rpcAddress], name: "client-a", serverUrl: s.url });
    const nodeA = await readyNode(a);
    await api.register(
      serviceJob(
        "tolerant",
        1,
        { script: pidWriter(dir) },
        { group: { MaxClientDisconnect: FIVE_MINUTES_NS } },
      ),
    );
    const original = await waitFor(
      async () => {
        const [alloc] = await allocs();
        return alloc?.ClientStatus === "running" && pidFiles(dir).has(alloc.ID) ? alloc : undefined;
      },
      { what: "the allocation running on client A", timeoutMs: 90_000, detail },
    );
    expect(original.NodeID).toBe(nodeA);
    const originalPid = pidFiles(dir).get(original.ID)!;
    expect(alive(originalPid)).toBe(true);

    const b = await startClientAgent({ servers: [s.rpcAddress], name: "client-b", serverUrl: s.url });
    const nodeB = await readyNode(b);

    // Silence A: no heartbeats, while its task runs on.
    const pausedAt = Date.now();
    a.pause();
    await waitFor(async () => (await api.node(nodeA))?.Status === "disconnected", {
      what: "chronomad to mark client A disconnected",
      timeoutMs: 90_000,
      detail,
    });
    console.log(`reconnect: client A paused -> node disconnected: ${Date.now() - pausedAt} ms`);
    const replacement = await waitFor(
      async () => {
        // The list's stubs carry no PreviousAllocation: the replacement is the other one of the same name.
        const r = (await allocs()).find((x) => x.ID !== original.ID && x.Name === original.Name);
        return r?.ClientStatus === "running" && pidFiles(dir).has(r.ID)
          ? { r: await api.alloc(r.ID) }
          : undefined;
      },
      { what: "a replacement running on client B", timeoutMs: 90_000, detail },
    );
    expect(replacement.r.NodeID).toBe(nodeB);
    expect(replacement.r.PreviousAllocation).toBe(original.ID);
    const unknown = await api.alloc(original.ID);
    expect(unknown).toMatchObject({ ClientStatus: "unknown", DesiredStatus: "run" });
    expect(unknown.AllocStates?.map((st) => st.Value)).toEqual(["unknown"]);
    // The original never stopped: A's task outlives A's silence.
    expect(alive(originalPid)).toBe(true);
    const replacementPid = pidFiles(dir).get(replacement.r.ID)!;
    expect(alive(replacementPid)).toBe(true);

    // A comes back: initializing until its allocations are reported, then ready.
    const resumedAt = Date.now();
    a.resume();
    await waitFor(async () => (await api.node(nodeA))?.Status === "ready", {
      what: "client A ready again",
      timeoutMs: 90_000,
      detail,
    });
    console.log(`reconnect: client A resumed -> node ready: ${Date.now() - resumedAt} ms`);

    // Never both: one of the two runs on, the other is stopped on its client.
    const settled = await waitFor(
      async () => {
        const all = await allocs();
        const pair = all.filter((x) => x.ID === original.ID || x.ID === replacement.r.ID);
        const kept = pair.filter((x) => x.DesiredStatus === "run" && x.ClientStatus === "running");
        const stopped = pair.filter((x) => x.DesiredStatus === "stop" && x.ClientStatus === "complete");
        return all.length === 2 && kept.length === 1 && stopped.length === 1
          ? { kept: kept[0]!, stopped: stopped[0]! }
          : undefined;
      },
      { what: "one allocation kept and the other stopped", timeoutMs: 90_000, detail },
    );
    const pidOf = (x: AllocView) => (x.ID === original.ID ? originalPid : replacementPid);
    await waitFor(() => !alive(pidOf(settled.stopped)), {
      what: `the stopped allocation's process (${pidOf(settled.stopped)}) to be gone`,
      timeoutMs: 60_000,
      detail,
    });
    expect(alive(pidOf(settled.kept))).toBe(true);
    console.log(
      `reconnect: kept the ${settled.kept.ID === original.ID ? "original (client A)" : "replacement (client B)"}, ` +
        `stopped the other: ${settled.stopped.DesiredDescription}`,
    );
    const stoppedWhy =
      settled.kept.ID === original.ID
        ? "alloc not needed due to disconnected client reconnect"
        : "alloc not needed due to job update";
    expect(settled.stopped.DesiredDescription).toBe(stoppedWhy);

    // The original reconnected either way: an AllocState entry for the disconnect and one for the reconnect.
    const back = await api.alloc(original.ID);
    expect(back.AllocStates?.map((st) => st.Value)).toEqual(["unknown", "running"]);
    const history = await api.history("allocation", original.ID);
    const statuses = history.filter((h) => h.Field === "ClientStatus").map((h) => [h.From, h.To]);
    expect(statuses.slice(0, 3)).toEqual([
      ["pending", "running"],
      ["running", "unknown"],
      ["unknown", "running"],
    ]);
    if (settled.kept.ID !== original.ID) expect(statuses.slice(3)).toEqual([["running", "complete"]]);
    else expect(statuses).toHaveLength(3);
    const states = history
      .filter((h) => h.Field === "AllocStates")
      .map((h) => (h.To as { Value: string }).Value);
    expect(states).toEqual(["unknown", "running"]);
    const disconnect = history.find((h) => h.Field === "ClientStatus" && h.To === "unknown")!;
    expect(disconnect.Cause).toMatchObject({ Event: "AllocsDisconnected", NodeID: nodeA });

    const nodeHistory = await api.history("node", nodeA);
    expect(nodeHistory.filter((h) => h.Field === "Status").map((h) => h.To)).toEqual([
      "ready",
      "disconnected",
      "initializing",
      "ready",
    ]);
    // Initializing until the client had reported its allocations: the reconnect lands in between.
    const statusAt = (to: string) =>
      nodeHistory.filter((h) => h.Field === "Status" && h.To === to).at(-1)!.Index;
    const reconnected = history.find((h) => h.Field === "ClientStatus" && h.From === "unknown")!;
    expect(reconnected.Index).toBeGreaterThanOrEqual(statusAt("initializing"));
    expect(reconnected.Index).toBeLessThanOrEqual(statusAt("ready"));
    // Client B saw none of it.
    expect((await api.history("node", nodeB)).filter((h) => h.Field === "Status").map((h) => h.To)).toEqual([
      "ready",
    ]);

    await api.stopJob("tolerant");
    await waitFor(() => !alive(pidOf(settled.kept)), {
      what: "the kept allocation stopped",
      timeoutMs: 60_000,
      detail,
    });
  }, 420_000);
});
