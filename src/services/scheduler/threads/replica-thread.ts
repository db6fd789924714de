import { parentPort, workerData } from "node:worker_threads";
import { pino } from "pino";
import { signJwsInput } from "../../../identity/jwt.ts";
import { setThreadNice, threadNice } from "../../../util/thread-nice.ts";
import type { Answer, FromThread, ScheduleItem, ThreadData, ToThread } from "./messages.ts";
import { unpackRecords } from "./record-batch.ts";
import { Replica } from "./replica.ts";

/**
 * A scheduler thread's entry: a Replica wired to the thread's port. Messages
 * are handled in arrival order; records are applied as they come, schedule
 * requests wait for their index and then compute without yielding.
 */
const port = parentPort;
if (!port) throw new Error("replica-thread.ts runs in a worker thread");
const data = (workerData as { thread: ThreadData }).thread;
// To stderr: the main thread's stdout may carry its own structured log.
const logger = pino({ name: data.name, level: data.logLevel }, pino.destination(2));
const post = (message: FromThread, transfer: ArrayBuffer[] = []) => port.postMessage(message, transfer);

// Behind the main thread for a core (config `scheduler_nice`).
if (data.nice) {
  try {
    setThreadNice(data.nice);
  } catch (err) {
    logger.warn({ err, nice: data.nice }, "could not lower the scheduler thread's priority");
  }
}

const replica = new Replica(
  data,
  { follow: (from) => post({ kind: "follow", from }), more: () => post({ kind: "more" }) },
  logger,
  (err) => post({ kind: "fatal", error: err.message }),
);

port.on("message", (message: ToThread) => {
  switch (message.kind) {
    case "records":
      replica.receive(unpackRecords(message), replica.log.isLive);
      if (message.schedule) scheduleInOrder(message.schedule);
      return;
    case "live":
      replica.log.goLive();
      return;
    case "schedule":
      scheduleInOrder(message.items);
      return;
    case "hash":
      replica.hash(message.minIndex).then(
        ({ index, hash }) => post({ kind: "hash", id: message.id, index, hash }),
        (err: Error) => post({ kind: "failed", id: message.id, error: err.message }),
      );
      return;
    case "stats":
      post({ kind: "stats", id: message.id, stats: { ...replica.stats(message.gc), nice: threadNice() } });
      return;
    case "sign":
      // Needs nothing of the replica: the key comes with the request.
      try {
        const signatures = message.inputs.map((input) => signJwsInput(message.key, input));
        post({ kind: "signed", id: message.id, signatures });
      } catch (err) {
        post({ kind: "failed", id: message.id, error: (err as Error).message });
      }
      return;
  }
});

/**
 * How long computed answers may wait for the others of their message: they
 * go back together (one wake-up of the main thread, whose workers then take
 * their next evaluations in one turn, and send them in one message), unless
 * computing has already taken this long since the first of them.
 */
const ANSWERS_HOLD_MS = 1;

const answers: Answer[] = [];
const answerBuffers: ArrayBuffer[] = [];
let answersSince = 0;

/** One message's requests, computed in order; their answers posted together, or as ANSWERS_HOLD_MS allows. */
function scheduleInOrder(items: readonly ScheduleItem[]): void {
  let chain = scheduleOne(items[0]!);
  for (let i = 1; i < items.length; i++) {
    const item = items[i]!;
    chain = chain.then(() => scheduleOne(item));
  }
  chain.then(postAnswers, postAnswers);
}

function scheduleOne(item: ScheduleItem): Promise<void> {
  // Nothing waits on the log with answers in hand.
  if (replica.appliedIndex < item.request.minIndex) postAnswers();
  else if (answers.length > 0 && performance.now() - answersSince >= ANSWERS_HOLD_MS) postAnswers();
  return replica.schedule(item.request).then(
    ({ message: outcome, transfer }) => hold({ id: item.id, outcome }, transfer),
    (err: Error) => hold({ id: item.id, error: err.message }, []),
  );
}

function hold(answer: Answer, transfer: readonly ArrayBuffer[]): void {
  if (answers.length === 0) answersSince = performance.now();
  answers.push(answer);
  answerBuffers.push(...transfer);
  if (performance.now() - answersSince >= ANSWERS_HOLD_MS) postAnswers();
}

function postAnswers(): void {
  if (answers.length === 0) return;
  post({ kind: "answers", answers: answers.splice(0) }, answerBuffers.splice(0));
}

replica.start().then(
  (startup) => post({ kind: "ready", index: replica.appliedIndex, startup }),
  (err: Error) => post({ kind: "fatal", error: err.message }),
);
