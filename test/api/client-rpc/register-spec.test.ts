import { afterEach, describe, expect, it } from "vitest";
import { NODE_SPEC_KEYS } from "../../../projections/node-row.ts";
import type { NodeRow } from "../../../projections/nodes.ts";
import { EnvelopeCodec } from "../../../src/codec/envelope-codec.ts";
import { DEFAULT_SHAPE, nodeBody } from "../../../src/nodesim/node-body.ts";
import { allSchemas } from "../../../streams/index.ts";
import type { NodeRegistered } from "../../../streams/nodes.ts";
import { startTestServer, type TestServer } from "../../server-harness.ts";
import { nodeRow, TestNode } from "../node-fixtures.ts";

const running: TestServer[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop();
});

async function registered(s: TestServer, id: string): Promise<NodeRegistered> {
  const codec = new EnvelopeCodec(allSchemas);
  for await (const batch of s.log.read(1)) {
    for (const r of batch) {
      const e = codec.decode(r.bytes);
      if (e.type === "NodeRegistered" && (e.data as NodeRegistered).Node.ID === id)
        return e.data as NodeRegistered;
    }
  }
  throw new Error(`no NodeRegistered for ${id}`);
}

describe("Node.Register's record and row", () => {
  it("writes the spec's fields in the order the projection builds rows from by a literal, and the row a spread gave", async () => {
    const s = await startTestServer();
    running.push(s);
    const node = new TestNode(s);
    const body = nodeBody({ id: node.id, secret: node.secret, name: node.name, index: 1 }, DEFAULT_SHAPE);
    expect((await node.rpc("Node.Register", { Node: body })).status).toBe(200);
    const { Node: spec } = await registered(s, node.id);
    expect(Object.keys(spec)).toEqual(NODE_SPEC_KEYS);
    const row = nodeRow(s, node.id) as NodeRow;
    const spread = {
      ...spec,
      StatusUpdatedAt: row.StatusUpdatedAt,
      Events: row.Events,
      DrainStrategy: null,
      LastDrain: null,
      LastMissedHeartbeatIndex: 0,
      LastAllocUpdateIndex: 0,
      CreateIndex: row.CreateIndex,
      ModifyIndex: row.ModifyIndex,
    };
    expect(JSON.stringify(row)).toBe(JSON.stringify(spread));
    expect(spec.ComputedClass).toMatch(/^v1:\d+$/);
  });
});
