import { describe, expect, it } from "vitest";
import {
  copyNodeRow,
  NODE_SPEC_KEYS,
  nodeRowFromSpec,
  type ServerFields,
} from "../../projections/node-row.ts";
import type { NodeRow } from "../../projections/nodes.ts";
import { packPlain, unpackPlain } from "../../src/codec/envelope-codec.ts";
import type { NodeSpec } from "../../streams/nodes.ts";

function spec(): NodeSpec {
  const s: Record<string, unknown> = {};
  for (const k of NODE_SPEC_KEYS) s[k] = `${k}-value`;
  s.Attributes = { "kernel.name": "linux" };
  s.Status = "initializing";
  s.SchedulingEligibility = "eligible";
  return s as unknown as NodeSpec;
}

const server: ServerFields = {
  Status: "ready",
  SchedulingEligibility: "ineligible",
  StatusUpdatedAt: 7,
  Events: [],
  DrainStrategy: null,
  LastDrain: null,
  LastMissedHeartbeatIndex: 3,
  LastAllocUpdateIndex: 4,
  CreateIndex: 5,
  ModifyIndex: 6,
};

/** Equal values and the same key order, nested too: what a row's JSON, msgpack and state hash see. */
function sameBytes(a: unknown, b: unknown): void {
  expect(JSON.stringify(a)).toBe(JSON.stringify(b));
  expect(Buffer.from(packPlain(a)).equals(Buffer.from(packPlain(b)))).toBe(true);
}

describe("node rows built field by field", () => {
  it("gives the row the spread gave, for a spec as Node.Register writes it and as a record decodes", () => {
    const s = spec();
    sameBytes(nodeRowFromSpec(s, server), { ...s, ...server });
    const decoded = unpackPlain(packPlain(s)) as NodeSpec;
    sameBytes(nodeRowFromSpec(decoded, server), { ...decoded, ...server });
  });

  it("keeps another field order (a v1 record upcast adds NodePool last) and fields it does not know", () => {
    const { NodePool, ...rest } = spec();
    const upcast = { ...rest, NodePool } as NodeSpec;
    const row = nodeRowFromSpec(upcast, server);
    sameBytes(row, { ...upcast, ...server });
    expect(Object.keys(row).indexOf("NodePool")).toBe(NODE_SPEC_KEYS.length - 1);
    const extra = { ...spec(), Flavour: "x" } as NodeSpec;
    sameBytes(nodeRowFromSpec(extra, server), { ...extra, ...server });
  });

  it("copies a row so that a changed field keeps its place, as a spread with the field did", () => {
    const row = nodeRowFromSpec(spec(), server);
    const copy = copyNodeRow(row);
    copy.Status = "down";
    copy.ModifyIndex = 9;
    sameBytes(copy, { ...row, Status: "down", ModifyIndex: 9 });
    expect(row.Status).toBe("ready");
    const odd = { ...row, Flavour: "x" } as NodeRow;
    const oddCopy = copyNodeRow(odd);
    oddCopy.LastAllocUpdateIndex = 10;
    sameBytes(oddCopy, { ...odd, LastAllocUpdateIndex: 10 });
  });
});
