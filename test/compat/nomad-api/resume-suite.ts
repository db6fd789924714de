import type { TestOutcome } from "./suite-report.ts";

export interface GoTestEntry {
  result?: TestOutcome["result"];
  /** Its first lines. */
  output: string[];
  /** The first lines of a panic or fatal error printed while it ran: the binary died in it. */
  crash?: string[];
}

/** Where a test binary's death starts in the output go gives the test that was running. */
export const CRASH = /^(panic: |fatal error: )/;

/** One `go test` run: how each test that started ended, and how go itself ended. */
export interface GoTestRun {
  /** Every top-level test that started; `result` is unset for those still running when go ended. */
  readonly tests: Map<string, GoTestEntry>;
  readonly code: number | null;
}

/** How many times a run whose test binary died partway is resumed. */
const MAX_RESUMES = 3;

/**
 * The whole suite, resumed when the test binary dies partway. Go's testing
 * panics the binary when a check fails in a goroutine that outlived its test
 * ("Fail in goroutine after … has completed"), and the suite's lock leaser
 * tests, timed to the millisecond against mocks, do that when they miss
 * under load: one such miss would otherwise fail every test not yet run.
 * The test whose output holds the panic is judged failed, with the panic as
 * its reason (then rerun alone with the other few failures, as any flake);
 * the run resumes with every test that ended skipped. A binary that dies
 * without progress, or more than MAX_RESUMES times, leaves the tests it did
 * not end failed, as a timeout does.
 */
export async function resumeSuite(
  run: (skip: readonly string[]) => Promise<GoTestRun>,
  say: (line: string) => void,
): Promise<TestOutcome[]> {
  const ended = new Map<string, TestOutcome>();
  for (let resumes = 0; ; resumes += 1) {
    const skip = [...ended.keys()];
    const ran = await run(skip);
    const unfinished: TestOutcome[] = [];
    let died = false;
    for (const [name, t] of ran.tests) {
      if (t.result) ended.set(name, { name, result: t.result, output: t.output.join("") });
      else if (t.crash) {
        died = true;
        ended.set(name, { name, result: "fail", output: t.crash.join("") });
        say(`the test binary died in ${name}: ${t.crash[0]?.trim()}`);
      } else unfinished.push({ name, result: "fail", output: t.output.join("") });
    }
    const resume = (died || unfinished.length > 0) && ended.size > skip.length && resumes < MAX_RESUMES;
    if (!resume) {
      // A test still running when go test ended (a timeout, a panic) failed.
      for (const test of unfinished) ended.set(test.name, test);
      return [...ended.values()];
    }
    say(`go test ended early (exit ${ran.code}); resuming without the ${ended.size} tests that ended`);
  }
}
