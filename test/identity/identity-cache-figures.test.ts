import { getHeapStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import type { AllocRow } from "../../projections/allocs.ts";
import { minimalAllocJob } from "../../src/bench/minimal-alloc-job.ts";
import {
  SignedAlloc,
  signIdentitiesElsewhere,
  signIntoCache,
  withSignedIdentities,
} from "../../src/identity/alloc-identities.ts";
import { signJwsInput } from "../../src/identity/jwt.ts";
import { Keyring } from "../../src/keyring/keyring.ts";
import { countHeapAllocation } from "../heap-allocation.ts";
import { IdentityWorld } from "./identity-fixtures.ts";

/**
 * The figures docs/architecture.md ("What the burst allocates") quotes for
 * the signed-identity cache: 20,000 allocations of one job (one task a
 * group, then two), signed into the cache as the plan applier does (signing
 * "elsewhere", answered from signatures made beforehand so that the
 * signatures' own cost is left out), then pulled by their node ten at a time
 * twice, as a client does after the placement and after its status update.
 * Heap retained per cached allocation (forced GCs before and after) while
 * its JWTs are being signed, once signed and once served, heap
 * allocated and process CPU per allocation in each step. Run on demand only:
 * CHRONOMAD_IDENTITY_FIGURES=1 npx vitest run test/identity/identity-cache-figures.test.ts
 */
const on = process.env.CHRONOMAD_IDENTITY_FIGURES !== undefined;
const ALLOCS = 20_000;

describe.skipIf(!on)("the signed-identity cache (figures)", () => {
  it("reports heap kept and allocated, and CPU, per allocation", async () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const collect = () => {
      for (let i = 0; i < 3; i++) gc();
    };
    const lines: string[] = [];
    for (const tasks of [1, 2]) {
      const world = new IdentityWorld();
      const key = await world.addKey();
      const job = minimalAllocJob("web", [
        {
          Name: "frontend",
          Count: ALLOCS,
          Tasks: Array.from({ length: tasks }, (_, i) => ({ Name: `task-${i}` })),
        },
      ]);
      const rows: AllocRow[] = Array.from({ length: ALLOCS }, (_, i) =>
        world.addAlloc({
          SigningKeyID: key.keyId,
          NodeID: "node-1",
          CreateTime: (1_700_000_000 + (i >> 10)) * 1e9,
          Job: job,
        }),
      );
      // Signatures made once, then handed back as a scheduler thread would (once `held` is let go).
      const signatures = new Map<string, string>();
      let held: Promise<void> | undefined;
      let asked = 0;
      const elsewhere = async (k: Parameters<typeof signJwsInput>[0], inputs: readonly string[]) => {
        asked += inputs.length;
        await held;
        return inputs.map((input) => {
          let s = signatures.get(input);
          if (s === undefined) {
            s = signJwsInput(k, input);
            signatures.set(input, s);
          }
          return s;
        });
      };
      const fresh = () => {
        const keyring = new Keyring();
        keyring.add(world.keyring.get(key.keyId)!);
        signIdentitiesElsewhere(keyring, elsewhere);
        return keyring;
      };
      await signIntoCache(fresh(), rows);
      for (let round = 1; round <= 3; round++) {
        let keyring: Keyring | undefined = fresh();
        collect();
        let base = getHeapStatistics().used_heap_size;
        const step = async (f: () => Promise<unknown>) => {
          const counting = countHeapAllocation();
          const cpu0 = process.cpuUsage();
          await f();
          const cpu = process.cpuUsage(cpu0);
          const { bytes } = counting.stop();
          return `${(bytes / ALLOCS).toFixed(0)} B, ${((cpu.user + cpu.system) / ALLOCS).toFixed(2)} µs`;
        };
        // What the cache holds while every JWT is still being signed: what a scavenge then copies.
        let release!: () => void;
        held = new Promise((resolve) => {
          release = resolve;
        });
        asked = 0;
        const signing = signIntoCache(keyring, rows);
        while (asked < ALLOCS * tasks) await new Promise((resolve) => setTimeout(resolve, 5));
        collect();
        const keptSigning = (getHeapStatistics().used_heap_size - base) / ALLOCS;
        release();
        held = undefined;
        await signing;
        keyring = fresh();
        collect();
        base = getHeapStatistics().used_heap_size;
        const signed = await step(async () =>
          expect(await signIntoCache(keyring!, rows)).toBe(ALLOCS * tasks),
        );
        collect();
        const keptSigned = (getHeapStatistics().used_heap_size - base) / ALLOCS;
        const pull = () => async () => {
          for (let i = 0; i < ALLOCS; i += 10) {
            const served = await withSignedIdentities(keyring!, rows.slice(i, i + 10), "node-1", () => {
              throw new Error("unexpected");
            });
            if (!(served[0] instanceof SignedAlloc)) throw new Error("not signed");
          }
        };
        const first = await step(pull());
        const second = await step(pull());
        collect();
        const keptServed = (getHeapStatistics().used_heap_size - base) / ALLOCS;
        keyring = undefined;
        collect();
        const left = (getHeapStatistics().used_heap_size - base) / ALLOCS;
        lines.push(
          `${tasks} task(s), round ${round}: kept ${keptSigning.toFixed(0)} B being signed, ${keptSigned.toFixed(0)} B signed, ${keptServed.toFixed(0)} B served (${left.toFixed(0)} B after the cache went); ` +
            `sign into cache ${signed}; first pull ${first}; second pull ${second} (per allocation)`,
        );
      }
    }
    console.log(lines.join("\n"));
  }, 600_000);
});
