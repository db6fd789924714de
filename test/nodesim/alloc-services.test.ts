import { describe, expect, it } from "vitest";
import { AllocRunner, type RunnerHost } from "../../src/nodesim/alloc-runner.ts";
import type { NodeServices, ServiceCalls } from "../../src/nodesim/alloc-services.ts";
import { simAllocSpec } from "../../src/nodesim/alloc-spec.ts";
import type { DriverOptions } from "../../src/nodesim/driver-options.ts";
import type { ServiceRegistrationBody } from "../../src/nodesim/service-specs.ts";
import { TimerQueue } from "../../src/nodesim/timer-queue.ts";
import { VirtualClock } from "../../src/util/clock.ts";
import { at, DRIVER } from "./quick-driver.ts";

const ALLOC_ID = "8d1f0e42-6c1f-4b4e-9d7a-1b2c3d4e5f60";
const NODE = { ID: "node-1", Name: "sim-00001", Datacenter: "dc1", IP: "10.0.0.1" };

/** Nomad's interpolation syntax, written literally. */
const JOB_NAME = "$" + "{NOMAD_JOB_NAME}";
const ALLOC_INDEX = "$" + "{NOMAD_ALLOC_INDEX}";

const nomad = (fields: Record<string, unknown>) => ({ Provider: "nomad", Tags: null, ...fields });

/** An allocation of job `web`, group `web`, one task `app`; `fields` and `group` override. */
function alloc(fields: Record<string, unknown> = {}, group: Record<string, unknown> = {}, type = "service") {
  return {
    ID: ALLOC_ID,
    Name: "web.web[2]",
    Namespace: "prod",
    JobID: "web",
    TaskGroup: "web",
    DeploymentID: "",
    DesiredStatus: "run",
    ClientStatus: "pending",
    AllocModifyIndex: 10,
    AllocatedResources: {
      Shared: {
        Networks: [{ Mode: "host", IP: "10.0.0.1", DynamicPorts: [{ Label: "http", Value: 23_456, To: 0 }] }],
        Ports: [{ Label: "http", Value: 23_456, To: 8080, HostIP: "10.0.0.1" }],
      },
      Tasks: { app: { Networks: null } },
    },
    Job: {
      ID: "web",
      Name: "web-job",
      Type: type,
      TaskGroups: [
        {
          Name: "web",
          RestartPolicy: { Attempts: 0, Delay: 0 },
          Services: [nomad({ Name: "web", PortLabel: "http", Tags: ["v1"], CanaryTags: ["canary"] })],
          Tasks: [
            {
              Name: "app",
              Services: [
                nomad({ Name: `app-${ALLOC_INDEX}`, PortLabel: "http", Tags: [JOB_NAME] }),
                // Consul's (no provider): not the simulated client's to register.
                { Name: "consul-only", PortLabel: "http" },
              ],
            },
          ],
          ...group,
        },
      ],
    },
    ...fields,
  };
}

/** Records every call; with `hold`, deletes stay unanswered until `release`. */
class RecordingCalls implements ServiceCalls {
  readonly log: string[] = [];
  readonly upserts: ServiceRegistrationBody[][] = [];
  hold = false;
  private held: (() => void)[] = [];

  async upsert(services: readonly ServiceRegistrationBody[]): Promise<void> {
    this.upserts.push([...services]);
    this.log.push(`upsert ${services.map((s) => s.ID).join(",")}`);
  }

  deleteByID(namespace: string, id: string): Promise<void> {
    this.log.push(`delete ${namespace}/${id}`);
    if (!this.hold) return Promise.resolve();
    return new Promise((resolve) => this.held.push(resolve));
  }

  release(): void {
    for (const r of this.held.splice(0)) r();
  }
}

const settle = async () => {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
};

function runner(raw: Record<string, unknown>, driver: Partial<DriverOptions> = {}) {
  const clock = new VirtualClock();
  const calls = new RecordingCalls();
  const failures: unknown[] = [];
  const services: NodeServices = { node: NODE, calls, failed: (_id, err) => failures.push(err) };
  const host: RunnerHost = {
    timers: new TimerQueue(clock),
    driver: { ...DRIVER, ...driver },
    seed: "t",
    services,
    changed: () => undefined,
  };
  const r = new AllocRunner(simAllocSpec(raw, 15_000), host);
  r.start();
  /** Moves virtual time, letting the answered calls' promises settle. */
  const run = async (ms: number) => {
    clock.advance(ms);
    await settle();
  };
  return { r, calls, failures, run };
}

const groupID = `_nomad-task-${ALLOC_ID}-group-web-web-http`;
const taskID = `_nomad-task-${ALLOC_ID}-app-app-2-http`;

