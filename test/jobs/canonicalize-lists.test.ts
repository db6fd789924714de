import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

describe("canonicalizeJob's lists", () => {
  // Made by `Array.prototype.map`, a job's lists were packed arrays from the
  // interpreter and holey ones from TurboFan's inlined map: the optimized
  // canonicalizeJob deoptimized on its own Datacenters list in every cold
  // server. Checked in a child with V8's natives syntax.
  it("have one hidden class whether canonicalizeJob is optimized or not", () => {
    const script = fileURLToPath(new URL("./fixtures/canonical-list-maps.ts", import.meta.url));
    const out = execFileSync(process.execPath, ["--allow-natives-syntax", "--import", "tsx", script], {
      encoding: "utf8",
      env: { ...process.env, MSGPACKR_NATIVE_ACCELERATION_DISABLED: "true" },
    });
    expect(JSON.parse(out)).toEqual({ optimized: true, shared: [true, true, true] });
  }, 60_000);
});
