import { afterEach, describe, expect, it } from "vitest";
import type { AllocRow } from "../../projections/allocs.ts";
import type { HistoryRow } from "../../projections/history.ts";
import type { ServiceRegistrationRow } from "../../projections/service-registrations.ts";
import { NodeSimulator } from "../../src/nodesim/simulator.ts";
import { VirtualClock } from "../../src/util/clock.ts";
import { startTestServer, type TestServer } from "../server-harness.ts";
import { allocsTable, eventually, FAST_DRIVER, nodesTable } from "./fixtures.ts";

const NODES = 3;

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

/**
 * A real server and three simulated clients on one virtual clock, which a
 * ticker moves 50 ms at a time while the test runs: heartbeats, TTLs, the
 * simulated driver and the alloc update window all run in virtual time, and
 * a node misses its heartbeats only when the test silences it. The ticker
 * shares the event loop with the server, so a busy loop slows virtual time
 * as much as it slows the heartbeats.
 */
async function setup() {
  const clock = new VirtualClock();
  const s = await startTestServer({
    args: ["--min-heartbeat-ttl", "2s", "--heartbeat-grace", "10s"],
    deps: { clock },
  });
  cleanup.push(() => s.stop());
  const ticker = setInterval(() => clock.advance(50), 10);
  cleanup.push(() => clearInterval(ticker));
  const sim = new NodeSimulator({
    server: s.url,
    nodes: NODES,
    seed: "native-services",
    initialHeartbeatStaggerMs: 500,
    driver: FAST_DRIVER,
    clock,
  });
  cleanup.push(() => sim.stop());
  await sim.start();
  await eventually(
    "every node ready",
    () => nodesTable(s).size === NODES && [...nodesTable(s).all()].every((n) => n.Status === "ready"),
  );
  return { s, sim };
}

/** A service job whose group and task each declare a service with `provider = "nomad"` on port `http`. */
function serviceJob(id: string, count: number) {
  return {
    Job: {
      ID: id,
      Name: id,
      Namespace: "default",
      Type: "service",
      Priority: 50,
      Datacenters: ["dc1"],
      Update: { MaxParallel: 0 },
      Constraints: [{ Operand: "distinct_hosts", LTarget: "", RTarget: "" }],
      TaskGroups: [
        {
          Name: "g",
          Count: count,
          EphemeralDisk: { SizeMB: 10 },
          Networks: [{ Mode: "host", DynamicPorts: [{ Label: "http" }] }],
          // biome-ignore lint/suspicious/noTemplateCurlyInString: Nomad's interpolation syntax
          Services: [{ Name: id, Provider: "nomad", PortLabel: "http", Tags: ["v1", "${NOMAD_JOB_NAME}"] }],
          Tasks: [
            {
              Name: "app",
              Driver: "mock_driver",
              Config: {},
              Resources: { CPU: 100, MemoryMB: 64 },
              LogConfig: { MaxFiles: 1, MaxFileSizeMB: 1 },
              Services: [{ Name: `${id}-app`, Provider: "nomad", PortLabel: "http" }],
            },
          ],
        },
      ],
    },
  };
}

async function register(s: TestServer, id: string, count: number): Promise<void> {
  const res = await s.call("/v1/jobs", {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(serviceJob(id, count)),
  });
  expect(res.status, await res.text()).toBe(200);
}

async function services(s: TestServer, name: string): Promise<ServiceRegistrationRow[]> {
  const res = await s.call(`/v1/service/${name}`);
  expect(res.status).toBe(200);
  return (await res.json()) as ServiceRegistrationRow[];
}

/** The allocation's host port for `http`, or 0 when the server allocated none. */
function httpPort(alloc: AllocRow): number {
  const shared = (
    alloc.AllocatedResources as { Shared?: { Ports?: { Label: string; Value: number }[] } } | null
  )?.Shared;
  return shared?.Ports?.find((p) => p.Label === "http")?.Value ?? 0;
}

