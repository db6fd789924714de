import type { FastifyReply } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { setReadHeaders } from "../../src/api/blocking-query.ts";
import type { ApiContext } from "../../src/api/context.ts";
import type { Leadership } from "../../src/leadership.ts";
import { startTestServer, type TestServer } from "../server-harness.ts";

describe("GET /v1/operator/state-hash", () => {
  const running: TestServer[] = [];
  afterEach(async () => {
    for (const s of running.splice(0)) await s.stop();
  });

  it("answers the table digest at the applied index, with the leadership epoch", async () => {
    const s = await startTestServer({ args: ["--server-name", "solo"] });
    running.push(s);
    const body = (await (await s.call("/v1/operator/state-hash")).json()) as { Hash: string };
    expect(body).toEqual({
      Index: s.store.appliedIndex,
      Hash: s.store.hash(),
      LeadershipEpoch: 1,
      Leader: "solo",
    });

    // ?index= waits until the server has applied that record.
    const next = s.store.appliedIndex + 1;
    const waiting = s.call(`/v1/operator/state-hash?index=${next}&wait=30s`).then((r) => r.json());
    await s.call("/v1/namespace/web", { method: "PUT", body: "{}" });
    const after = (await waiting) as { Index: number; Hash: string };
    expect(after.Index).toBe(next);
    expect(after.Hash).toBe(s.store.hash());
    expect(after.Hash).not.toBe(body.Hash);
  });

  it("answers ?at_index=N with the digest of the tables as of N, the one the server gave at N", async () => {
    const s = await startTestServer({ args: ["--server-name", "solo", "--snapshot-every", "3"] });
    running.push(s);
    await s.call("/v1/namespace/a", { method: "PUT", body: "{}" });
    const then = (await (await s.call("/v1/operator/state-hash")).json()) as { Index: number; Hash: string };
    for (const name of ["b", "c", "d"]) await s.call(`/v1/namespace/${name}`, { method: "PUT", body: "{}" });
    const now = (await (await s.call("/v1/operator/state-hash")).json()) as { Index: number; Hash: string };
    expect(now.Index).toBeGreaterThan(then.Index);
    expect(now.Hash).not.toBe(then.Hash);

    // The past does not change: no wait, even for an index the log has not reached.
    const past = await s.call(
      `/v1/operator/state-hash?at_index=${then.Index}&index=${now.Index + 100}&wait=5m`,
    );
    expect(past.status).toBe(200);
    expect(past.headers.get("x-chronomad-at-index")).toBe(String(then.Index));
    expect(await past.json()).toEqual({ ...then, LeadershipEpoch: 1, Leader: "solo" });
    // Before anything was written: empty tables, no leader yet.
    const origin = (await (await s.call("/v1/operator/state-hash?at_index=0")).json()) as Record<
      string,
      unknown
    >;
    expect(origin).toMatchObject({ Index: 0, LeadershipEpoch: 0, Leader: "" });
    expect(origin.Hash).not.toBe(then.Hash);
    expect((await s.call(`/v1/operator/state-hash?at_index=${now.Index + 100}`)).status).toBe(400);
  });

  it("keeps the state of a server restarted alone on its log: no new leadership claim", async () => {
    const first = await startTestServer({ keepDir: true, args: ["--server-name", "solo"] });
    const before = await (await first.call("/v1/operator/state-hash")).json();
    await first.close();
    const again = await startTestServer({ dataDir: first.dataDir, args: ["--server-name", "solo"] });
    running.push(again);
    expect(await (await again.call("/v1/operator/state-hash")).json()).toEqual(before);
  });
});

describe("X-Nomad-KnownLeader", () => {
  const headersFor = (leader: string, lastContact: number) => {
    const headers: Record<string, string> = {};
    const reply = {
      header(name: string, value: string) {
        headers[name] = value;
        return reply;
      },
    };
    const leadership: Leadership = {
      isLeader: () => false,
      leader$: undefined as never,
      leaderAddress: () => leader,
      peers: () => [],
      lastContactMs: () => lastContact,
    };
    setReadHeaders({ leadership } as ApiContext, reply as unknown as FastifyReply, 7);
    return headers;
  };

  it("is false while no leader is known, and true with the contact age once one is", () => {
    expect(headersFor("", 1234)).toMatchObject({
      "X-Nomad-KnownLeader": "false",
      "X-Nomad-LastContact": "1234",
    });
    expect(headersFor("10.0.0.1:4646", 12)).toMatchObject({
      "X-Nomad-KnownLeader": "true",
      "X-Nomad-LastContact": "12",
    });
  });
});
