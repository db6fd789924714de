import { afterEach, describe, expect, it } from "vitest";
import type { HistoryRow } from "../../../projections/history.ts";
import type { ServiceRegistrationRow } from "../../../projections/service-registrations.ts";
import { hashWith } from "../../../src/api/service-choose.ts";
import { VirtualClock } from "../../../src/util/clock.ts";
import { startTestServer, type TestServer } from "../../server-harness.ts";
import { placeAlloc, TestNode, testJob, waitForNode } from "../node-fixtures.ts";
import { readStream } from "./event-stream-client.ts";

/** Longer than any TTL with one node (10 s + up to 10 s of stagger) plus the 10 s grace. */
const PAST_TTL_MS = 30_001;

const running: TestServer[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop();
});

/** A server with one ready node running one allocation of job `web`. */
async function setup() {
  const clock = new VirtualClock();
  const s = await startTestServer({ deps: { clock } });
  running.push(s);
  const node = new TestNode(s);
  expect((await node.register()).status).toBe(200);
  expect((await node.heartbeat()).status).toBe(200);
  const alloc = await placeAlloc(s, { NodeID: node.id });
  expect((await node.updateAllocs(clock, [{ ID: alloc.ID, ClientStatus: "running" }])).status).toBe(200);
  return { s, clock, node, alloc };
}

/** A registration as the Nomad client builds one (nsd.generateNomadServiceRegistration). */
function registration(node: TestNode, allocID: string, name: string, fields: Record<string, unknown> = {}) {
  return {
    ID: `_nomad-task-${allocID}-server-${name}-http`,
    ServiceName: name,
    Namespace: "default",
    NodeID: node.id,
    Datacenter: "dc1",
    JobID: "web",
    AllocID: allocID,
    Tags: ["v1"],
    Address: "10.0.0.7",
    Port: 8080,
    CreateIndex: 0,
    ModifyIndex: 0,
    ...fields,
  };
}

const upsert = (
  node: TestNode,
  services: unknown[],
  options: { msgpack?: boolean; token?: string | null } = {},
) => node.rpc("ServiceRegistration.Upsert", { Services: services, Region: "global" }, options);

const deleteByID = (node: TestNode, id: string) =>
  node.rpc("ServiceRegistration.DeleteByID", { ID: id, Namespace: "default", Region: "global" });

async function get<T>(
  s: TestServer,
  path: string,
): Promise<{ status: number; body: T; index: number; next: string | null }> {
  const res = await s.call(path);
  const text = await res.text();
  const type = res.headers.get("content-type") ?? "";
  return {
    status: res.status,
    body: (type.startsWith("application/json") ? JSON.parse(text) : text) as T,
    index: Number(res.headers.get("x-nomad-index")),
    next: res.headers.get("x-nomad-nexttoken"),
  };
}

/** Reads `path` with blocking queries until `until` holds. */
async function waitFor<T>(s: TestServer, path: string, until: (body: T) => boolean): Promise<T> {
  let index = 0;
  for (let i = 0; i < 50; i++) {
    const sep = path.includes("?") ? "&" : "?";
    const r = await get<T>(s, `${path}${sep}index=${index}&wait=5s`);
    index = r.index;
    if (until(r.body)) return r.body;
  }
  throw new Error(`${path} never reached the expected state`);
}

