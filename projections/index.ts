import type { Projection } from "../src/store/projection.ts";
import { clusterProjection } from "./cluster.ts";
import { namespacesProjection } from "./namespaces.ts";

/**
 * Fresh, empty instances of every projection, in the order they apply a
 * record. Each server (and each replay) gets its own set.
 */
export function createProjections() {
  const cluster = clusterProjection();
  const namespaces = namespacesProjection();
  const all: Projection[] = [cluster.projection, namespaces.projection];
  return { all, tables: { cluster: cluster.cluster, namespaces: namespaces.namespaces } };
}

export type Projections = ReturnType<typeof createProjections>;
