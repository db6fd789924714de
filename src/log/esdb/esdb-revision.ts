import { NO_STREAM } from "@eventstore/db-client";
import { LogError } from "../event-log.ts";

/**
 * The log index is the cluster index; in EventStoreDB it is the event's
 * revision in the log's stream plus one (revisions start at 0, indexes at 1).
 */
export function indexToRevision(index: number): bigint {
  if (!Number.isSafeInteger(index) || index < 1) {
    throw new LogError(`log index ${index} has no stream revision (indexes start at 1)`, "range");
  }
  return BigInt(index - 1);
}

export function revisionToIndex(revision: bigint): number {
  const index = revision + 1n;
  if (revision < 0n || index > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new LogError(`stream revision ${revision} has no log index`, "range");
  }
  return Number(index);
}

/**
 * The expected revision of an append made when the stream ends at
 * `lastIndex`: the stream must not exist yet when the log is empty, else
 * its last event must be the one at `lastIndex`. Anything else appended in
 * between makes EventStoreDB refuse the whole append.
 */
export function expectedRevisionAfter(lastIndex: number): bigint | typeof NO_STREAM {
  return lastIndex === 0 ? NO_STREAM : indexToRevision(lastIndex);
}
