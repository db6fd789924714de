import { aclSchemas } from "./acl.ts";
import { allocSchemas } from "./allocs.ts";
import { clusterSchemas } from "./cluster.ts";
import { csiSchemas } from "./csi.ts";
import { csiDetachSchemas } from "./csi-detach.ts";
import { deploymentSchemas } from "./deployments.ts";
import { evalSchemas } from "./evals.ts";
import type { EventSchema } from "./event-schema.ts";
import { gcSchemas } from "./gc.ts";
import { jobScalingSchemas } from "./job-scaling.ts";
import { jobSchemas } from "./jobs.ts";
import { keyringSchemas } from "./keyring.ts";
import { leadershipSchemas } from "./leadership.ts";
import { namespaceSchemas } from "./namespaces.ts";
import { nodePoolSchemas } from "./node-pools.ts";
import { nodeSchemas } from "./nodes.ts";
import { periodicSchemas } from "./periodic.ts";
import { schedulerConfigSchemas } from "./scheduler-config.ts";
import { serviceRegistrationSchemas } from "./service-registrations.ts";
import { variableSchemas } from "./variables.ts";

/** Every event type the log may hold, with its current schema version. */
export const allSchemas: readonly EventSchema[] = [
  ...clusterSchemas,
  ...leadershipSchemas,
  ...namespaceSchemas,
  ...evalSchemas,
  ...schedulerConfigSchemas,
  ...nodeSchemas,
  ...nodePoolSchemas,
  ...allocSchemas,
  ...gcSchemas,
  ...jobSchemas,
  ...jobScalingSchemas,
  ...periodicSchemas,
  ...keyringSchemas,
  ...variableSchemas,
  ...aclSchemas,
  ...serviceRegistrationSchemas,
  ...deploymentSchemas,
  ...csiSchemas,
  ...csiDetachSchemas,
];
