import { randomUUID } from "node:crypto";
import { pack } from "msgpackr";
import { afterEach, describe, expect, it } from "vitest";
import { packPlain, unpackPlain } from "../../../src/codec/envelope-codec.ts";
import { encodeGo } from "../../../src/rpc/go-msgpack.ts";
import { startTestServer, type TestServer } from "../../server-harness.ts";
import { placeAlloc, TestNode } from "../node-fixtures.ts";

const running: TestServer[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop();
});

/** A ready node with `count` allocations, and the map Node.GetClientAllocs should answer, in allocation ID order. */
async function nodeWithAllocs(count: number) {
  const s = await startTestServer();
  running.push(s);
  const node = new TestNode(s);
  expect((await node.register()).status).toBe(200);
  expect((await node.heartbeat()).status).toBe(200);
  const expected: Record<string, number> = {};
  const rows = [];
  for (let i = 0; i < count; i++) rows.push(await placeAlloc(s, { NodeID: node.id, ID: randomUUID() }));
  rows.sort((a, b) => (a.ID < b.ID ? -1 : a.ID > b.ID ? 1 : 0));
  for (const r of rows) expected[r.ID] = r.AllocModifyIndex;
  return { s, node, expected };
}

async function callRaw(s: TestServer, node: TestNode, msgpack: boolean): Promise<Response> {
  const body = { NodeID: node.id, MinQueryIndex: 0 };
  return s.call("/v1/rpc/Node.GetClientAllocs", {
    method: "PUT",
    headers: {
      "X-Nomad-Token": node.secret,
      "content-type": msgpack ? "application/msgpack" : "application/json",
    },
    body: msgpack ? pack(body) : JSON.stringify(body),
  });
}

describe("Node.GetClientAllocs reply", () => {
  it("writes the allocation map in ID order, as JSON.stringify of a plain object writes it", async () => {
    const { s, node, expected } = await nodeWithAllocs(12);
    const res = await callRaw(s, node, false);
    expect(res.status).toBe(200);
    const text = await res.text();
    const index = Number(res.headers.get("x-nomad-index"));
    expect(text).toBe(
      JSON.stringify({
        Allocs: expected,
        MigrateTokens: {},
        Index: index,
        LastContact: 0,
        KnownLeader: true,
        NextToken: "",
      }),
    );
  });

  it("writes the same msgpack bytes as for a plain object", async () => {
    const { s, node, expected } = await nodeWithAllocs(12);
    const res = await callRaw(s, node, true);
    expect(res.status).toBe(200);
    const bytes = Buffer.from(await res.arrayBuffer());
    const decoded = unpackPlain(bytes) as { Allocs: Record<string, number> };
    expect(Object.keys(decoded.Allocs)).toEqual(Object.keys(expected));
    expect(decoded.Allocs).toEqual(expected);
    // Decoded maps are plain objects: packed again they give the bytes a plain reply would have had.
    expect(Buffer.from(packPlain(decoded)).equals(bytes)).toBe(true);
  });

  it("an empty map is written as an empty object", async () => {
    const { s, node } = await nodeWithAllocs(0);
    const text = await (await callRaw(s, node, false)).text();
    expect(text.startsWith('{"Allocs":{},"MigrateTokens":{},')).toBe(true);
    const bytes = Buffer.from(await (await callRaw(s, node, true)).arrayBuffer());
    expect((unpackPlain(bytes) as { Allocs: object }).Allocs).toEqual({});
  });
});

describe("an allocation map without a prototype", () => {
  // Node.GetClientAllocs builds its map with Object.create(null) (no hidden
  // class per UUID key); every encoder of a reply must write it as the plain
  // object it stands for.
  for (const size of [0, 1, 11, 40]) {
    it(`encodes as a plain object does (${size} keys)`, () => {
      const plain: Record<string, number> = {};
      const bare: Record<string, number> = Object.create(null);
      for (let i = 0; i < size; i++) {
        const id = randomUUID();
        plain[id] = i * 7_919;
        bare[id] = i * 7_919;
      }
      // A key that looks like an array index is ordered first by both.
      plain["17"] = 1;
      bare["17"] = 1;
      const reply = (allocs: object) => ({ Allocs: allocs, MigrateTokens: {}, Index: 12, KnownLeader: true });
      expect(JSON.stringify(reply(bare))).toBe(JSON.stringify(reply(plain)));
      expect(Buffer.from(packPlain(reply(bare))).equals(Buffer.from(packPlain(reply(plain))))).toBe(true);
      expect(encodeGo(reply(bare)).equals(encodeGo(reply(plain)))).toBe(true);
    });
  }
});
