import { ConfigError, loadConfig, serveUsage, wantsHelp } from "../config.ts";
import { LogError } from "../log/event-log.ts";
import { type RunningServer, startServer } from "../server.ts";
import { boundedStep, type ShutdownProgress } from "../shutdown/bounded-step.ts";
import { SHUTDOWN_MARGIN_MS } from "../shutdown/shutdown-sequence.ts";

/**
 * `chronomad serve`: runs until SIGTERM or SIGINT, then shuts down in order
 * (leader services, election, HTTP, snapshot, log) and exits 0; 1 if a step
 * had to be left behind. `--help` prints the flags and exits 0.
 */
export async function runServe(args: readonly string[]): Promise<number> {
  if (wantsHelp(args)) {
    process.stdout.write(serveUsage());
    return 0;
  }
  let config: Awaited<ReturnType<typeof loadConfig>>;
  try {
    config = await loadConfig(args);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`chronomad serve: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
  let server: Awaited<ReturnType<typeof startServer>>;
  try {
    server = await startServer(config);
  } catch (err) {
    if (err instanceof LogError || err instanceof ConfigError) {
      process.stderr.write(`chronomad serve: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
  return untilStopped(server, config.shutdownGrace);
}

/** How long the second signal's log flush may take before the process goes anyway. */
const LAST_FLUSH_MS = 2_000;

/**
 * Waits for SIGTERM or SIGINT, then shuts the server down in order. A
 * second signal flushes the log and exits at once. Nothing that hangs (a
 * broker gone away, a stuck socket) holds the process past
 * shutdown_grace + SHUTDOWN_MARGIN_MS: it exits then with an error naming
 * the step it was on.
 */
function untilStopped(server: RunningServer, graceMs: number): Promise<number> {
  const logger = server.logger;
  return new Promise<number>((resolve) => {
    let progress: ShutdownProgress | undefined;
    const stop = (signal: NodeJS.Signals) => {
      if (progress) {
        logger.warn({ signal, step: progress.step }, "second signal: flushing the log and exiting now");
        void boundedStep(logger, progress, "flushing the log", LAST_FLUSH_MS, () => server.flushLog(), {
          log: server.log.url,
        }).then(() => process.exit(1));
        return;
      }
      const started: ShutdownProgress = { step: "starting", startedAt: Date.now() };
      progress = started;
      const deadlineMs = graceMs + SHUTDOWN_MARGIN_MS;
      logger.info({ signal, graceMs, deadlineMs }, "shutting down");
      // Unref'd: an orderly shutdown exits as soon as nothing is left, not at the deadline.
      setTimeout(() => {
        logger.error(
          { step: started.step, deadlineMs, log: server.log.url },
          "shutdown did not finish by its deadline; exiting with whatever still hangs",
        );
        process.exit(1);
      }, deadlineMs).unref();
      server.close(started).then(
        ({ clean }) => {
          // A step left behind may hold handles (a Kafka client retrying):
          // nothing useful is left to wait for.
          if (!clean) process.exit(1);
          resolve(0);
        },
        (err: Error) => {
          logger.error({ err }, "shutdown failed");
          process.exit(1);
        },
      );
    };
    process.on("SIGTERM", stop);
    process.on("SIGINT", stop);
  });
}
