import { clusterSchemas } from "./cluster.ts";
import { evalSchemas } from "./evals.ts";
import type { EventSchema } from "./event-schema.ts";
import { namespaceSchemas } from "./namespaces.ts";
import { schedulerConfigSchemas } from "./scheduler-config.ts";

/** Every event type the log may hold, with its current schema version. */
export const allSchemas: readonly EventSchema[] = [
  ...clusterSchemas,
  ...namespaceSchemas,
  ...evalSchemas,
  ...schedulerConfigSchemas,
];
