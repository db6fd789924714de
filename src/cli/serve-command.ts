import { ConfigError, loadConfig } from "../config.ts";
import { LogError } from "../log/event-log.ts";
import { startServer } from "../server.ts";

/**
 * `chronomad serve`: runs until SIGTERM or SIGINT, then stops accepting,
 * finishes in-flight appends, writes a snapshot and exits 0. A second signal
 * exits at once.
 */
export async function runServe(args: readonly string[]): Promise<number> {
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
  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: NodeJS.Signals) => {
      if (stopping) {
        server.logger.warn({ signal }, "second signal: exiting now");
        process.exit(1);
      }
      stopping = true;
      server.logger.info({ signal }, "shutting down");
      server.close().then(
        () => resolve(0),
        (err: Error) => {
          server.logger.error({ err }, "shutdown failed");
          resolve(1);
        },
      );
    };
    process.on("SIGTERM", stop);
    process.on("SIGINT", stop);
  });
}
