import { execFile } from "node:child_process";
import type { CaseResult } from "./expectations.ts";

/**
 * `go test -json` run from vitest, its events folded into one result per
 * test and subtest, for the suites that judge a Go module's tests against an
 * expected-failures list (test/compat/go-api.test.ts, go-api-acl.test.ts).
 * The line decoder also serves nomad-api/run-suite.ts, which folds the
 * events its own way as they stream in.
 */

export interface GoRun {
  readonly code: number | string | null;
  /** Every test and subtest that ended, by full name ("TestACLTokens/create"). */
  readonly tests: Map<string, CaseResult>;
  /** What go printed outside the JSON events (build errors). */
  readonly output: string;
}

/** One line of `go test -json` (the fields read here of Go's test2json event). */
export interface GoTestEvent {
  readonly Action: string;
  readonly Test?: string;
  readonly Output?: string;
}

/**
 * The event on one line of `go test -json` output, or undefined for a line
 * go printed outside the events (build errors, a blank line).
 */
export function parseGoTestEvent(line: string): GoTestEvent | undefined {
  return line.startsWith("{") ? (JSON.parse(line) as GoTestEvent) : undefined;
}

/**
 * A whole run's output folded into one result per test and subtest that
 * ended (its output, without go's own `===`/`---` lines, as the error), and
 * what go printed outside them.
 */
export function parseGoTestJson(stdout: string): { tests: Map<string, CaseResult>; other: string } {
  const tests = new Map<string, CaseResult>();
  const outputs = new Map<string, string>();
  let other = "";
  for (const line of stdout.split("\n")) {
    const ev = parseGoTestEvent(line);
    if (!ev) {
      other += `${line}\n`;
      continue;
    }
    if (!ev.Test) {
      if (ev.Action === "output") other += ev.Output ?? "";
      continue;
    }
    if (ev.Action === "output") outputs.set(ev.Test, (outputs.get(ev.Test) ?? "") + (ev.Output ?? ""));
    if (ev.Action === "pass" || ev.Action === "fail" || ev.Action === "skip") {
      const text = (outputs.get(ev.Test) ?? "")
        .split("\n")
        .filter((l) => !/^\s*(=== |--- )/.test(l) && l.trim() !== "")
        .join("\n");
      tests.set(ev.Test, {
        name: ev.Test,
        ok: ev.Action === "pass",
        error: ev.Action === "skip" ? `skipped: ${text}` : text || undefined,
      });
    }
  }
  return { tests, other };
}

/**
 * Runs `go test -json` with `args` (after -json) in `cwd`. Asynchronous:
 * the server the tests talk to runs in this process.
 */
export function goTestJson(
  cwd: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
): Promise<GoRun> {
  return new Promise((resolve) => {
    execFile(
      "go",
      ["test", "-json", ...args],
      { cwd, env, timeout: timeoutMs, maxBuffer: 32 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err ? ((err as NodeJS.ErrnoException).code ?? (err.killed ? "killed" : null)) : 0;
        const { tests, other } = parseGoTestJson(String(stdout));
        resolve({ code, tests, output: `${other}${stderr}` });
      },
    );
  });
}

/** The results to judge: the subtests of a test that has some, else the test itself. */
export function leaves(tests: Map<string, CaseResult>, top: string): CaseResult[] {
  const subtests = [...tests.values()].filter((r) => r.name.startsWith(`${top}/`));
  if (subtests.length > 0) return subtests;
  const self = tests.get(top);
  return self ? [self] : [];
}