describe("service registrations over the client RPC and the HTTP API", () => {
  it("registers a client's services, lists and reads them, and deletes them by ID", async () => {
    const { s, node, alloc } = await setup();
    const web = registration(node, alloc.ID, "web", { Tags: ["v1", "blue"] });
    const admin = registration(node, alloc.ID, "admin", { Port: 9090, Tags: null });
    const up = await upsert(node, [web, admin]);
    expect(up.status).toBe(200);
    const index = up.body.Index as number;
    expect(index).toBeGreaterThan(0);

    const list = await get(s, "/v1/services");
    expect(list.status).toBe(200);
    expect(list.index).toBe(index);
    expect(list.body).toEqual([
      {
        Namespace: "default",
        Services: [
          { ServiceName: "admin", Tags: [] },
          { ServiceName: "web", Tags: ["blue", "v1"] },
        ],
      },
    ]);
    expect((await get(s, "/v1/services?namespace=*")).body).toEqual(list.body);
    expect((await get(s, "/v1/services?namespace=other")).body).toEqual([]);

    const one = await get<ServiceRegistrationRow[]>(s, "/v1/service/web");
    expect(one.body).toEqual([
      {
        ...web,
        CreateIndex: index,
        ModifyIndex: index,
      },
    ]);
    expect((await get(s, "/v1/service/nothing")).body).toEqual([]);
    expect((await get(s, `/v1/allocation/${alloc.ID}/services`)).body).toHaveLength(2);
    expect((await get(s, "/v1/job/nope/services")).status).toBe(404);
    expect((await get(s, `/v1/allocation/${alloc.ID}/services?namespace=other`)).status).toBe(404);

    // The client's delete, once; again it is Nomad's "not found", which the client takes as done.
    const gone = await deleteByID(node, admin.ID);
    expect(gone.status).toBe(200);
    expect(gone.body.Index as number).toBeGreaterThan(index);
    const again = await deleteByID(node, admin.ID);
    expect(again.status).toBe(404);
    expect(again.text).toContain("service registration not found");

    // An operator's delete: the service name in the path is not looked at, as in Nomad.
    const del = await s.call(`/v1/service/web/${encodeURIComponent(web.ID)}`, { method: "DELETE" });
    expect(del.status).toBe(200);
    expect(Number(del.headers.get("x-nomad-index"))).toBeGreaterThan(gone.body.Index as number);
    expect((await get(s, "/v1/services")).body).toEqual([]);

    // Time travel: the registrations as they were at the upsert.
    const past = await get<ServiceRegistrationRow[]>(s, `/v1/service/web?at_index=${index}`);
    expect(past.body.map((r) => r.ID)).toEqual([web.ID]);
  });

  it("takes msgpack bodies and writes only the caller's own allocations' registrations", async () => {
    const { s, node, alloc } = await setup();
    const other = new TestNode(s);
    expect((await other.register()).status).toBe(200);
    expect((await other.heartbeat()).status).toBe(200);
    const theirs = await placeAlloc(s, { NodeID: other.id });

    expect((await upsert(node, [registration(node, alloc.ID, "web")], { msgpack: true })).status).toBe(200);
    // Another node's allocation, in the caller's name or in the other node's.
    expect((await upsert(node, [registration(node, theirs.ID, "web")])).status).toBe(403);
    expect((await upsert(node, [registration(other, theirs.ID, "web")])).status).toBe(403);
    // No secret, or a wrong one.
    expect((await upsert(node, [registration(node, alloc.ID, "web")], { token: null })).status).toBe(403);
    expect((await upsert(node, [registration(node, alloc.ID, "web")], { token: other.id })).status).toBe(403);
    // Nomad's own validation.
    const any = await upsert(node, [registration(node, alloc.ID, "web", { Address: "0.0.0.0" })]);
    expect(any.status).toBe(400);
    expect(any.text).toBe("invalid service registration address");
    // A node deletes only its own registrations.
    const mine = registration(node, alloc.ID, "web");
    expect((await deleteByID(other, mine.ID)).status).toBe(403);
    expect((await get(s, "/v1/service/web")).body).toHaveLength(1);
  });

  it("pages, filters and chooses registrations of one service", async () => {
    const { s, node, clock } = await setup();
    const allocs = [];
    for (let i = 0; i < 3; i++) allocs.push(await placeAlloc(s, { NodeID: node.id }));
    await node.updateAllocs(
      clock,
      allocs.map((a) => ({ ID: a.ID, ClientStatus: "running" })),
    );
    const services = allocs.map((a, i) => registration(node, a.ID, "api", { Port: 8000 + i }));
    expect((await upsert(node, services)).status).toBe(200);

    const filtered = await get<ServiceRegistrationRow[]>(
      s,
      `/v1/service/api?filter=${encodeURIComponent("Port == 8001")}`,
    );
    expect(filtered.body.map((r) => r.Port)).toEqual([8001]);

    const byID = [...services].sort((a, b) => (a.ID < b.ID ? -1 : 1));
    const page = await get<ServiceRegistrationRow[]>(s, "/v1/service/api?per_page=2");
    expect(page.body.map((r) => r.ID)).toEqual(byID.slice(0, 2).map((r) => r.ID));
    expect(page.next).toBe(`default.${byID[2]!.ID}`);
    const rest = await get<ServiceRegistrationRow[]>(s, `/v1/service/api?per_page=2&next_token=${page.next}`);
    expect(rest.body.map((r) => r.ID)).toEqual([byID[2]!.ID]);

    // Rendezvous hashing: the two whose hash with the key ranks first, the same on every call.
    const key = "requester-alloc";
    const ranked = [...services].sort((a, b) => (hashWith(a, key) < hashWith(b, key) ? -1 : 1));
    const chosen = await get<ServiceRegistrationRow[]>(
      s,
      `/v1/service/api?choose=${encodeURIComponent(`2|${key}`)}`,
    );
    expect(chosen.body.map((r) => r.ID)).toEqual(ranked.slice(0, 2).map((r) => r.ID));
    const bad = await get<string>(s, "/v1/service/api?choose=two");
    expect(bad.status).toBe(400);
    expect(bad.body).toBe("failed to choose services: Parameter for choose must be in form '<number>|<key>'");
  });

  it("matches Nomad's HashWith for a known registration", () => {
    // md5(uint64be(8080) ‖ "alloc" ‖ "id" ‖ "default" ‖ "10.0.0.1" ‖ "web" ‖ "a" ‖ "key"), computed apart (Python hashlib).
    const hash = hashWith(
      {
        Port: 8080,
        AllocID: "alloc",
        ID: "id",
        Namespace: "default",
        Address: "10.0.0.1",
        ServiceName: "web",
        Tags: ["a"],
      },
      "key",
    );
    expect(hash).toMatch(/^[0-9a-f]{32}$/);
    expect(hash).toBe("f27ed4b2678d0bdef526410cbacf686c");
  });

  it("answers a job's registrations, and tells no job from a job without any", async () => {
    const { s, node, alloc } = await setup();
    expect((await get(s, "/v1/job/web/services")).status).toBe(404);
    const job = {
      ID: "web",
      Name: "web",
      Type: "service",
      Datacenters: ["dc1"],
      TaskGroups: [
        { Name: "frontend", Count: 0, Tasks: [{ Name: "t", Driver: "exec", Config: { command: "true" } }] },
      ],
    };
    expect((await s.call("/v1/jobs", { method: "PUT", body: JSON.stringify({ Job: job }) })).status).toBe(
      200,
    );
    expect((await get(s, "/v1/job/web/services")).body).toEqual([]);
    expect((await upsert(node, [registration(node, alloc.ID, "web")])).status).toBe(200);
    const rows = await get<ServiceRegistrationRow[]>(s, "/v1/job/web/services");
    expect(rows.body.map((r) => r.AllocID)).toEqual([alloc.ID]);
  });

  it("wakes a blocking list when a registration arrives", async () => {
    const { s, node, alloc } = await setup();
    const before = await get(s, "/v1/services");
    const waiting = get(s, `/v1/services?index=${before.index}&wait=10s`);
    await new Promise((r) => setTimeout(r, 50));
    const up = await upsert(node, [registration(node, alloc.ID, "web")]);
    const woken = await waiting;
    expect(woken.index).toBe(up.body.Index);
    expect(woken.body).toEqual([{ Namespace: "default", Services: [{ ServiceName: "web", Tags: ["v1"] }] }]);
  });

  it("removes an allocation's registrations when its client reports it terminal", async () => {
    const { s, node, alloc, clock } = await setup();
    const second = await placeAlloc(s, { NodeID: node.id });
    await node.updateAllocs(clock, [{ ID: second.ID, ClientStatus: "running" }]);
    await upsert(node, [registration(node, alloc.ID, "web"), registration(node, second.ID, "web")]);
    expect((await node.updateAllocs(clock, [{ ID: alloc.ID, ClientStatus: "complete" }])).status).toBe(200);
    const left = await get<ServiceRegistrationRow[]>(s, "/v1/service/web");
    expect(left.body.map((r) => r.AllocID)).toEqual([second.ID]);
    // A late upsert for the finished allocation is refused, not stored.
    expect((await upsert(node, [registration(node, alloc.ID, "web")])).status).toBe(409);
  });

  it("removes a node's registrations when it goes down, and publishes Nomad's Service events", async () => {
    const { s, node, alloc, clock } = await setup();
    const up = await upsert(node, [registration(node, alloc.ID, "web", { Tags: ["v1"] })]);
    const upIndex = up.body.Index as number;

    clock.advance(PAST_TTL_MS);
    const down = await waitForNode(s, node.id, (n) => n.Status === "down");
    const empty = await waitFor<unknown[]>(s, "/v1/service/web", (b) => b.length === 0);
    expect(empty).toEqual([]);
    expect(s.store.table("service_registrations").index).toBe(down.ModifyIndex);

    const { frames } = await readStream(`${s.url}/v1/event/stream?topic=Service&index=0`, (f) =>
      f.some((x) => x.Events?.some((e) => e.Type === "ServiceDeregistration")),
    );
    const events = frames.flatMap((f) => f.Events ?? []);
    expect(events).toHaveLength(2);
    expect(events[0]).toMatchObject({
      Topic: "Service",
      Type: "ServiceRegistration",
      Key: registration(node, alloc.ID, "web").ID,
      Namespace: "default",
      FilterKeys: ["web", "web"],
      Index: upIndex,
      Payload: { Service: { ServiceName: "web", NodeID: node.id, CreateIndex: upIndex } },
    });
    expect(events[1]).toMatchObject({
      Topic: "Service",
      Type: "ServiceDeregistration",
      Index: down.ModifyIndex,
      Op: "delete",
      Record: "NodeStatusUpdated",
    });

    // The audit trail: the node registered it, the node's going down removed it.
    const [row] = [...s.store.table<HistoryRow>("history").all()].filter(
      (h) => h.Object === "service_registration" && h.ObjectID === registration(node, alloc.ID, "web").ID,
    );
    const entries = s.history.entries(row!.Key);
    expect(entries.map((e) => [e.Index, e.Field, e.Cause.Event])).toEqual([
      [upIndex, "(created)", "ServiceRegistrationsUpserted"],
      [down.ModifyIndex, "(deleted)", "NodeStatusUpdated"],
    ]);
    expect(entries[0]!.Actor).toMatchObject({ kind: "node", id: node.id });
    expect(entries[1]!.Cause).toMatchObject({ Cause: "heartbeat-missed", NodeID: node.id });

    // The node is down: it registers nothing until it is back.
    expect((await upsert(node, [registration(node, alloc.ID, "web")])).status).toBe(409);
  });

  it("keeps a job filter key for the Service topic", async () => {
    const { s, node, alloc } = await setup();
    await upsert(node, [registration(node, alloc.ID, "db", { JobID: "web" })]);
    const other = await placeAlloc(s, { NodeID: node.id, JobID: "batch", Job: testJob({ id: "batch" }) });
    await upsert(node, [registration(node, other.ID, "db", { JobID: "batch" })]);
    const { frames } = await readStream(`${s.url}/v1/event/stream?topic=Service:batch&index=0`, (f) =>
      f.some((x) => (x.Events ?? []).length > 0),
    );
    const keys = frames.flatMap((f) => f.Events ?? []).map((e) => e.Key);
    expect(keys).toEqual([registration(node, other.ID, "db").ID]);
  });
});
