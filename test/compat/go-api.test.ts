import { execFile, spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../server-harness.ts";

/**
 * The Go API client of the newest Nomad release against a real server:
 * `go test` in test/compat/go-api registers, plans, reads and lists a job
 * carrying fields Nomad 1.5 does not know, and checks the answers are Nomad
 * 1.5's. The module's go.sum is committed; `.ci/run` downloads the modules
 * beforehand, so here they are only compiled.
 */

const moduleDir = join(dirname(fileURLToPath(import.meta.url)), "go-api");
const GO_TEST_TIMEOUT_MS = 10 * 60_000;

const goVersion = spawnSync("go", ["version"], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
const hasGo = goVersion.error === undefined && goVersion.status === 0;
if (!hasGo) {
  // The default reporter does not list skipped suites by name; say it anyway.
  console.warn("Go API client compatibility test skipped: `go` is not on PATH");
}

interface GoRun {
  readonly code: number | string | null;
  readonly output: string;
}

function goTest(addr: string): Promise<GoRun> {
  const env: NodeJS.ProcessEnv = { ...process.env, NOMAD_ADDR: addr };
  // Nothing from the caller's Nomad settings may reach the client.
  for (const name of [
    "NOMAD_TOKEN",
    "NOMAD_NAMESPACE",
    "NOMAD_REGION",
    "NOMAD_CACERT",
    "NOMAD_CLIENT_CERT",
  ]) {
    delete env[name];
  }
  return new Promise((resolve) => {
    // Asynchronous: the server answering the client runs in this process.
    execFile(
      "go",
      // -mod=readonly: the committed go.mod and go.sum, never updated.
      ["test", "-mod=readonly", "-count=1", "-timeout", "9m", "./..."],
      { cwd: moduleDir, env, timeout: GO_TEST_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err ? ((err as NodeJS.ErrnoException).code ?? (err.killed ? "killed" : null)) : 0;
        resolve({ code, output: `${stdout}${stderr}` });
      },
    );
  });
}

describe.skipIf(!hasGo)("Go API client of the newest Nomad release (go test in test/compat/go-api)", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it(
    "registers, plans, reads and lists a job with fields Nomad 1.5 does not know; a wrong type is a 400",
    async () => {
      const run = await goTest(server.url);
      expect(run.code, `go test failed:\n${run.output}`).toBe(0);
    },
    GO_TEST_TIMEOUT_MS + 30_000,
  );
});
