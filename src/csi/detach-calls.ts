import { randomUUID } from "node:crypto";
import type { Observable, Subscription } from "rxjs";
import {
  type CSIDetachRow,
  type CSIDetachStep,
  csiDetachKey,
} from "../../projections/csi-detach-requests.ts";
import type { CSIDetachClaim, CSIDetachKind, CSIDetachRequest } from "../../streams/csi-detach.ts";
import type { Change } from "../store/projection.ts";
import type { Draft } from "../store/writer.ts";
import type { Clock, Timer } from "../util/clock.ts";

/** How long a client has to answer one detach call, and how often it is asked. */
export interface DetachPolicy {
  /** From the request to its deadline (ms). */
  readonly timeoutMs: number;
  /** Calls of one step before the unpublish gives up (a later unpublish tries again). */
  readonly attempts: number;
  /** Wait before the second call; doubled before each further one (ms). */
  readonly backoffMs: number;
}

export const DEFAULT_DETACH_POLICY: DetachPolicy = { timeoutMs: 30_000, attempts: 3, backoffMs: 1_000 };

export interface DetachCallDeps {
  readonly change$: Observable<Change>;
  readonly clock: Clock;
  /** Appends as the caller and resolves once applied; rejects when apply refused the record. */
  write(drafts: readonly Draft[]): Promise<number>;
  readonly policy: DetachPolicy;
  readonly newID?: () => string;
  /**
   * For a node whose Nomad client agent holds a session on this server's RPC
   * port: makes the ClientCSI call on it and resolves with its error text
   * ("" on success). Undefined when no such session: the client answers
   * through its long poll (ClientCSI.PendingDetaches) instead.
   */
  readonly nomadCall?: (request: CSIDetachRequest) => Promise<string> | undefined;
}

/** What one call of a detach step is about. */
export interface DetachTarget {
  readonly Namespace: string;
  readonly VolumeID: string;
  readonly ExternalID: string;
  readonly PluginID: string;
  readonly NodeID: string;
  readonly Kind: CSIDetachKind;
  readonly Claim: CSIDetachClaim;
}

/** Thrown when a detach step failed every attempt: its last answer, in words. */
export class DetachFailed extends Error {}

/**
 * Asks a client to detach, as a record (CSIDetachRequested), and waits for
 * the record that answers it: the client's ack (success or its plugin's
 * error) or the timeout the deadline keeper appends (detach-deadlines.ts).
 * A failure or a timeout is retried with backoff up to the policy's
 * attempts, each a new request with its own ID; every one is in the
 * volume's history. Waiting is a subscription to the table's changes,
 * never a poll: one for all calls, which hands a change only to the calls
 * waiting on its row, so a change costs the same with one call or thousands
 * in flight.
 */
export class DetachCalls {
  /** Row key -> the calls waiting on it, each told of every change of the row. */
  private readonly waiting = new Map<string, Set<(c: Change) => void>>();
  private subscription: Subscription | undefined;
  /** Told once the server stops leading: every wait and backoff sleep ends. */
  private readonly onStop = new Set<() => void>();
  private readonly timers = new Set<Timer>();
  private readonly newID: () => string;

  constructor(private readonly deps: DetachCallDeps) {
    this.newID = deps.newID ?? randomUUID;
  }

  /** Resolves once a client acknowledged the step; rejects with DetachFailed after the last attempt. */
  async call(target: DetachTarget): Promise<void> {
    const { policy } = this.deps;
    let last = "";
    for (let attempt = 1; attempt <= policy.attempts; attempt++) {
      if (attempt > 1) await this.sleep(policy.backoffMs * 2 ** (attempt - 2));
      const answer = await this.once(target, attempt);
      if (answer.Outcome === "acknowledged") return;
      last = answer.Outcome === "timed-out" ? "no answer before the deadline" : answer.Error;
    }
    throw new DetachFailed(
      `${target.Kind} detach of volume ${JSON.stringify(target.VolumeID)} on node ${target.NodeID} failed after ${policy.attempts} attempts: ${last}`,
    );
  }

