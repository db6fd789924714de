import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ServiceRegistrationRow } from "../../../projections/service-registrations.ts";
import { readStream } from "../../api/plugins/event-stream-client.ts";
import { FAST_HEARTBEATS } from "../../nodesim/fixtures.ts";
import { startTestServer, type TestServer } from "../../server-harness.ts";
import {
  agentLogTails,
  type ClientAgent,
  hasNomad,
  NOMAD_BIN,
  startClientAgent,
  stopAllAgents,
  waitFor,
} from "./client-agent.ts";
import { Api, describeAllocs, serviceJob } from "./fixtures.ts";

if (!hasNomad)
  console.warn(`real Nomad client service tests skipped: no nomad binary at ${NOMAD_BIN} (set NOMAD_BIN)`);

/** A task service of the Nomad provider: a fixed address and port, so no network needs to be allocated. */
const nomadService = (name: string, tags: string[]) => ({
  Name: name,
  Provider: "nomad",
  PortLabel: "8080",
  Address: "127.0.0.1",
  Tags: tags,
});

const sleeper = (id: string, service: string) => {
  const job = serviceJob(id, 1, { script: "exec sleep 3600" });
  const [group] = job.TaskGroups;
  const [task] = group!.Tasks;
  return {
    ...job,
    TaskGroups: [{ ...group!, Tasks: [{ ...task!, Services: [nomadService(service, ["real", id])] }] }],
  };
};

describe.skipIf(!hasNomad)("a real Nomad 1.6.1 client registers its services with chronomad", () => {
  let s: TestServer;
  let api: Api;
  let agent: ClientAgent;

  beforeAll(async () => {
    s = await startTestServer({ args: [...FAST_HEARTBEATS, "--heartbeat-grace", "5s"] });
    api = new Api(s.url);
    agent = await startClientAgent({ servers: [s.rpcAddress], name: "service-client-1", serverUrl: s.url });
    await waitFor(
      async () => {
        const id = await agent.nodeID();
        return id && (await api.node(id))?.Status === "ready";
      },
      { what: "the client's node to be ready in chronomad", timeoutMs: 90_000, everyMs: 100 },
    );
  }, 120_000);

  afterAll(async () => {
    await stopAllAgents();
    await s?.stop();
  });

  const registrations = (name: string) => api.get<ServiceRegistrationRow[]>(`/v1/service/${name}`);

  it("registers a task's service when it starts and removes it when the job stops", async () => {
    await api.register(sleeper("svc-a", "sleeper-a"));
    const [reg] = await waitFor(
      async () => ((await registrations("sleeper-a")).length > 0 ? registrations("sleeper-a") : undefined),
      {
        what: "the client to register sleeper-a",
        timeoutMs: 90_000,
        everyMs: 200,
        detail: async () => `${describeAllocs(await api.allocs("svc-a"))}\n${agentLogTails()}`,
      },
    );
    const [alloc] = await api.allocs("svc-a");
    expect(reg).toMatchObject({
      ServiceName: "sleeper-a",
      Namespace: "default",
      NodeID: await agent.nodeID(),
      Datacenter: "dc1",
      JobID: "svc-a",
      AllocID: alloc!.ID,
      Tags: ["real", "svc-a"],
      Address: "127.0.0.1",
      Port: 8080,
    });
    expect(reg!.ID).toBe(`_nomad-task-${alloc!.ID}-main-sleeper-a-8080`);
    const list = await api.get<{ Namespace: string; Services: { ServiceName: string }[] }[]>("/v1/services");
    expect(list[0]!.Services.map((x) => x.ServiceName)).toContain("sleeper-a");

    await api.stopJob("svc-a");
    await waitFor(async () => (await registrations("sleeper-a")).length === 0, {
      what: "sleeper-a to be deregistered after the job stopped",
      timeoutMs: 60_000,
      everyMs: 200,
      detail: async () => `${describeAllocs(await api.allocs("svc-a"))}\n${agentLogTails()}`,
    });
    // The client's own ServiceRegistration.DeleteByID removed it, as the task was killed.
    const { frames } = await readStream(`${s.url}/v1/event/stream?topic=Service:svc-a&index=0`, (f) =>
      f.some((x) => x.Events?.some((e) => e.Type === "ServiceDeregistration")),
    );
    const events = frames.flatMap((f) => f.Events ?? []) as { Type: string; Record?: string }[];
    expect(events.map((e) => [e.Type, e.Record])).toEqual([
      ["ServiceRegistration", undefined],
      ["ServiceDeregistration", "ServiceRegistrationsDeleted"],
    ]);
  }, 180_000);

  it("loses a node's registrations when the node goes down", async () => {
    await api.register(sleeper("svc-b", "sleeper-b"));
    await waitFor(async () => (await registrations("sleeper-b")).length === 1, {
      what: "the client to register sleeper-b",
      timeoutMs: 90_000,
      everyMs: 200,
      detail: async () => `${describeAllocs(await api.allocs("svc-b"))}\n${agentLogTails()}`,
    });
    // Frozen, the agent misses its heartbeats: the node goes down, and its registrations with it.
    agent.pause();
    try {
      await waitFor(async () => (await registrations("sleeper-b")).length === 0, {
        what: "sleeper-b to go with its down node",
        timeoutMs: 60_000,
        everyMs: 200,
      });
      const id = (await agent.nodeID())!;
      expect((await api.node(id))?.Status).toBe("down");
    } finally {
      agent.resume();
    }
  }, 180_000);
});
