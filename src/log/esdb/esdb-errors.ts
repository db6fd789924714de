import {
  AccessDeniedError,
  DeadlineExceededError,
  MaxAppendSizeExceededError,
  StreamDeletedError,
  StreamNotFoundError,
  UnavailableError,
  WrongExpectedVersionError,
} from "@eventstore/db-client";
import { LogError } from "../event-log.ts";

/**
 * What the operator reads when EventStoreDB refuses an operation on the
 * log's stream, as a LogError: the log's callers know no other error.
 * `during` says what the log was doing ("append", "read", ...).
 */
export function esdbLogError(error: unknown, url: string, stream: string, during: string): LogError {
  if (error instanceof LogError) return error;
  const cause = { cause: error };
  if (error instanceof WrongExpectedVersionError) {
    // The log retries a conflict after the stream's new end (another
    // server appended); this is what is left when that kept failing.
    // Nothing of this batch was written, and none of its records is interleaved.
    const expected = error.expectedVersion === "no_stream" ? "empty" : `at revision ${error.expectedVersion}`;
    const actual = error.actualVersion === "no_stream" ? "absent" : `at revision ${error.actualVersion}`;
    return Object.assign(
      new LogError(
        `${url}: stream ${stream} is ${actual}, not ${expected} as this server last saw it: ` +
          "other servers kept appending to it before this server's append could land. " +
          "Nothing of this batch was appended; send it again",
        "io",
      ),
      cause,
    );
  }
  if (error instanceof MaxAppendSizeExceededError) {
    return Object.assign(
      new LogError(
        `${url}: EventStoreDB refused a batch larger than its MaxAppendSize (${error.maxAppendSize} bytes); ` +
          "raise it on the server (EVENTSTORE_MAX_APPEND_SIZE). Nothing of this batch was appended",
        "range",
      ),
      cause,
    );
  }
  if (error instanceof StreamNotFoundError) {
    return Object.assign(
      new LogError(`${url}: stream ${stream} does not exist; there is nothing to read`, "config"),
      cause,
    );
  }
  if (error instanceof StreamDeletedError) {
    return Object.assign(
      new LogError(`${url}: stream ${stream} was deleted: the log it held is gone`, "corrupt"),
      cause,
    );
  }
  if (error instanceof AccessDeniedError) {
    return Object.assign(
      new LogError(`${url}: access to stream ${stream} denied: check the URL's user:password`, "config"),
      cause,
    );
  }
  const message = error instanceof Error ? error.message : String(error);
  return Object.assign(new LogError(`${url}: ${during} of stream ${stream} failed: ${message}`, "io"), cause);
}

/**
 * Whether an append may have been written though its answer never came (the
 * node went away, or the deadline passed): the cases worth sending again.
 */
export function isLostAnswer(error: unknown): boolean {
  return error instanceof UnavailableError || error instanceof DeadlineExceededError;
}
