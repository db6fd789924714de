import { type ChildProcessWithoutNullStreams, execFile, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The Go side of the msgpack tests (test/rpc/go-codec): built once per test
 * file with `go build` (the first build downloads go-msgpack and
 * net-rpc-msgpackrpc from the module proxy, pinned by the committed go.sum).
 */

export const GO_BUILD_TIMEOUT_MS = 180_000;
const moduleDir = join(dirname(fileURLToPath(import.meta.url)), "go-codec");

const goVersion = spawnSync("go", ["version"], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
export const hasGo = goVersion.error === undefined && goVersion.status === 0;

export function warnIfNoGo(what: string): void {
  if (!hasGo) console.warn(`${what} skipped: \`go\` is not on PATH`);
}

export interface GoCodec {
  readonly binary: string;
  run(args: readonly string[], stdin?: string): Promise<string>;
  spawn(args: readonly string[]): ChildProcessWithoutNullStreams;
  dispose(): void;
}

export async function buildGoCodec(): Promise<GoCodec> {
  const dir = mkdtempSync(join(tmpdir(), "chronomad-gocodec-"));
  const binary = join(dir, "gocodec");
  await new Promise<void>((resolve, reject) => {
    execFile(
      "go",
      ["build", "-mod=readonly", "-o", binary, "."],
      { cwd: moduleDir, timeout: GO_BUILD_TIMEOUT_MS, env: { ...process.env, GOFLAGS: "-buildvcs=false" } },
      (err, _stdout, stderr) =>
        err ? reject(new Error(`go build failed: ${stderr || err.message}`)) : resolve(),
    );
  });
  return {
    binary,
    run: (args, stdin) =>
      new Promise((resolve, reject) => {
        const child = execFile(
          binary,
          [...args],
          { maxBuffer: 256 << 20, timeout: 60_000 },
          (err, stdout, stderr) =>
            err
              ? reject(new Error(`gocodec ${args.join(" ")} failed: ${stderr || err.message}`))
              : resolve(stdout),
        );
        child.stdin?.end(stdin ?? "");
      }),
    spawn: (args) => spawn(binary, [...args], { stdio: ["pipe", "pipe", "pipe"] }),
    dispose: () => rmSync(dir, { recursive: true, force: true }),
  };
}

export function jsonLines(text: string): unknown[] {
  return text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as unknown);
}
