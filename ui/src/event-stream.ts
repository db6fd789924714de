import { apiUrl, authHeaders, errorOf } from "./api.ts";

/** One event of Nomad's event stream (only the fields the page reads). */
export interface StreamEvent {
  readonly Topic: string;
  readonly Type: string;
  readonly Key: string;
  readonly Namespace: string;
  readonly Index: number;
  readonly Payload?: unknown;
}

/** One line of `/v1/event/stream`: `{}` (heartbeat), a frame of events, or the stream's last words. */
export interface StreamFrame {
  readonly Index?: number;
  readonly Events?: readonly StreamEvent[];
  readonly Error?: string;
}

export interface StreamQuery {
  /** Frames with an Index greater than this (the server's cursor is exclusive). */
  readonly after: number;
  /** `Topic[:Key]` filters; none means every topic. */
  readonly topics: readonly string[];
  readonly namespace?: string;
}

/**
 * The NDJSON frames of `/v1/event/stream`, read with fetch and a
 * ReadableStream so aborting `signal` (navigating away) closes the
 * connection.
 */
export async function* streamFrames(
  query: StreamQuery,
  signal: AbortSignal,
  onOpen?: (response: Response) => void,
): AsyncGenerator<StreamFrame> {
  const url = apiUrl("/v1/event/stream", {
    index: query.after,
    topic: query.topics,
    namespace: query.namespace,
  });
  const response = await fetch(url, { headers: authHeaders(), signal });
  if (!response.ok) throw await errorOf(response);
  if (!response.body) throw new Error("the browser gave no stream body");
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  try {
    onOpen?.(response);
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffered += value;
      let newline = buffered.indexOf("\n");
      while (newline >= 0) {
        const line = buffered.slice(0, newline).trim();
        buffered = buffered.slice(newline + 1);
        if (line !== "") yield JSON.parse(line) as StreamFrame;
        newline = buffered.indexOf("\n");
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

/**
 * The first index after `after` at which a job, node or allocation event
 * happened, read from the event stream (which replays the log from any
 * index); undefined when none comes within `waitMs` (nothing later yet).
 */
export async function nextChangeAfter(
  after: number,
  waitMs: number,
  signal: AbortSignal,
): Promise<number | undefined> {
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  signal.addEventListener("abort", onAbort);
  const timer = setTimeout(() => stop.abort(), waitMs);
  try {
    for await (const frame of streamFrames({ after, topics: ["Job", "Node", "Allocation"] }, stop.signal)) {
      if (frame.Error) throw new Error(frame.Error);
      if (frame.Index !== undefined && frame.Index > after && (frame.Events?.length ?? 0) > 0)
        return frame.Index;
    }
    return undefined;
  } catch (err) {
    if (stop.signal.aborted && !signal.aborted) return undefined;
    throw err;
  } finally {
    clearTimeout(timer);
    signal.removeEventListener("abort", onAbort);
    stop.abort();
  }
}
