import { describe, expect, it } from "vitest";
import { type GoTestEntry, type GoTestRun, resumeSuite } from "./resume-suite.ts";

/** A scripted `go test` run: each test's entry as go would leave it. */
function ran(code: number, tests: Record<string, GoTestEntry>): GoTestRun {
  return { code, tests: new Map(Object.entries(tests)) };
}

const pass = (): GoTestEntry => ({ result: "pass", output: ["=== RUN\n"] });
const panicked = (): GoTestEntry => ({
  output: ["=== RUN\n"],
  crash: ["panic: Fail in goroutine after TestLease has completed\n", "goroutine 7 [running]:\n"],
});

/** Runs resumeSuite over scripted runs, keeping the skip list each run was given. */
async function resume(runs: GoTestRun[]) {
  const skips: string[][] = [];
  const said: string[] = [];
  const outcomes = await resumeSuite(
    async (skip) => {
      skips.push([...skip]);
      const next = runs.shift();
      if (!next) throw new Error("more runs than scripted");
      return next;
    },
    (line) => said.push(line),
  );
  return { outcomes: new Map(outcomes.map((o) => [o.name, o])), skips, said };
}

describe("resumeSuite", () => {
  it("resumes after the binary dies, skipping what ended, and judges the crashed test failed with the panic", async () => {
    const { outcomes, skips, said } = await resume([
      ran(2, {
        TestA: pass(),
        TestLease: { result: "fail", output: [] },
        TestRenew: panicked(),
        TestP: { output: [] },
      }),
      ran(0, { TestP: pass(), TestZ: pass() }),
    ]);
    expect(skips).toEqual([[], ["TestA", "TestLease", "TestRenew"]]);
    expect(outcomes.get("TestRenew")?.result).toBe("fail");
    expect(outcomes.get("TestRenew")?.output).toMatch(/^panic: Fail in goroutine/);
    expect([...outcomes.values()].filter((o) => o.result === "pass").map((o) => o.name)).toEqual([
      "TestA",
      "TestP",
      "TestZ",
    ]);
    expect(said.join("\n")).toMatch(/died in TestRenew/);
  });

  it("does not rerun a run that failed in the ordinary way", async () => {
    const { outcomes, skips } = await resume([
      ran(1, { TestA: pass(), TestB: { result: "fail", output: ["x\n"] } }),
    ]);
    expect(skips).toHaveLength(1);
    expect(outcomes.get("TestB")?.result).toBe("fail");
  });

  it("stops when a resumed run ends nothing, failing what never ended", async () => {
    const { outcomes, skips } = await resume([
      ran(2, { TestA: pass(), TestHang: { output: ["=== RUN\n", "waiting\n"] } }),
      ran(2, { TestHang: { output: ["=== RUN\n"] } }),
    ]);
    expect(skips).toEqual([[], ["TestA"]]);
    expect(outcomes.get("TestHang")).toMatchObject({ result: "fail", output: "=== RUN\n" });
  });

  it("gives up after three resumes", async () => {
    const dies = (n: number) => ran(2, { [`TestCrash${n}`]: panicked(), TestLeft: { output: [] } });
    const { outcomes, skips } = await resume([dies(1), dies(2), dies(3), dies(4)]);
    expect(skips).toHaveLength(4);
    expect(outcomes.get("TestLeft")?.result).toBe("fail");
  });
});
