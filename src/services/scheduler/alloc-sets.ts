import type { AllocRow } from "../../../projections/allocs.ts";
import type { NodeRow } from "../../../projections/nodes.ts";
import {
  ALLOC_STATE_FIELD_CLIENT_STATUS,
  disconnectExpired,
  isServerTerminal,
  isTerminalAlloc,
  maxClientDisconnectMs,
  needsToReconnect,
} from "../../../streams/allocs.ts";
import { RESCHEDULE_WINDOW_MS } from "./descriptions.ts";
import { nextRescheduleTime, nextRescheduleTimeAt, reschedulePolicy } from "./reschedule.ts";

/** Nomad's allocSet: allocations by ID, iterated in a fixed order (the job's, by ID) so decisions are reproducible. */
export type AllocSet = Map<string, AllocRow>;

export function setOf(allocs: Iterable<AllocRow>): AllocSet {
  const s: AllocSet = new Map();
  for (const a of allocs) s.set(a.ID, a);
  return s;
}

export function difference(a: AllocSet, ...others: AllocSet[]): AllocSet {
  const out: AllocSet = new Map();
  for (const [id, x] of a) if (!others.some((o) => o.has(id))) out.set(id, x);
  return out;
}

export function union(a: AllocSet, ...others: AllocSet[]): AllocSet {
  const out: AllocSet = new Map(a);
  for (const o of others) for (const [id, x] of o) out.set(id, x);
  return out;
}

export function filterByTerminal(s: AllocSet): AllocSet {
  const out: AllocSet = new Map();
  for (const [id, a] of s) if (!isTerminalAlloc(a)) out.set(id, a);
  return out;
}

/** The index in an allocation name `job.group[3]`. */
export function allocIndex(name: string): number {
  const open = name.lastIndexOf("[");
  const close = name.lastIndexOf("]");
  if (open < 0 || close < open) return 0;
  const n = Number(name.slice(open + 1, close));
  return Number.isSafeInteger(n) && n >= 0 ? n : 0;
}

export const allocName = (jobID: string, group: string, index: number) => `${jobID}.${group}[${index}]`;

/** Nomad's NameOrder: by name index (each name parsed once; the sort is stable, ties keep the set's order). */
export function nameOrder(s: AllocSet): AllocRow[] {
  const keyed = [...s.values()].map((a) => ({ a, i: allocIndex(a.Name) }));
  keyed.sort((x, y) => x.i - y.i);
  return keyed.map((k) => k.a);
}

/**
 * What the tainted-node split needs to know besides the allocations: where
 * they run, the time, and how to tell that a disconnect was already handled
 * (chronomad records the `unknown` state on heartbeat expiry, before the
 * scheduler sees the disconnect; see filterByTainted).
 */
export interface TaintContext {
  readonly tainted: ReadonlyMap<string, NodeRow | null>;
  readonly nowMs: number;
  /** Every allocation of the job, to follow replacement chains. */
  readonly all: ReadonlyMap<string, AllocRow>;
  /** Whether an evaluation is still pending (a max-disconnect-timeout follow-up). */
  readonly evalPending: (id: string) => boolean;
}

/** The live replacement of `a` (following NextAllocation links past stopped ones), if any. */
export function liveReplacement(a: AllocRow, all: ReadonlyMap<string, AllocRow>): AllocRow | undefined {
  let next = a.NextAllocation;
  for (let hops = 0; next !== "" && hops < 100; hops++) {
    const b = all.get(next);
    if (!b) return undefined;
    if (!isServerTerminal(b)) return b;
    next = b.NextAllocation;
  }
  return undefined;
}

/** The last client-status AllocState is not `unknown` but the one before it is: the allocation came back. */
function justReconnected(a: AllocRow): boolean {
  const states = (a.AllocStates ?? []).filter((s) => s.Field === ALLOC_STATE_FIELD_CLIENT_STATUS);
  const n = states.length;
  return n >= 2 && states[n - 1]!.Value !== "unknown" && states[n - 2]!.Value === "unknown";
}

export interface TaintedSplit {
  untainted: AllocSet;
  migrate: AllocSet;
  lost: AllocSet;
  disconnecting: AllocSet;
  reconnecting: AllocSet;
  ignore: AllocSet;
}

/**
 * Nomad 1.5's allocSet.filterByTainted, in its decision order, with two
 * adaptations to how chronomad records disconnects (the server writes the
 * `unknown` state on heartbeat expiry and the reconnect state on the
 * client's first report, instead of leaving both to the scheduler):
 * - an `unknown` allocation on a disconnected node without a live
 *   replacement is `disconnecting` (it needs one), as a `running` one is in
 *   Nomad; its timeout evaluation is created once (see the reconciler);
 * - an allocation whose states end with `unknown` then its reported status,
 *   while a live replacement exists, is `reconnecting` (once resolved, one
 *   of the two is stopped and the condition no longer holds).
 */
