import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { ALLOC_ROW_KEYS, allocRowFromSpec, copyAllocRow } from "../../projections/alloc-row.ts";
import type { AllocRow } from "../../projections/allocs.ts";
import { packPlain, unpackPlain } from "../../src/codec/envelope-codec.ts";
import { newAllocation } from "../../streams/allocs.ts";

/** Equal values and the same key order, nested too: what a row's JSON, msgpack and state hash see. */
function sameBytes(a: unknown, b: unknown): void {
  expect(JSON.stringify(a)).toBe(JSON.stringify(b));
  expect(Buffer.from(packPlain(a)).equals(Buffer.from(packPlain(b)))).toBe(true);
}

function compactRow(): AllocRow {
  const row: Record<string, unknown> = {};
  for (const k of ALLOC_ROW_KEYS) row[k] = `${k}-value`;
  row.CreateIndex = 3;
  row.ModifyIndex = 4;
  row.AllocModifyIndex = 4;
  row.TaskStates = null;
  row.DesiredTransition = {};
  return row as unknown as AllocRow;
}

describe("allocation rows copied field by field", () => {
  it("copies a compact placement's row so that a changed field keeps its place, as a spread did", () => {
    const row = compactRow();
    const copy = copyAllocRow(row);
    copy.ClientStatus = "running";
    copy.TaskStates = { t: { State: "running" } };
    copy.ModifyIndex = 9;
    sameBytes(copy, {
      ...row,
      ClientStatus: "running",
      TaskStates: { t: { State: "running" } },
      ModifyIndex: 9,
    });
    expect(row.ClientStatus).toBe("ClientStatus-value");
    const decoded = unpackPlain(packPlain(row)) as AllocRow;
    sameBytes(copyAllocRow(decoded), row);
  });

  it("keeps another order and fields it does not know, and appends a field the row lacks", () => {
    const spec = newAllocation({
      ID: "a",
      Namespace: "default",
      JobID: "web",
      TaskGroup: "g",
      NodeID: "n",
      CreateTime: 1,
    });
    const row = allocRowFromSpec(spec);
    row.DeploymentStatus = null;
    row.CreateIndex = 5;
    row.ModifyIndex = 5;
    row.AllocModifyIndex = 5;
    sameBytes(row, { ...spec, DeploymentStatus: null, CreateIndex: 5, ModifyIndex: 5, AllocModifyIndex: 5 });
    const odd = { ...row, Flavour: "x" } as AllocRow;
    const copy = copyAllocRow(odd);
    copy.ClientStatus = "lost";
    sameBytes(copy, { ...odd, ClientStatus: "lost" });
    const { SigningKeyID: _gone, ...older } = compactRow();
    const olderCopy = copyAllocRow(older as AllocRow);
    olderCopy.SigningKeyID = "k";
    sameBytes(olderCopy, { ...older, SigningKeyID: "k" });
  });

  // `{ ...stored, ClientStatus, … }` gave each spread site's rows a hidden
  // class of its own (seven classes in a 5,000-node burst's replay): every
  // reader of allocation rows met new ones, a deopt and a recompile each.
  // Checked in a child with V8's natives syntax, for every path that makes
  // a row; fails on the spreads.
  it("is built so that the rows of every path share their shape's hidden class", () => {
    const script = fileURLToPath(new URL("./fixtures/alloc-row-maps.ts", import.meta.url));
    const out = execFileSync(process.execPath, ["--allow-natives-syntax", "--import", "tsx", script], {
      encoding: "utf8",
      env: { ...process.env, MSGPACKR_NATIVE_ACCELERATION_DISABLED: "true" },
    });
    expect(JSON.parse(out)).toEqual({
      failures: [],
      states: {
        compactKeys: true,
        transition: true,
        stopped: true,
        inPlace: true,
        reconnected: true,
        lost: true,
      },
      result: {
        placement: true,
        fullPlacement: true,
        clientUpdate: true,
        clientUpdateFull: true,
        desiredTransition: true,
        stop: true,
        inPlace: true,
        disconnect: true,
        reconnect: true,
        lost: true,
        lostFull: true,
      },
    });
  }, 60_000);
});
