/**
 * Which table changes become event-stream events, and how, as Nomad derives
 * them (nomad/state/events.go): the topic, key and filter keys come from the
 * table and the row; secrets and bulky fields are left out of payloads.
 */
export interface TopicSpec {
  readonly topic: string;
  /** The payload's wrapper key, e.g. {"Node": …}. */
  readonly wrapper: string;
  readonly key: (row: Row) => string;
  readonly filterKeys: (row: Row) => string[];
  readonly namespace: (row: Row) => string;
  /** Whether a delete of a row is published (Nomad publishes few). */
  readonly publishDeletes: boolean;
  readonly payload: (row: Row) => Row;
}

type Row = Readonly<Record<string, unknown>>;

const str = (v: unknown) => (typeof v === "string" ? v : "");
const nonEmpty = (...values: unknown[]) => values.map(str).filter((v) => v !== "");
const without = (row: Row, ...fields: string[]) => {
  const copy: Record<string, unknown> = { ...row };
  for (const f of fields) delete copy[f];
  return copy;
};

export const TOPICS: Readonly<Record<string, TopicSpec>> = {
  evals: {
    topic: "Evaluation",
    wrapper: "Evaluation",
    key: (r) => str(r.ID),
    filterKeys: (r) => nonEmpty(r.JobID, r.DeploymentID),
    namespace: (r) => str(r.Namespace),
    publishDeletes: false,
    payload: (r) => r,
  },
  allocs: {
    topic: "Allocation",
    wrapper: "Allocation",
    key: (r) => str(r.ID),
    filterKeys: (r) => nonEmpty(r.JobID, r.DeploymentID),
    namespace: (r) => str(r.Namespace),
    publishDeletes: false,
    // Nomad strips the job from allocation events: it is large and has its own topic.
    payload: (r) => ({ ...r, Job: null }),
  },
  jobs: {
    topic: "Job",
    wrapper: "Job",
    key: (r) => str(r.ID),
    filterKeys: () => [],
    namespace: (r) => str(r.Namespace),
    publishDeletes: false,
    payload: (r) => r,
  },
  nodes: {
    topic: "Node",
    wrapper: "Node",
    key: (r) => str(r.ID),
    filterKeys: () => [],
    namespace: () => "",
    publishDeletes: true,
    // The hash of the node's secret stays in the server.
    payload: (r) => without(r, "SecretID", "SecretIDHash"),
  },
  deployments: {
    topic: "Deployment",
    wrapper: "Deployment",
    key: (r) => str(r.ID),
    filterKeys: (r) => nonEmpty(r.JobID),
    namespace: (r) => str(r.Namespace),
    publishDeletes: false,
    payload: (r) => r,
  },
  // Not a Nomad topic: namespaces change rarely but operators audit them too.
  namespaces: {
    topic: "Namespace",
    wrapper: "Namespace",
    key: (r) => str(r.Name),
    filterKeys: () => [],
    namespace: () => "",
    publishDeletes: true,
    payload: (r) => r,
  },
};

/** Every topic a subscriber may name. */
export const TOPIC_NAMES = new Set(Object.values(TOPICS).map((t) => t.topic));

/**
 * Nomad's event Type for a change: decided by the record that caused it (the
 * Raft message type in Nomad), refined for deletes. Records without a Nomad
 * equivalent keep their own event name.
 */
const EVENT_TYPES: Readonly<Record<string, string>> = {
  NodeRegistered: "NodeRegistration",
  NodeDeregistered: "NodeDeregistration",
  NodeStatusUpdated: "NodeStreamEvent",
  NodeEventsAppended: "NodeStreamEvent",
  // Nomad tags eligibility changes with the drain type too.
  NodeDrainUpdated: "NodeDrain",
  NodeEligibilityUpdated: "NodeDrain",
  AllocClientUpdated: "AllocationUpdated",
  AllocsDisconnected: "AllocationUpdated",
  AllocsReconnected: "AllocationUpdated",
  AllocsLost: "AllocationUpdated",
  AllocsDesiredTransitionUpdated: "AllocationUpdateDesiredStatus",
  AllocsPlanApplied: "PlanResult",
  EvaluationsUpserted: "EvaluationUpdated",
  NamespaceUpserted: "NamespaceUpserted",
  NamespaceDeleted: "NamespaceDeleted",
};

/** The Nomad event Type of a change caused by a record of `eventType`. */
export function nomadEventType(eventType: string, deleted: boolean, topic: string): string {
  if (deleted && topic === "Node") return "NodeDeregistration";
  return EVENT_TYPES[eventType] ?? eventType;
}
