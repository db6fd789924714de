import { type AddressInfo, createServer } from "node:net";
import { jsonEvent, type ResolvedEvent } from "@eventstore/db-client";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import {
  EsdbLeadership,
  LEASE_EVENT_TYPE,
  leaseOf,
  MEMBER_EVENT_TYPE,
} from "../../src/cluster/esdb-leadership.ts";
import type { Lease } from "../../src/cluster/esdb-lease.ts";

const lease: Lease = { server: "a", instance: "i-1", address: "a:4646", rpc: "a:4647", term: 3, ttlMs: 6000 };

/** An event as the client hands it back once appended, built from what the election appends. */
function recorded(type: string, data: unknown, isJson = true): ResolvedEvent {
  const sent = jsonEvent({ type, data: data as Record<string, unknown> });
  // The shape of a JSONRecordedEvent (types/events.d.ts), built by hand: no server here.
  const event = { ...sent, streamId: "s-leader", revision: 7n, isJson, created: new Date(0) };
  return { event } as unknown as ResolvedEvent;
}

describe("EventStoreDB election events", () => {
  it("reads back the lease and member events it appends", () => {
    expect(leaseOf(recorded(LEASE_EVENT_TYPE, { ...lease }))).toEqual(lease);
    expect(leaseOf(recorded(MEMBER_EVENT_TYPE, { ...lease, ttlMs: 0 }))).toEqual({ ...lease, ttlMs: 0 });
  });

  it("ignores events of other types, binary events and events missing a holder", () => {
    expect(leaseOf(recorded("chronomad.record", { ...lease }))).toBeUndefined();
    expect(leaseOf(recorded(LEASE_EVENT_TYPE, { ...lease }, false))).toBeUndefined();
    expect(leaseOf(recorded(LEASE_EVENT_TYPE, { server: "a", address: "a:4646" }))).toBeUndefined();
    expect(leaseOf({} as ResolvedEvent)).toBeUndefined();
  });

  it("neither leads nor names a leader before it has joined, and closes without having connected", async () => {
    const election = new EsdbLeadership({
      logUrl: "esdb://127.0.0.1:1?tls=false&stream=s",
      serverName: "a",
      sessionTimeoutMs: 6000,
      logger: pino({ level: "silent" }),
    });
    expect(election.isLeader()).toBe(false);
    expect(election.leaderAddress()).toBe("");
    expect(election.members()).toEqual([
      { name: "a", address: "", rpcAddress: "", leader: false, self: true },
    ]);
    await election.close();
    expect(election.isLeader()).toBe(false);
  });

  it("fails to join, as an io LogError naming the lease stream, when nothing listens there", async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const election = new EsdbLeadership({
      logUrl: `esdb://127.0.0.1:${port}?tls=false&stream=s`,
      serverName: "a",
      sessionTimeoutMs: 6000,
      logger: pino({ level: "silent" }),
    });
    const joined = election.join("127.0.0.1:4646");
    await expect(joined).rejects.toThrow(/cannot join the leader election on EventStoreDB stream s-leader/);
    await expect(joined).rejects.toMatchObject({ code: "io" });
    await election.close();
    expect(election.isLeader()).toBe(false);
  });
});
