import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { createProjections } from "../../projections/index.ts";
import { SERVICE_NOT_FOUND, serviceKey } from "../../projections/service-registrations.ts";
import { EnvelopeCodec } from "../../src/codec/envelope-codec.ts";
import { Store } from "../../src/store/store.ts";
import type { Draft } from "../../src/store/writer.ts";
import { allSchemas } from "../../streams/index.ts";
import type {
  ServiceRegistrationSpec,
  ServiceRegistrationsDeleted,
} from "../../streams/service-registrations.ts";
import { alloc, clientUpdate, memoryStore, placed, registered, statusChange } from "./memory-store.ts";

function service(id: string, allocID: string, nodeID: string, fields: Partial<ServiceRegistrationSpec> = {}) {
  return {
    ID: id,
    ServiceName: "web",
    Namespace: "default",
    NodeID: nodeID,
    Datacenter: "dc1",
    JobID: "web",
    AllocID: allocID,
    Tags: ["a", "b"],
    Address: "10.0.0.1",
    Port: 8080,
    ...fields,
  } satisfies ServiceRegistrationSpec;
}

const upserted = (...services: ServiceRegistrationSpec[]): Draft => ({
  type: "ServiceRegistrationsUpserted",
  v: 1,
  data: { Services: services },
});

const deleted = (ids: string[], fields: Partial<ServiceRegistrationsDeleted> = {}): Draft => ({
  type: "ServiceRegistrationsDeleted",
  v: 1,
  data: { Services: ids.map((ID) => ({ Namespace: "default", ID })), Reason: "client", ...fields },
});

/** Two ready nodes, each running one allocation of job web. */
async function cluster() {
  const m = await memoryStore();
  const outcomes = await m.write(
    registered("n1"),
    statusChange("n1", "initializing", "ready"),
    registered("n2"),
    statusChange("n2", "initializing", "ready"),
    placed(alloc("a1", "n1"), alloc("a2", "n2")),
    clientUpdate("a1", "n1", "running"),
    clientUpdate("a2", "n2", "running"),
  );
  for (const o of outcomes) expect(o.status).toBe("applied");
  const row = (id: string) => m.tables.serviceRegistrations.get(serviceKey("default", id));
  return { ...m, row };
}

