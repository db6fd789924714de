import { describe, expect, it } from "vitest";
import { suiteReport, type TestOutcome } from "./suite-report.ts";

const outcome = (name: string, result: TestOutcome["result"], output = ""): TestOutcome => ({
  name,
  result,
  output,
});

describe("the api suite's report", () => {
  it("is ok when exactly the listed tests fail", () => {
    const report = suiteReport(
      [outcome("TestA", "fail"), outcome("TestB", "pass"), outcome("TestC", "skip")],
      { TestA: "ACL (issue 17)" },
      false,
    );
    expect(report.ok).toBe(true);
    expect(report.text).toContain("2 of 3 cases pass; 1 fail as listed");
  });

  it("fails on a failure not listed, showing what the test printed", () => {
    const report = suiteReport(
      [outcome("TestA", "fail", "=== RUN TestA\n    x_test.go:9: boom\n")],
      {},
      false,
    );
    expect(report.ok).toBe(false);
    expect(report.text).toContain("FAIL TestA");
    expect(report.text).toContain("x_test.go:9: boom");
    expect(report.text).not.toContain("=== RUN");
  });

  it("fails when a listed test passes, so the list only shrinks", () => {
    const report = suiteReport([outcome("TestA", "pass")], { TestA: "ACL" }, false);
    expect(report.ok).toBe(false);
    expect(report.text).toContain("remove it from the list");
  });

  it("fails on a listed test that does not exist, unless only part of the suite ran", () => {
    expect(suiteReport([], { TestGone: "ACL" }, false).ok).toBe(false);
    expect(suiteReport([], { TestGone: "ACL" }, true).ok).toBe(true);
  });

  it("says how a test of the either-outcome list went without judging it", () => {
    const either = { TestT: "timing" };
    for (const result of ["pass", "fail"] as const) {
      const report = suiteReport([outcome("TestA", "pass"), outcome("TestT", result)], {}, false, either);
      expect(report.ok).toBe(true);
      expect(report.text).toContain(`EITHER TestT: ${result}ed, not judged (timing)`);
      expect(report.text).toContain("1 of 1 cases pass");
    }
    expect(suiteReport([], {}, false, either).text).toContain("STALE TestT");
  });
});
