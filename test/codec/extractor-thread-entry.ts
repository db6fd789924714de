import { parentPort } from "node:worker_threads";
import { isNativeAccelerationEnabled } from "msgpackr";
// What a scheduler thread decodes records with (replica-thread.ts's Replica).
import "../../src/services/scheduler/threads/replica.ts";

parentPort!.postMessage(isNativeAccelerationEnabled);
