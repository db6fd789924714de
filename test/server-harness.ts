import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { loadConfig, type ServerConfig } from "../src/config.ts";
import { type RunningServer, type ServerDeps, startServer } from "../src/server.ts";

export interface TestServer extends RunningServer {
  readonly url: string;
  readonly dataDir: string;
  /** fetch against the server, relative path. */
  call(path: string, init?: RequestInit): Promise<Response>;
  stop(): Promise<void>;
}

/**
 * A real server on 127.0.0.1 with an ephemeral port and a file log in a temp
 * dir (or the `log` given), for integration tests. `stop` closes it and
 * removes the dir unless `keepDir`.
 */
export async function startTestServer(
  options: { args?: string[]; dataDir?: string; keepDir?: boolean; deps?: ServerDeps } = {},
): Promise<TestServer> {
  const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), "chronomad-server-")));
  const config: ServerConfig = await loadConfig(
    [
      "--http-addr",
      "127.0.0.1:0",
      "--data-dir",
      dataDir,
      "--fsync",
      "never",
      // Tests write large batches in one apply on a busy 2-core machine; load
      // shedding is tested on its own (test/api/load-shedding.test.ts).
      "--shed-reads-after-lag",
      "0",
      // The scheduler on the main thread, in slices, unless a test project
      // runs the scheduler's tests on threads (vitest.config.ts).
      "--scheduler-workers",
      process.env.CHRONOMAD_TEST_SCHEDULER_WORKERS ?? "0",
      ...(options.args ?? []),
    ],
    {},
  );
  const server = await startServer(config, { logger: pino({ level: "silent" }), ...options.deps });
  // Tests of the scheduler on threads mean on threads: not in process while replicas catch up.
  await server.schedulerThreads?.whenReady();
  const url = `http://${server.address}`;
  return {
    ...server,
    url,
    dataDir,
    call: (path, init) => fetch(url + path, init),
    stop: async () => {
      await server.close();
      if (!options.keepDir && !options.dataDir) await rm(dataDir, { recursive: true, force: true });
    },
  };
}
