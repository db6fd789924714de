import { parentPort, workerData } from "node:worker_threads";
import { pino } from "pino";
import { signJwsInput } from "../../../identity/jwt.ts";
import type { FromThread, ThreadData, ToThread } from "./messages.ts";
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
      return;
    case "live":
      replica.log.goLive();
      return;
    case "schedule":
      replica.schedule(message.request).then(
        ({ message: outcome, transfer }) => post({ kind: "outcome", id: message.id, outcome }, transfer),
        (err: Error) => post({ kind: "failed", id: message.id, error: err.message }),
      );
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

replica.start().then(
  (startup) => post({ kind: "ready", index: replica.appliedIndex, startup }),
  (err: Error) => post({ kind: "fatal", error: err.message }),
);
