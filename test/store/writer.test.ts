import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import type { Store } from "../../src/store/store.ts";
import { type EncodedDraft, type Stamp, writeEvents } from "../../src/store/writer.ts";

describe("writeEvents", () => {
  it("stamps drafts and encodes encoded ones, in order, and returns each outcome", async () => {
    const appended: unknown[][] = [];
    const store = {
      append(envelopes: readonly unknown[]) {
        appended.push([...envelopes]);
        return Promise.resolve({ first: 5, last: 4 + envelopes.length });
      },
      waitFor: (i: number) => Promise.resolve({ applied: true, index: i }),
    } as unknown as Store;
    const stamps: Stamp[] = [];
    const bytes = new Uint8Array([0x90]);
    const encoded: EncodedDraft = {
      type: "EvalUpdated",
      allocs: 0,
      encode: (stamp) => {
        stamps.push(stamp);
        return bytes;
      },
    };
    const actor = { kind: "server", id: "s1" } as never;
    const written = await writeEvents(store, 42, actor, [
      { type: "JobRegistered", v: 3, data: { ID: "j" }, cause: "c" } as never,
      encoded,
    ]);
    expect(appended).toEqual([
      [{ type: "JobRegistered", v: 3, at: 42, by: actor, cause: "c", data: { ID: "j" } }, bytes],
    ]);
    expect(stamps).toEqual([{ at: 42, by: actor }]);
    expect(written).toEqual({
      index: 6,
      outcomes: [
        { applied: true, index: 5 },
        { applied: true, index: 6 },
      ],
    });
  });

  // `drafts.map(...)` gave a packed array from the builtin and a holey one
  // from TurboFan's inlined map: the optimized writeEvents deoptimized on
  // its own array inside the inlined Store.append, in every cold run.
  it("hands Store.append arrays of one hidden class, optimized or not", () => {
    const script = fileURLToPath(new URL("./fixtures/writer-array-maps.ts", import.meta.url));
    const out = execFileSync(process.execPath, ["--allow-natives-syntax", "--import", "tsx", script], {
      encoding: "utf8",
      env: { ...process.env, MSGPACKR_NATIVE_ACCELERATION_DISABLED: "true" },
    });
    expect(JSON.parse(out)).toEqual({ optimized: true, shared: true });
  }, 60_000);
});
