import { pino } from "pino";
import { loadConfig } from "../config.ts";
import { type RunningServer, startServer } from "../server.ts";

/** A silent in-process server on an ephemeral loopback port, for the benchmarks; `args` add to or override the defaults. */
export async function startBenchServer(args: readonly string[]): Promise<RunningServer> {
  const config = await loadConfig(["--http-addr", "127.0.0.1:0", "--log-level", "silent", ...args], {});
  return startServer(config, { logger: pino({ level: "silent" }) });
}
