import type { AllocRow } from "../../../projections/allocs.ts";
import { allocTaskGroup, type RescheduleEvent } from "../../../streams/allocs.ts";
import type { JobReschedulePolicy } from "../../../streams/jobs.ts";
import { MAX_PAST_RESCHEDULE_EVENTS } from "./descriptions.ts";

/**
 * Nomad's rescheduling arithmetic (nomad/structs/structs.go: NextDelay,
 * NextRescheduleTime, LastEventTime, RescheduleTracker). Times are Unix
 * nanoseconds, as Nomad's are; the policy is the one of the allocation's own
 * job version.
 */

export function reschedulePolicy(a: Pick<AllocRow, "Job" | "TaskGroup">): JobReschedulePolicy | undefined {
  const p = allocTaskGroup(a)?.ReschedulePolicy;
  if (!p) return undefined;
  return {
    Attempts: p.Attempts ?? 0,
    Interval: p.Interval ?? 0,
    Delay: typeof p.Delay === "number" ? p.Delay : 0,
    DelayFunction: typeof p.DelayFunction === "string" ? p.DelayFunction : "",
    MaxDelay: typeof p.MaxDelay === "number" ? p.MaxDelay : 0,
    Unlimited: p.Unlimited ?? false,
  };
}

/** Nomad's LastEventTime: the latest task FinishedAt, else the allocation's ModifyTime (ns). */
export function lastEventTime(a: Pick<AllocRow, "TaskStates" | "ModifyTime">): number {
  let last = 0;
  for (const state of Object.values(a.TaskStates ?? {})) {
    const finished = (state as { FinishedAt?: unknown }).FinishedAt;
    if (typeof finished !== "string") continue;
    const ms = Date.parse(finished);
    if (!Number.isNaN(ms) && ms > 0 && ms * 1e6 > last) last = ms * 1e6;
  }
  return last > 0 ? last : a.ModifyTime;
}

/** Nomad's NextDelay: the policy's delay, grown by its delay function over the reschedule history. */
export function nextDelay(
  a: Pick<AllocRow, "Job" | "TaskGroup" | "RescheduleTracker" | "TaskStates" | "ModifyTime">,
): number {
  const policy = reschedulePolicy(a);
  if (!policy) return 0;
  let delay = policy.Delay;
  const events = a.RescheduleTracker?.Events ?? [];
  if (events.length === 0) return delay;
  const last = events[events.length - 1]!;
  switch (policy.DelayFunction) {
    case "exponential":
      delay = last.Delay * 2;
      break;
    case "fibonacci":
      if (events.length >= 2) {
        const n1 = last.Delay;
        const n2 = events[events.length - 2]!.Delay;
        delay = n2 === policy.MaxDelay && n1 === policy.Delay ? n1 : n1 + n2;
      }
      break;
    default:
      return delay;
  }
  if (policy.MaxDelay > 0 && delay > policy.MaxDelay) {
    delay = policy.MaxDelay;
    if (lastEventTime(a) - last.RescheduleTime > delay) delay = policy.Delay;
  }
  return delay;
}

/** Nomad's rescheduleInfo: attempts made within the policy's interval before `failTime`. */
function attemptsWithin(
  a: Pick<AllocRow, "RescheduleTracker">,
  policy: JobReschedulePolicy,
  failTime: number,
): number {
  let attempted = 0;
  if (policy.Attempts <= 0) return 0;
  for (const e of a.RescheduleTracker?.Events ?? []) {
    if (failTime - e.RescheduleTime < policy.Interval) attempted++;
  }
  return attempted;
}

/** Nomad's nextRescheduleTime: when the allocation may be replaced, and whether the policy allows it at all. */
export function nextRescheduleTimeAt(
  a: Pick<AllocRow, "Job" | "TaskGroup" | "RescheduleTracker" | "TaskStates" | "ModifyTime">,
  failTime: number,
): { time: number; eligible: boolean } {
  const policy = reschedulePolicy(a);
  if (!policy) return { time: 0, eligible: false };
  const delay = nextDelay(a);
  const time = failTime + delay;
  let eligible = policy.Unlimited || (policy.Attempts > 0 && (a.RescheduleTracker?.Events ?? null) === null);
  const events = a.RescheduleTracker?.Events;
  if (policy.Attempts > 0 && events && !policy.Unlimited) {
    eligible = attemptsWithin(a, policy, failTime) < policy.Attempts && delay < policy.Interval;
  } else if (policy.Attempts > 0 && !events) {
    eligible = true;
  }
  return { time, eligible };
}

/** Nomad's NextRescheduleTime: only a failed allocation the server still wants running is rescheduled. */
export function nextRescheduleTime(
  a: Pick<
    AllocRow,
    "Job" | "TaskGroup" | "RescheduleTracker" | "TaskStates" | "ModifyTime" | "DesiredStatus" | "ClientStatus"
  >,
): { time: number; eligible: boolean } {
  if (a.DesiredStatus === "stop" || a.ClientStatus !== "failed") return { time: 0, eligible: false };
  const failTime = lastEventTime(a);
  if (failTime === 0) return { time: 0, eligible: false };
  return nextRescheduleTimeAt(a, failTime);
}

/** Nomad's updateRescheduleTracker: the replacement's history, plus one event for this reschedule. */
export function rescheduleTrackerFor(prev: AllocRow, nowNs: number): { Events: RescheduleEvent[] } {
  const policy = reschedulePolicy(prev);
  const events: RescheduleEvent[] = [];
  const past = prev.RescheduleTracker?.Events ?? [];
  if (past.length > 0) {
    if (policy && policy.Attempts > 0) {
      for (const e of past)
        if (policy.Interval > 0 && nowNs - e.RescheduleTime <= policy.Interval) events.push(e);
    } else {
      events.push(...past.slice(Math.max(0, past.length - MAX_PAST_RESCHEDULE_EVENTS)));
    }
  }
  events.push({
    RescheduleTime: nowNs,
    PrevAllocID: prev.ID,
    PrevNodeID: prev.NodeID,
    Delay: nextDelay(prev),
  });
  return { Events: events };
}