  /** Ends every wait: unpublishes under way stop at their last checkpoint. */
  stop(): void {
    for (const t of this.timers) this.deps.clock.clearTimeout(t);
    this.timers.clear();
    for (const end of [...this.onStop]) end();
    this.onStop.clear();
    this.subscription?.unsubscribe();
    this.subscription = undefined;
  }

  private async once(target: DetachTarget, attempt: number): Promise<CSIDetachStep> {
    const request: CSIDetachRequest = {
      RequestID: this.newID(),
      ...target,
      Attempt: attempt,
      Deadline: this.deps.clock.now() + this.deps.policy.timeoutMs,
    };
    // Waiting before the append, so no answer can come between the two.
    const wait = this.answerTo(csiDetachKey(target.Namespace, target.VolumeID), request, target.VolumeID);
    // An answer that never comes must not be an unhandled rejection if the append fails first.
    wait.answer.catch(() => undefined);
    try {
      await this.deps.write([{ type: "CSIDetachRequested", v: 1, data: { Request: request } }]);
    } catch (err) {
      wait.cancel();
      throw err;
    }
    const viaRpc = this.deps.nomadCall?.(request);
    if (viaRpc) void this.answerForAgent(request, viaRpc);
    return wait.answer;
  }

  /** A Nomad agent answered over its RPC session: the server records its answer as the ack. */
  private async answerForAgent(request: CSIDetachRequest, reply: Promise<string>): Promise<void> {
    const error = await reply.catch((err: Error) => err.message || "client RPC failed");
    await this.deps
      .write([
        {
          type: "CSIDetachAcknowledged",
          v: 1,
          data: {
            Namespace: request.Namespace,
            VolumeID: request.VolumeID,
            RequestID: request.RequestID,
            NodeID: request.NodeID,
            Error: error,
          },
        },
      ])
      // The deadline came first: the timeout is the answer.
      .catch(() => undefined);
  }

  /**
   * Waits for the step that answers `request`: its row's ack or timeout. The
   * answer rejects if the row goes or the server stops leading; `cancel`
   * stops waiting (the request was never appended).
   */
  private answerTo(
    key: string,
    request: CSIDetachRequest,
    volumeID: string,
  ): { answer: Promise<CSIDetachStep>; cancel: () => void } {
    let cancel = () => {};
    const answer = new Promise<CSIDetachStep>((resolve, reject) => {
      const done = () => {
        const calls = this.waiting.get(key);
        calls?.delete(onChange);
        if (calls?.size === 0) this.waiting.delete(key);
        this.onStop.delete(onStop);
      };
      const onChange = (c: Change) => {
        // The row goes only with its volume: nobody will answer this call any more.
        if (c.after === undefined) {
          done();
          return reject(new DetachFailed(`volume ${JSON.stringify(volumeID)} was deregistered`));
        }
        const step = (c.after as CSIDetachRow).Detach;
        if (step?.RequestID !== request.RequestID || step.Outcome === "requested") return;
        done();
        resolve(step);
      };
      const onStop = () => {
        done();
        reject(new DetachFailed("the unpublish stopped: this server no longer leads"));
      };
      cancel = done;
      this.subscription ??= this.deps.change$.subscribe((c) => {
        if (c.table !== "csi_detach_requests") return;
        const calls = this.waiting.get(c.key);
        if (calls) for (const call of [...calls]) call(c);
      });
      const calls = this.waiting.get(key) ?? new Set();
      this.waiting.set(key, calls);
      calls.add(onChange);
      this.onStop.add(onStop);
    });
    return { answer, cancel };
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const onStop = () => {
        this.deps.clock.clearTimeout(timer);
        this.timers.delete(timer);
        reject(new DetachFailed("the unpublish stopped: this server no longer leads"));
      };
      const timer = this.deps.clock.setTimeout(() => {
        this.timers.delete(timer);
        this.onStop.delete(onStop);
        resolve();
      }, ms);
      this.timers.add(timer);
      this.onStop.add(onStop);
    });
  }
}
