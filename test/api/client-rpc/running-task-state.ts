import { events, newTaskState, rfc3339, type TaskState } from "../../../src/nodesim/task-states.ts";

/** A task state as the simulator reports a task started at `ms`: running, with its four events. */
export function runningTaskState(ms: number): TaskState {
  const state = newTaskState();
  state.State = "running";
  state.StartedAt = rfc3339(ms);
  state.Events.push(
    events.received(ms - 30),
    events.setup(ms - 20),
    events.driver(ms - 10, "Downloading image"),
    events.started(ms),
  );
  return state;
}