export function filterByTainted(set: AllocSet, ctx: TaintContext): TaintedSplit {
  const out: TaintedSplit = {
    untainted: new Map(),
    migrate: new Map(),
    lost: new Map(),
    disconnecting: new Map(),
    reconnecting: new Map(),
    ignore: new Map(),
  };
  for (const [id, a] of set) {
    const sdc = maxClientDisconnectMs(a) !== undefined;
    let reconnect = false;
    let expired = false;
    if (
      sdc &&
      (a.ClientStatus === "unknown" || a.ClientStatus === "running" || a.ClientStatus === "failed")
    ) {
      reconnect =
        needsToReconnect(a) ||
        (a.ClientStatus !== "unknown" &&
          !isServerTerminal(a) &&
          justReconnected(a) &&
          liveReplacement(a, ctx.all) !== undefined);
      if (reconnect) expired = disconnectExpired(a, ctx.nowMs);
    }
    if (sdc && reconnect && a.DesiredStatus === "run" && a.ClientStatus === "failed") {
      out.reconnecting.set(id, a);
      continue;
    }
    const tainted = ctx.tainted.has(a.NodeID);
    const node = ctx.tainted.get(a.NodeID) ?? null;
    if (node) {
      if (node.Status === "disconnected") {
        if (sdc) {
          if (a.ClientStatus === "running") {
            out.disconnecting.set(id, a);
            continue;
          }
          if (a.ClientStatus === "pending") {
            out.lost.set(id, a);
            continue;
          }
        } else {
          out.lost.set(id, a);
          continue;
        }
      } else if (node.Status === "ready" && reconnect) {
        (expired ? out.lost : out.reconnecting).set(id, a);
        continue;
      }
    }
    // The heartbeat path marks allocations of a node that went down lost
    // before the scheduler sees it; until one replaces it, it is still the
    // scheduler's lost allocation (so the replacement names its predecessor).
    if (
      tainted &&
      (node === null || node.Status === "down") &&
      isLostByServer(a) &&
      a.NextAllocation === ""
    ) {
      out.lost.set(id, a);
      continue;
    }
    if (isTerminalAlloc(a) && !reconnect) {
      out.untainted.set(id, a);
      continue;
    }
    if (a.DesiredTransition.Migrate === true) {
      out.migrate.set(id, a);
      continue;
    }
    if (sdc && disconnectExpired(a, ctx.nowMs)) {
      out.lost.set(id, a);
      continue;
    }
    if (
      sdc &&
      node?.Status === "disconnected" &&
      a.ClientStatus === "unknown" &&
      a.DesiredStatus === "run" &&
      liveReplacement(a, ctx.all) === undefined
    ) {
      out.disconnecting.set(id, a);
      continue;
    }
    if (sdc && a.ClientStatus === "unknown" && a.DesiredStatus === "run") {
      out.ignore.set(id, a);
      continue;
    }
    if (sdc && reconnect && a.ClientStatus === "failed" && a.DesiredStatus === "stop") {
      out.ignore.set(id, a);
      continue;
    }
    if (!tainted) {
      if (reconnect) (expired ? out.lost : out.reconnecting).set(id, a);
      else out.untainted.set(id, a);
      continue;
    }
    if (node === null || node.Status === "down") {
      out.lost.set(id, a);
      continue;
    }
    out.untainted.set(id, a);
  }
  return out;
}

/** Stopped by the server and given up as lost: there is nothing left to stop. */
export function isLostByServer(a: AllocRow): boolean {
  return a.ClientStatus === "lost" && isServerTerminal(a);
}

/** Nomad's shouldFilter: whether a terminal or failed allocation counts (untainted) or is ignored. */
function shouldFilter(a: AllocRow, batch: boolean): { untainted: boolean; ignore: boolean } {
  if (batch) {
    if (a.DesiredStatus === "stop")
      return ranSuccessfully(a) ? { untainted: true, ignore: false } : { untainted: false, ignore: true };
    if (a.DesiredStatus === "evict") return { untainted: false, ignore: true };
    if (a.ClientStatus === "failed") return { untainted: false, ignore: false };
    return { untainted: true, ignore: false };
  }
  if (a.DesiredStatus === "stop" || a.DesiredStatus === "evict") return { untainted: false, ignore: true };
  if (a.ClientStatus === "complete" || a.ClientStatus === "lost") return { untainted: false, ignore: true };
  return { untainted: false, ignore: false };
}

/** Nomad's RanSuccessfully: the client finished it, and every task that ran exited cleanly. */
export function ranSuccessfully(a: AllocRow): boolean {
  if (a.ClientStatus !== "complete") return false;
  for (const state of Object.values(a.TaskStates ?? {})) {
    if ((state as { Failed?: unknown }).Failed === true) return false;
  }
  return true;
}

export interface DelayedReschedule {
  readonly alloc: AllocRow;
  /** Unix milliseconds. */
  readonly at: number;
}

/** An allocation whose deployment is still active and did not ask to reschedule must wait for it. */
export interface ActiveDeployment {
  readonly ID: string;
  readonly active: boolean;
}

