import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { main } from "../../src/cli/main.ts";

/** Runs `chronomad ...args` in this process; what it wrote to stdout and stderr. */
async function run(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  vi.spyOn(process.stdout, "write").mockImplementation((chunk) => {
    stdout += String(chunk);
    return true;
  });
  vi.spyOn(process.stderr, "write").mockImplementation((chunk) => {
    stderr += String(chunk);
    return true;
  });
  try {
    const code = await main(args);
    return { code, stdout, stderr };
  } finally {
    vi.restoreAllMocks();
  }
}

const USAGE_OF: Record<string, RegExp> = {
  serve: /^Usage: chronomad serve \[flags\]/,
  replay: /^Usage: chronomad replay --from/,
  snapshot: /^Usage:\n {2}chronomad snapshot save/,
  bench: /^Usage: chronomad bench/,
  nodesim: /^Usage: chronomad nodesim --server URL/,
  version: /^Usage: chronomad version/,
};

describe("chronomad <command> --help", () => {
  afterEach(() => vi.restoreAllMocks());

  for (const [command, usage] of Object.entries(USAGE_OF)) {
    it(`${command}: --help, -h and \`help ${command}\` print its usage on stdout and exit 0`, async () => {
      for (const args of [
        [command, "--help"],
        [command, "-h"],
        ["help", command],
      ]) {
        const { code, stdout, stderr } = await run(...args);
        expect(code, `${args.join(" ")}: ${stderr}`).toBe(0);
        expect(stderr).toBe("");
        expect(stdout).toMatch(usage);
        expect(stdout).toMatch(/-h, --help/);
      }
    });
  }

  it("snapshot subcommands take --help too, and serve documents --read-only", async () => {
    for (const sub of ["save", "restore", "inspect"]) {
      const { code, stdout } = await run("snapshot", sub, "--help");
      expect(code).toBe(0);
      expect(stdout).toMatch(USAGE_OF.snapshot!);
    }
    const serve = await run("serve", "--read-only", "-h");
    expect(serve.code).toBe(0);
    expect(serve.stdout).toMatch(/--read-only\[=BOOL\] +forensic mode: .*env CHRONOMAD_READ_ONLY/);
  });

  it("help with no command, or an unknown one", async () => {
    const all = await run("help");
    expect(all.code).toBe(0);
    expect(all.stdout).toMatch(/^Usage: chronomad <command>/);
    const unknown = await run("help", "nope");
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/unknown command "nope"/);
  });

  it("through the real binary: replay --help exits 0 with the usage on stdout", () => {
    const bin = join(import.meta.dirname, "../../bin/chronomad.js");
    const result = spawnSync(process.execPath, [bin, "replay", "--help"], { encoding: "utf8" });
    expect(result.status, result.stderr).toBe(0);
    expect(result.stderr).toBe("");
    expect(result.stdout).toMatch(USAGE_OF.replay!);
  }, 60_000);
});
