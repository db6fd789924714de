import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

/** The `nomad` binary: NOMAD_BIN, else the one ../shared/scripts/build-nomad.sh caches. */
export const NOMAD_BIN =
  process.env.NOMAD_BIN || join(homedir(), ".cache", "chronomad", "nomad-1.6.1", "nomad");
export const hasNomad = existsSync(NOMAD_BIN);

export interface CliRun {
  readonly args: readonly string[];
  readonly code: number | null;
  readonly signal: string | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `nomad args…` with stdin closed; never rejects (a timeout is a SIGTERM). */
export function runNomad(
  args: readonly string[],
  options: { readonly cwd: string; readonly env: NodeJS.ProcessEnv; readonly timeout: number },
): Promise<CliRun> {
  return new Promise((resolve) => {
    // Asynchronous: the server answering the CLI runs in this process.
    const child = execFile(
      NOMAD_BIN,
      [...args],
      { ...options, maxBuffer: 8 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const e = err as (NodeJS.ErrnoException & { code?: number | string; signal?: string }) | null;
        resolve({
          args,
          code: e === null ? 0 : typeof e.code === "number" ? e.code : null,
          signal: e?.signal ?? null,
          stdout: String(stdout),
          stderr: String(stderr) + (e && typeof e.code === "string" ? `\n(${e.code}: ${e.message})` : ""),
        });
      },
    );
    child.stdin?.end();
  });
}

export function describeRun(run: CliRun): string {
  const status = run.signal ? `killed by ${run.signal} (timed out?)` : `exit ${run.code}`;
  const clip = (s: string) => (s.length > 4000 ? `${s.slice(0, 4000)}\n…(${s.length - 4000} more)` : s);
  return `nomad ${run.args.join(" ")}: ${status}\n--- stdout ---\n${clip(run.stdout)}\n--- stderr ---\n${clip(run.stderr)}`;
}

/** The run exited `code` (0 by default), did not panic, and its output matches every pattern. */
export function expectRun(run: CliRun, patterns: readonly RegExp[] = [], code = 0): void {
  const output = `${run.stdout}\n${run.stderr}`;
  if (run.code !== code) throw new Error(`want exit ${code}; ${describeRun(run)}`);
  if (/^panic: /m.test(output)) throw new Error(`the CLI panicked; ${describeRun(run)}`);
  for (const p of patterns) {
    if (!p.test(output)) throw new Error(`want a line matching ${p}; ${describeRun(run)}`);
  }
}
