import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import type { Subject } from "rxjs";
import type { Election } from "../cluster/open-election.ts";
import type { EventHub } from "../events/event-hub.ts";
import type { EventLog } from "../log/event-log.ts";
import type { ServiceRunner } from "../services/service-runner.ts";
import type { Store } from "../store/store.ts";
import type { Watches } from "../store/watches.ts";
import { boundedStep, type ShutdownProgress } from "./bounded-step.ts";
import { drainHttp } from "./drain-http.ts";

/**
 * How long past `shutdown_grace` a shutdown may take in all: stopping the
 * services, leaving the election, flushing the log and writing the
 * snapshot share it. The serve command exits the process at this deadline
 * whatever still hangs.
 */
export const SHUTDOWN_MARGIN_MS = 5_000;
/** Services only finish the writes they have in flight; a healthy log answers in milliseconds. */
const SERVICES_LIMIT_MS = 1_500;
/** Leaving a Kafka consumer group takes one round trip to the coordinator. */
const ELECTION_LIMIT_MS = 1_500;
/** Left for the snapshot and the log after the deadline of the sequence, so the process deadline is not reached in an orderly stop. */
const LOG_FLOOR_MS = 1_000;
/** The sequence gives up this long before the process deadline, so its own last log line comes first. */
const BEFORE_PROCESS_DEADLINE_MS = 300;

export interface ShutdownParts {
  readonly logger: Logger;
  readonly graceMs: number;
  readonly services: ServiceRunner;
  readonly election: Election;
  readonly closing: Subject<"closing">;
  readonly http: FastifyInstance;
  /** Nomad's RPC port; absent on a read-only server. */
  readonly rpc?: { close(): Promise<void> };
  /** The scheduler threads: closed once the scheduler (a leader service) has stopped. */
  readonly schedulerThreads?: { close(): Promise<void> };
  readonly events: EventHub;
  readonly watches: Watches;
  readonly store: Store;
  readonly log: EventLog;
  /** The history store (src/history/): its pointers are checkpointed once the store has stopped. */
  readonly history?: { close(): Promise<void> };
}

export interface ShutdownOutcome {
  /** Every step finished in time; false when one was left behind (it was logged). */
  readonly clean: boolean;
}

/**
 * The order of a shutdown, as Nomad's leader step-down: first nothing more
 * is decided about clients (leader services stop, the election is left so
 * another server takes over at once), then the API stops (blocking queries
 * and event streams get their final answer, idle connections close, the
 * rest get `graceMs`), then the log is flushed, a snapshot written and the
 * log closed (its lock released). Each step is bounded; the whole sequence
 * ends by `graceMs + SHUTDOWN_MARGIN_MS` after it started.
 */
export async function shutDown(parts: ShutdownParts, progress: ShutdownProgress): Promise<ShutdownOutcome> {
  const { logger, graceMs } = parts;
  const deadline = progress.startedAt + graceMs + SHUTDOWN_MARGIN_MS - BEFORE_PROCESS_DEADLINE_MS;
  const log = { log: parts.log.url };
  let clean = true;
  const step = async (name: string, limitMs: number, run: () => Promise<unknown>) => {
    clean = (await boundedStep(logger, progress, name, limitMs, run, log)) && clean;
  };

  // Heartbeat timers first: a client that can no longer reach this server
  // must not be declared down by it.
  await step("stopping leader services", SERVICES_LIMIT_MS, () => parts.services.close());
  await step("leaving the leader election", ELECTION_LIMIT_MS, () => parts.election.close());
  if (parts.schedulerThreads)
    await step("stopping the scheduler threads", 2_000, () => parts.schedulerThreads!.close());
  // Before the HTTP API: the RPC port's calls run through the API's routes.
  if (parts.rpc) await step("closing the RPC port", 2_000, () => parts.rpc!.close());
  await step("closing the HTTP API", graceMs + 500, async () => {
    parts.closing.next("closing");
    parts.closing.complete();
    const { cut } = await drainHttp(parts.http, graceMs);
    if (cut) logger.warn({ graceMs }, "requests still running after shutdown_grace were cut off");
  });
  parts.events.stop();
  parts.watches.stop();
  const remaining = () => Math.max(LOG_FLOOR_MS, deadline - Date.now());
  await step("flushing the log and writing the snapshot", remaining(), async () => {
    // A store that failed has logged why; what it applied is still worth a snapshot.
    await parts.store.caughtUp().catch(() => undefined);
    await parts.store.snapshot();
  });
  await step("closing the log", remaining(), async () => {
    await parts.store.stop();
    await parts.history?.close();
    await parts.log.close();
  });
  logger.info(
    { index: parts.store.appliedIndex, clean, ms: Date.now() - progress.startedAt },
    "chronomad stopped",
  );
  return { clean };
}