/**
 * Nomad's filterByRescheduleable: which failed allocations are replaced now,
 * which later (a follow-up evaluation at their reschedule time), and which
 * still count. Disconnecting allocations of a group that reschedules are
 * replaced now, whatever the delay (Nomad places the replacement in the
 * plan that marks the original unknown).
 */
export function filterByRescheduleable(
  set: AllocSet,
  batch: boolean,
  disconnecting: boolean,
  nowMs: number,
  evalID: string,
  deployment: ActiveDeployment | undefined,
): { untainted: AllocSet; now: AllocSet; later: DelayedReschedule[] } {
  const untainted: AllocSet = new Map();
  const now: AllocSet = new Map();
  const later: DelayedReschedule[] = [];
  for (const [id, a] of set) {
    if (disconnecting) {
      const policy = reschedulePolicy(a);
      if (
        policy &&
        (policy.Unlimited || policy.Attempts > 0) &&
        nextRescheduleTimeAt(a, nowMs * 1e6).eligible
      ) {
        now.set(id, a);
      } else untainted.set(id, a);
      continue;
    }
    if (a.NextAllocation !== "" && isTerminalAlloc(a)) continue;
    const { untainted: counts, ignore } = shouldFilter(a, batch);
    if (counts) untainted.set(id, a);
    if (counts || ignore) continue;
    const r = updateByReschedulable(a, nowMs, evalID, deployment);
    if (r.now) {
      now.set(id, a);
      continue;
    }
    untainted.set(id, a);
    if (r.later) later.push({ alloc: a, at: r.at });
  }
  return { untainted, now, later };
}

/** Nomad's updateByReschedulable. */
function updateByReschedulable(
  a: AllocRow,
  nowMs: number,
  evalID: string,
  d: ActiveDeployment | undefined,
): { now: boolean; later: boolean; at: number } {
  if (d && a.DeploymentID === d.ID && d.active && a.DesiredTransition.Reschedule !== true) {
    return { now: false, later: false, at: 0 };
  }
  if (a.DesiredTransition.ForceReschedule === true) return { now: true, later: false, at: nowMs };
  const { time, eligible } = nextRescheduleTime(a);
  const atMs = time / 1e6;
  if (eligible && (a.FollowupEvalID === evalID || atMs - nowMs <= RESCHEDULE_WINDOW_MS)) {
    return { now: true, later: false, at: atMs };
  }
  return { now: false, later: eligible && a.FollowupEvalID === "", at: atMs };
}

/** Nomad's allocNameIndex: which indexes of a group are taken, to name new allocations. */
export class NameIndex {
  private readonly taken = new Set<number>();

  constructor(
    private readonly jobID: string,
    private readonly group: string,
    private readonly count: number,
    inUse: AllocSet,
  ) {
    const prefix = `${jobID}.${group}[`;
    for (const a of inUse.values()) if (a.Name.startsWith(prefix)) this.taken.add(allocIndex(a.Name));
  }

  /** Names of the `n` highest taken indexes. */
  highest(n: number): Set<string> {
    const out = new Set<string>();
    const sorted = [...this.taken].sort((a, b) => b - a);
    for (const i of sorted.slice(0, n)) out.add(allocName(this.jobID, this.group, i));
    return out;
  }

  /** `n` names for new allocations: free indexes below the count first, then from 0 again. */
  next(n: number): string[] {
    const out: string[] = [];
    for (let i = 0; i < this.count && out.length < n; i++) {
      if (this.taken.has(i)) continue;
      this.taken.add(i);
      out.push(allocName(this.jobID, this.group, i));
    }
    for (let i = 0; out.length < n; i++) {
      this.taken.add(i);
      out.push(allocName(this.jobID, this.group, i));
    }
    return out;
  }

  unset(index: number): void {
    this.taken.delete(index);
  }

  /**
   * Nomad's NextCanaries: `n` canary names, first those of allocations
   * being replaced (below the count), then free ones, then past the count,
   * never one an existing canary has.
   */
  nextCanaries(n: number, existing: AllocSet, destructive: AllocSet): string[] {
    const out: string[] = [];
    const used = new Set<string>();
    for (const a of existing.values()) used.add(a.Name);
    const replaced = new Set<number>();
    for (const a of destructive.values()) replaced.add(allocIndex(a.Name));
    const take = (i: number): boolean => {
      const name = allocName(this.jobID, this.group, i);
      if (used.has(name)) return false;
      used.add(name);
      this.taken.add(i);
      out.push(name);
      return out.length >= n;
    };
    if (n <= 0) return out;
    for (let i = 0; i < this.count; i++) if (replaced.has(i) && take(i)) return out;
    for (let i = 0; i < this.count; i++) if (!this.taken.has(i) && take(i)) return out;
    for (let i = this.count; out.length < n; i++) out.push(allocName(this.jobID, this.group, i));
    return out;
  }
}
