import type { AllocJob } from "../../../streams/allocs.ts";
import type { TaskGroupSpec } from "../../../streams/jobs.ts";

/**
 * Group and task fields whose change Nomad applies without replacing the
 * allocation (scheduler/util.go tasksUpdated compares everything else that
 * reaches the client: drivers, config, env, resources, artifacts, ...).
 */
const GROUP_IN_PLACE = new Set([
  "Name",
  "Count",
  "Update",
  "Migrate",
  "Constraints",
  "Affinities",
  "Spreads",
  "RestartPolicy",
  "ReschedulePolicy",
  "Scaling",
  "ShutdownDelay",
  "StopAfterClientDisconnect",
  "MaxClientDisconnect",
  "Disconnect",
  "PreventRescheduleOnLost",
  "Tasks",
]);
const TASK_IN_PLACE = new Set([
  "Constraints",
  "Affinities",
  "RestartPolicy",
  "KillTimeout",
  "KillSignal",
  "ShutdownDelay",
  "LogConfig",
  "Leader",
]);

/** Nomad's tasksUpdated: whether moving `existing`'s group to `tg` needs a new allocation. */
export function tasksUpdated(tg: TaskGroupSpec, existing: AllocJob | null): boolean {
  const old = existing?.TaskGroups.find((g) => g.Name === tg.Name) as TaskGroupSpec | undefined;
  if (!old) return true;
  if (canonical(tg, GROUP_IN_PLACE) !== canonical(old, GROUP_IN_PLACE)) return true;
  const oldTasks = old.Tasks ?? [];
  if (oldTasks.length !== tg.Tasks.length) return true;
  for (const task of tg.Tasks) {
    const before = oldTasks.find((t) => t.Name === task.Name);
    if (!before) return true;
    if (canonical(task, TASK_IN_PLACE) !== canonical(before, TASK_IN_PLACE)) return true;
  }
  return false;
}

function canonical(value: object, skip: ReadonlySet<string>): string {
  const keys = Object.keys(value)
    .filter((k) => !skip.has(k))
    .sort();
  return stable(Object.fromEntries(keys.map((k) => [k, (value as Record<string, unknown>)[k]])));
}

function stable(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stable).join(",")}]`;
  if (v !== null && typeof v === "object") {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .filter((k) => o[k] !== undefined && o[k] !== null)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stable(o[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(v) ?? "null";
}
