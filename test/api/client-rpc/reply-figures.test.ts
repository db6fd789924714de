import { describe, expect, it } from "vitest";
import type { AllocRow } from "../../../projections/allocs.ts";
import { clientReplyJson, replySlabsMade, replyWritten } from "../../../src/api/client-rpc/reply-json.ts";
import { SignedAlloc } from "../../../src/identity/alloc-identities.ts";
import { taskNames } from "../../../src/identity/claims.ts";
import { storeOverKeptLog } from "../../fixtures/kept-log-store.ts";
import { allocatedDuring } from "../../heap-allocation.ts";

/**
 * The figures docs/architecture.md ("What the burst allocates") quotes for
 * Alloc.GetAllocs' reply: the allocation rows of a kept load-bench log
 * (`--keep-data`: its log/ directory; the first 20,000 records replayed),
 * answered ten at a time, the heap allocated (from V8's heap statistics
 * around each GC) and the CPU per reply, its bytes for the socket included:
 * the rows as placed (what a node pulls during a burst: no task states yet)
 * and as they were last (running, their task states' events). Run on demand only:
 * CHRONOMAD_REPLY_FIGURES=/path/to/log npx vitest run test/api/client-rpc/reply-figures.test.ts
 */
const dir = process.env.CHRONOMAD_REPLY_FIGURES;
const RECORDS = 20_000;
/** Passes over the replies per round. */
const PASSES = 2;

describe.skipIf(!dir)("Alloc.GetAllocs replies (figures)", () => {
  it("reports heap bytes and CPU per reply of ten allocations", async () => {
    const store = await storeOverKeptLog(dir!, RECORDS);
    const placed: AllocRow[] = [];
    const placements = store.change$.subscribe((c) => {
      if (c.table === "allocs" && c.before === undefined && c.after !== undefined)
        placed.push(c.after as AllocRow);
    });
    await store.start();
    placements.unsubscribe();
    const latest = [...store.table<AllocRow>("allocs").all()];
    await store.stop();
    const lines: string[] = [];
    // The node's own allocations as pulled: one JWT (about 450 bytes, as
    // Nomad's) for each task, the identities' object kept for the allocation.
    const signed = placed.map((row) => {
      const identities: Record<string, string> = {};
      for (const task of taskNames(row)) identities[task] = fakeJwt(row.ID, task);
      return new SignedAlloc(row, Object.freeze(identities));
    });
    for (const [name, rows] of [
      ["as placed", placed],
      ["as placed, signed", signed],
      ["as last", latest],
    ] as const) {
      lines.push(`${name}:`);
      lines.push(...replyFigures(rows));
    }
    console.log(lines.join("\n"));
  }, 600_000);
});

function fakeJwt(id: string, task: string): string {
  const part = (text: string) => Buffer.from(text).toString("base64url");
  const claims = {
    nomad_allocation_id: id,
    nomad_task: task,
    sub: `default:web:${task}`,
    iat: 1_795_944_118,
  };
  return `${part('{"alg":"EdDSA","kid":"7f4b0c3e-2f7a-4d1e-9d51-0b3c1e2a4f6d","typ":"JWT"}')}.${part(JSON.stringify(claims))}.${"s".repeat(86)}`;
}

function replyFigures(rows: readonly (AllocRow | SignedAlloc)[]): string[] {
  const bodies: Record<string, unknown>[] = [];
  for (let i = 0; i + 10 <= rows.length; i += 10)
    bodies.push({ Allocs: rows.slice(i, i + 10), Index: 1234, LastContact: 0, KnownLeader: true });
  expect(bodies.length).toBeGreaterThan(0);
  let replyBytes = 0;
  const lines: string[] = [];
  // Rounds whose replies are said written at once (as a reading client's
  // socket's `finish` does: their slabs are used again), alternating with
  // rounds whose replies are not (each slab new, as before that).
  for (let round = 0; round < 6; round++) {
    const written = round % 2 === 1;
    const made = replySlabsMade();
    const { bytes, scavenges, cpuUs } = allocatedDuring(() => {
      for (let r = 0; r < PASSES; r++)
        for (const body of bodies) {
          // A text is made flat and UTF-8 to be sent (its length counted, the socket written): bytes are sent as they are.
          const reply: string | Buffer = clientReplyJson(body);
          replyBytes += typeof reply === "string" ? Buffer.from(reply).length : reply.length;
          if (written && typeof reply !== "string") replyWritten(reply);
        }
    });
    const calls = PASSES * bodies.length;
    lines.push(
      `round ${round + 1}, ${written ? "written" : "kept"}: ${(bytes / calls / 1024).toFixed(1)} KiB of heap and ${(cpuUs / calls).toFixed(0)} µs CPU a reply (${calls} replies of 10, ${scavenges} GCs, ${replySlabsMade() - made} new slabs, ${Math.round(replyBytes / calls / (round + 1))} B of JSON each)`,
    );
  }
  return lines;
}