describe("the simulated client's native service registrations", () => {
  it("registers the group's services before the tasks start and each task's once it runs, as Nomad's client builds them", async () => {
    const { calls, run } = runner(alloc());
    await settle();
    expect(calls.log).toEqual([`upsert ${groupID}`]);
    expect(calls.upserts[0]).toEqual([
      {
        ID: groupID,
        ServiceName: "web",
        Namespace: "prod",
        NodeID: "node-1",
        Datacenter: "dc1",
        JobID: "web",
        AllocID: ALLOC_ID,
        Tags: ["v1"],
        // The host port (Value), not the mapped one (To).
        Address: "10.0.0.1",
        Port: 23_456,
      },
    ]);
    await run(99);
    expect(calls.log).toHaveLength(1);
    await run(1);
    // Interpolated with the allocation's index and the job's name; Consul's service left out.
    expect(calls.log).toEqual([`upsert ${groupID}`, `upsert ${taskID}`]);
    expect(calls.upserts[1]).toMatchObject([{ ServiceName: "app-2", Tags: ["web-job"], Port: 23_456 }]);
  });

  it("uses the canary tags on a canary, and resolves addresses by Nomad's rules", async () => {
    const services = [
      nomad({ Name: "canaried", PortLabel: "http", Tags: ["v1"], CanaryTags: ["canary"] }),
      // No port: the address of the group's only network, port 0.
      nomad({ Name: "portless" }),
      // A custom address keeps the allocated port.
      nomad({ Name: "custom", PortLabel: "http", Address: "203.0.113.9" }),
      // A bare number: the client's own address.
      nomad({ Name: "numeric", PortLabel: "9100" }),
    ];
    const { calls } = runner(
      alloc(
        { DeploymentStatus: { Canary: true, Healthy: null } },
        { Services: services, Tasks: [{ Name: "app" }] },
      ),
    );
    await settle();
    expect(calls.upserts[0]!.map((s) => [s.ServiceName, s.Tags, s.Address, s.Port])).toEqual([
      ["canaried", ["canary"], "10.0.0.1", 23_456],
      ["portless", [], "10.0.0.1", 0],
      ["custom", [], "203.0.113.9", 23_456],
      ["numeric", [], "", 9100],
    ]);
    expect(calls.upserts[0]!.map((s) => s.ID.replace(`_nomad-task-${ALLOC_ID}-group-web-`, ""))).toEqual([
      "canaried-http",
      "portless-",
      "custom-http",
      "numeric-9100",
    ]);
  });

  it("registers a port label at the node's address, port 0, when the server assigned the allocation no port", async () => {
    const { calls } = runner(
      alloc({ AllocatedResources: { Shared: { Ports: null, Networks: null }, Tasks: {} } }),
    );
    const bare = runner(alloc({ AllocatedResources: null }));
    await settle();
    expect(calls.upserts[0]).toMatchObject([{ ID: groupID, Address: "10.0.0.1", Port: 0 }]);
    expect(bare.calls.upserts[0]).toMatchObject([{ ID: groupID, Address: "10.0.0.1", Port: 0 }]);
  });

  it("registers nothing of a workload one of whose addresses does not resolve", async () => {
    const { calls, failures, run } = runner(
      alloc(
        {},
        { Services: [nomad({ Name: "ok", PortLabel: "http" }), nomad({ Name: "bad", PortLabel: "nope" })] },
      ),
    );
    await run(100);
    expect(calls.log).toEqual([`upsert ${taskID}`]);
    expect(String(failures[0])).toContain('unable to get address for service "bad": invalid port "nope"');
  });

  it("removes the task's services when it exits and registers them again when it restarts; the group's stay", async () => {
    const { calls, run } = runner(alloc({}, { RestartPolicy: { Attempts: 1, Delay: 0 } }), {
      failureRate: 1,
      crashWithin: at(1_000),
      restartDelay: 500,
    });
    await run(100);
    calls.log.splice(0);
    await run(1_000);
    expect(calls.log).toEqual([`delete prod/${taskID}`]);
    await run(500);
    expect(calls.log).toEqual([`delete prod/${taskID}`, `upsert ${taskID}`]);
    // The second crash is the last (one restart allowed): the allocation fails and removes everything.
    await run(1_000);
    expect(calls.log.slice(2)).toEqual([`delete prod/${taskID}`, `delete prod/${groupID}`]);
  });

  it("on a stop, removes its services first (the group's, then the task's) and kills the tasks once the deletes are answered", async () => {
    const { r, calls, run } = runner(alloc());
    await run(200);
    calls.log.splice(0);
    calls.hold = true;
    r.update(simAllocSpec(alloc({ DesiredStatus: "stop", AllocModifyIndex: 20 }), 15_000));
    await run(1_000);
    // The group hook's PreKill waits for its delete before the task hooks' PreKilling.
    expect(calls.log).toEqual([`delete prod/${groupID}`]);
    calls.release();
    await run(1_000);
    expect(calls.log).toEqual([`delete prod/${groupID}`, `delete prod/${taskID}`]);
    expect(r.clientStatus).toBe("running");
    calls.release();
    await settle();
    await run(49);
    expect(r.clientStatus).toBe("running");
    await run(1);
    expect(r.clientStatus).toBe("complete");
    // Nothing is deleted twice.
    expect(calls.log).toHaveLength(2);
  });

  it("a batch allocation that completes removes its services", async () => {
    const { r, calls, run } = runner(alloc({}, {}, "batch"), { batchRunFor: at(1_000) });
    await run(1_100);
    expect(r.clientStatus).toBe("complete");
    expect(calls.log).toEqual([
      `upsert ${groupID}`,
      `upsert ${taskID}`,
      `delete prod/${taskID}`,
      `delete prod/${groupID}`,
    ]);
  });

  it("an update registers the new set and removes what left it", async () => {
    const { r, calls, run } = runner(alloc());
    await run(200);
    calls.log.splice(0);
    const renamed = alloc(
      { AllocModifyIndex: 20 },
      { Services: [nomad({ Name: "web2", PortLabel: "http", Tags: ["v2"] })] },
    );
    r.update(simAllocSpec(renamed, 15_000));
    await settle();
    const web2 = `_nomad-task-${ALLOC_ID}-group-web-web2-http`;
    expect(calls.log).toEqual([`upsert ${web2}`, `delete prod/${groupID}`, `upsert ${taskID}`]);
  });
});
