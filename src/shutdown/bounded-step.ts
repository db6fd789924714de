import type { Logger } from "pino";

/** The step a shutdown is on, for whoever has to explain a hang (the hard deadline's last log line). */
export interface ShutdownProgress {
  step: string;
  readonly startedAt: number;
}

/**
 * Runs one named step of a shutdown, logging it, and waits for it at most
 * `limitMs`. A step that does not finish in time (an append to a broker
 * that went away, a socket that never drains) is logged and left behind:
 * the shutdown goes on, because every later step still matters more than
 * waiting. A step that fails is logged the same way. Resolves whether the
 * step finished.
 */
export async function boundedStep(
  logger: Logger,
  progress: ShutdownProgress,
  step: string,
  limitMs: number,
  run: () => Promise<unknown>,
  context: Record<string, unknown> = {},
): Promise<boolean> {
  progress.step = step;
  const t0 = Date.now();
  logger.info({ step, limitMs, ...context }, "shutdown step");
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<"late">((resolve) => {
    timer = setTimeout(() => resolve("late"), Math.max(0, limitMs));
  });
  try {
    const outcome = await Promise.race([run().then(() => "done" as const), late]);
    if (outcome === "late") {
      logger.error(
        { step, limitMs, ...context },
        "shutdown step did not finish in time; going on without it",
      );
      return false;
    }
    logger.debug({ step, ms: Date.now() - t0 }, "shutdown step done");
    return true;
  } catch (err) {
    logger.error({ err, step, ...context }, "shutdown step failed; going on");
    return false;
  } finally {
    clearTimeout(timer);
  }
}
