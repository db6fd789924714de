import { parentPort, workerData } from "node:worker_threads";
import { pino } from "pino";
import { signJwsInput } from "../../../identity/jwt.ts";
import type { FromThread, ScheduleItem, ThreadData, ToThread } from "./messages.ts";
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
      post({ kind: "stats", id: message.id, stats: replica.stats(message.gc) });
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
 * One message's requests, each answered before the next is computed (as
 * when each came in a message of its own), so a large plan does not wait
 * behind the others of its turn.
 */
function scheduleInOrder(items: readonly ScheduleItem[]): void {
  let chain = scheduleOne(items[0]!);
  for (let i = 1; i < items.length; i++) {
    const item = items[i]!;
    chain = chain.then(() => scheduleOne(item));
  }
}

function scheduleOne(item: ScheduleItem): Promise<void> {
  return replica.schedule(item.request).then(
    ({ message: outcome, transfer }) => post({ kind: "outcome", id: item.id, outcome }, transfer),
    (err: Error) => post({ kind: "failed", id: item.id, error: err.message }),
  );
}

replica.start().then(
  (startup) => post({ kind: "ready", index: replica.appliedIndex, startup }),
  (err: Error) => post({ kind: "fatal", error: err.message }),
);