describe("service registrations projection", () => {
  it("registers, leaves an equal registration alone (tags as a set) and keeps CreateIndex on a change", async () => {
    const { write, row, tables } = await cluster();
    const [first] = await write(upserted(service("s1", "a1", "n1"), service("s2", "a2", "n2")));
    expect(first).toMatchObject({ status: "applied" });
    expect(row("s1")).toMatchObject({ CreateIndex: first!.index, ModifyIndex: first!.index, Port: 8080 });
    expect(tables.serviceRegistrations.by("service_name", "default\u0000web")).toHaveLength(2);
    expect(tables.serviceRegistrations.by("node", "n1").map((r) => r.ID)).toEqual(["s1"]);
    expect(tables.serviceRegistrations.by("job", "default\u0000web")).toHaveLength(2);

    const [same] = await write(upserted(service("s1", "a1", "n1", { Tags: ["b", "a"] })));
    expect(same).toMatchObject({ status: "applied" });
    expect(row("s1")!.ModifyIndex).toBe(first!.index);
    expect(tables.serviceRegistrations.index).toBe(first!.index);

    const [moved] = await write(upserted(service("s1", "a1", "n1", { Port: 9090 })));
    expect(row("s1")).toMatchObject({ CreateIndex: first!.index, ModifyIndex: moved!.index, Port: 9090 });
  });

  it("refuses the whole record at apply when one registration is not of a live allocation of its node", async () => {
    const { write, row } = await cluster();
    const refused = async (spec: ServiceRegistrationSpec, code: number) => {
      const [o] = await write(upserted(service("ok", "a1", "n1"), spec));
      expect(o, JSON.stringify(spec)).toMatchObject({ status: "rejected", code });
      expect(row("ok")).toBeUndefined();
    };
    await refused(service("x", "a2", "n1"), 403); // a2 runs on n2
    await refused(service("x", "nope", "n1"), 404);
    await refused(service("x", "a1", "n1", { Address: "0.0.0.0" }), 400);
    await refused(service("x", "a1", "n1", { Address: "[::]" }), 400);
    await refused(service("x", "a1", "n1", { JobID: "other" }), 400);
    await refused(service("x", "a1", "n1", { Datacenter: "dc9" }), 400);
    await refused(service("x", "a1", "n1", { Port: 70_000 }), 400);
    await refused(service("", "a1", "n1"), 400);

    await write(clientUpdate("a1", "n1", "complete"));
    const [late] = await write(upserted(service("s1", "a1", "n1")));
    expect(late).toMatchObject({ status: "rejected", code: 409 });

    await write(statusChange("n2", "ready", "down"));
    const [down] = await write(upserted(service("s2", "a2", "n2")));
    expect(down).toMatchObject({ status: "rejected", code: 409 });
  });

  it("deletes by ID once: a second delete of the same registration is Nomad's not found", async () => {
    const { write, row } = await cluster();
    await write(upserted(service("s1", "a1", "n1"), service("s2", "a2", "n2")));
    // A node removes only its own registrations.
    const [foreign] = await write(deleted(["s2"], { NodeID: "n1" }));
    expect(foreign).toMatchObject({ status: "rejected", code: 403 });
    expect(row("s2")).toBeDefined();

    const [first, second] = await write(deleted(["s1"], { NodeID: "n1" }), deleted(["s1"], { NodeID: "n1" }));
    expect(first).toMatchObject({ status: "applied" });
    expect(second).toMatchObject({ status: "rejected", code: 404, reason: SERVICE_NOT_FOUND });
    expect(row("s1")).toBeUndefined();

    const [operator] = await write(deleted(["s2"], { Reason: "operator" }));
    expect(operator).toMatchObject({ status: "applied" });
    expect(row("s2")).toBeUndefined();
  });

  it("removes a down node's registrations in the record that marks it down, and keeps a disconnected node's", async () => {
    const { write, row, tables } = await cluster();
    await write(upserted(service("s1", "a1", "n1"), service("s2", "a2", "n2")));
    await write(statusChange("n2", "ready", "disconnected"));
    expect(row("s2")).toBeDefined();

    const [down] = await write(statusChange("n1", "ready", "down"));
    expect(down).toMatchObject({ status: "applied" });
    expect(row("s1")).toBeUndefined();
    expect(row("s2")).toBeDefined();
    expect(tables.serviceRegistrations.index).toBe(down!.index);
  });

  it("removes an allocation's registrations when its client reports it terminal, and keeps a running one's", async () => {
    const { write, row } = await cluster();
    await write(upserted(service("s1", "a1", "n1"), service("s1b", "a1", "n1", { ServiceName: "admin" })));
    await write(upserted(service("s2", "a2", "n2")));
    await write(clientUpdate("a1", "n1", "running"));
    expect(row("s1")).toBeDefined();

    const [done] = await write(clientUpdate("a1", "n1", "complete"));
    expect(done).toMatchObject({ status: "applied" });
    expect(row("s1")).toBeUndefined();
    expect(row("s1b")).toBeUndefined();
    expect(row("s2")).toBeDefined();

    // Lost (the node's allocations, once it is down) is terminal on the client too.
    const { write: write2, row: row2 } = await cluster();
    await write2(upserted(service("s2", "a2", "n2")));
    await write2(statusChange("n2", "ready", "disconnected"));
    const [lost] = await write2({
      type: "AllocsLost",
      v: 1,
      data: { NodeID: "n2", AllocIDs: ["a2"], DesiredDescription: "alloc is lost since its node is down" },
    });
    expect(lost).toMatchObject({ status: "applied" });
    expect(row2("s2")).toBeUndefined();
  });

  it("removes the registrations of a removed node and of a collected allocation", async () => {
    const { write, row } = await cluster();
    await write(upserted(service("s1", "a1", "n1"), service("s2", "a2", "n2")));
    const [gone] = await write({ type: "NodeDeregistered", v: 1, data: { NodeIDs: ["n1"] } });
    expect(gone).toMatchObject({ status: "applied" });
    expect(row("s1")).toBeUndefined();

    // Stopped by the server while its client still reported it pending: collectable, not client-terminal.
    const [stopped] = await write(placed(alloc("a3", "n2", { DesiredStatus: "stop" })));
    expect(stopped).toMatchObject({ status: "applied" });
    await write(upserted(service("s3", "a3", "n2")));
    expect(row("s3")).toBeDefined();
    const [collected] = await write({
      type: "GarbageCollected",
      v: 2,
      data: { Reason: "forced", EvalIDs: [], AllocIDs: ["a3"], Jobs: [] },
    });
    expect(collected).toMatchObject({ status: "applied" });
    expect(row("s3")).toBeUndefined();
    expect(row("s2")).toBeDefined();
  });

  it("replays the same log into the same tables", async () => {
    const { write, log, store } = await cluster();
    await write(upserted(service("s1", "a1", "n1"), service("s2", "a2", "n2")));
    await write(deleted(["s1"]), deleted(["s1"]));
    await write(upserted(service("s1", "a1", "n1", { Tags: ["x"] })));
    await write(statusChange("n2", "ready", "down"));
    const fresh = new Store({
      log,
      codec: new EnvelopeCodec(allSchemas),
      projections: createProjections().all,
      logger: pino({ level: "silent" }),
    });
    await fresh.start();
    expect(fresh.hash()).toBe(store.hash());
    expect([...fresh.table("service_registrations").all()]).toMatchObject([{ ID: "s1", Tags: ["x"] }]);
    await fresh.stop();
    await store.stop();
  });
});
