import type { Projection } from "../src/store/projection.ts";
import { clusterProjection } from "./cluster.ts";
import { evalsProjection } from "./evals.ts";
import { namespacesProjection } from "./namespaces.ts";
import { schedulerConfigProjection } from "./scheduler-config.ts";

/**
 * Fresh, empty instances of every projection, in the order they apply a
 * record. Each server (and each replay) gets its own set.
 */
export function createProjections() {
  const cluster = clusterProjection();
  const namespaces = namespacesProjection();
  const schedulerConfig = schedulerConfigProjection();
  const evals = evalsProjection({ schedulerConfig: schedulerConfig.schedulerConfig });
  const all: Projection[] = [
    cluster.projection,
    namespaces.projection,
    schedulerConfig.projection,
    evals.projection,
  ];
  return {
    all,
    tables: {
      cluster: cluster.cluster,
      namespaces: namespaces.namespaces,
      evals: evals.evals,
      evalDeletes: evals.evalDeletes,
      schedulerConfig: schedulerConfig.schedulerConfig,
    },
  };
}

export type Projections = ReturnType<typeof createProjections>;