/** Why each of the registration's deletes happened: the record that removed it. */
function deletedBy(s: TestServer, id: string): unknown[] {
  const rows = [...s.store.table<HistoryRow>("history").all()].filter(
    (h) => h.Object === "service_registration" && h.ObjectID === id,
  );
  return rows.flatMap((h) =>
    s.history
      .entries(h.Key)
      .filter((e) => e.Field === "(deleted)")
      .map((e) => e.Cause.Event),
  );
}

describe("native service registrations from the simulated clients", () => {
  it("registers each allocation's services at its address, removes them when the job stops, and when a node goes down", async () => {
    const { s, sim } = await setup();
    const nodeIP = new Map(sim.nodes.map((n) => [n.id, n.services.node.IP]));

    await register(s, "web", 2);
    await eventually("both allocations' services registered", async () => {
      const [group, task] = [await services(s, "web"), await services(s, "web-app")];
      return group.length === 2 && task.length === 2;
    });
    const web = [...allocsTable(s).all()].filter((a) => a.JobID === "web");
    expect(web).toHaveLength(2);
    const registered = await services(s, "web");
    for (const r of registered) {
      const alloc = web.find((a) => a.ID === r.AllocID)!;
      expect(r).toMatchObject({
        ID: `_nomad-task-${alloc.ID}-group-g-web-http`,
        ServiceName: "web",
        Namespace: "default",
        NodeID: alloc.NodeID,
        Datacenter: "dc1",
        JobID: "web",
        Tags: ["v1", "web"],
        Address: nodeIP.get(alloc.NodeID),
        Port: httpPort(alloc),
      });
    }
    for (const r of await services(s, "web-app")) {
      expect(r.ID).toBe(`_nomad-task-${r.AllocID}-app-web-app-http`);
      expect(r.Address).toBe(nodeIP.get(r.NodeID));
    }
    // The union of the tags, per service name.
    const list = (await (await s.call("/v1/services")).json()) as { Services: { ServiceName: string }[] }[];
    expect(list[0]!.Services.map((x) => x.ServiceName)).toEqual(["web", "web-app"]);

    // Stopping the job stops its allocations: each client removes its registrations before the kill.
    expect((await s.call("/v1/job/web", { method: "DELETE" })).status).toBe(200);
    await eventually("the stopped job's services gone", async () => {
      const [group, task] = [await services(s, "web"), await services(s, "web-app")];
      return group.length === 0 && task.length === 0;
    });
    const ids = web.flatMap((a) => [
      `_nomad-task-${a.ID}-group-g-web-http`,
      `_nomad-task-${a.ID}-app-web-app-http`,
    ]);
    for (const id of ids) expect(deletedBy(s, id)).toEqual(["ServiceRegistrationsDeleted"]);
    const calls = sim.report().rpc;
    expect(calls["ServiceRegistration.Upsert"]).toMatchObject({ calls: 4, errors: 0 });
    expect(calls["ServiceRegistration.DeleteByID"]).toMatchObject({ calls: 4, errors: 0 });

    // Another job's allocation whose node stops heartbeating: its registrations go when the node is marked down.
    await register(s, "api", 2);
    await eventually("both api services registered", async () => (await services(s, "api")).length === 2);
    const [lost, kept] = await services(s, "api");
    const silent = sim.nodes.find((n) => n.id === lost!.NodeID)!;
    silent.silence();
    await eventually("the silent node down", () => nodesTable(s).get(silent.id)?.Status === "down");
    const left = await services(s, "api");
    expect(left.some((r) => r.NodeID === silent.id)).toBe(false);
    expect(left.map((r) => r.ID)).toContain(kept!.ID);
    expect(deletedBy(s, lost!.ID)).toEqual(["NodeStatusUpdated"]);
    expect(deletedBy(s, `_nomad-task-${lost!.AllocID}-app-api-app-http`)).toEqual(["NodeStatusUpdated"]);
    expect(nodesTable(s).get(kept!.NodeID)?.Status).toBe("ready");
  }, 120_000);
});
