import { type Envelope, schemas } from "./event-schema.ts";

/**
 * The first record of every cluster's log. Written once, by the first server
 * to find the log empty; a second one (two servers racing at bootstrap) is
 * rejected at apply, so the first wins everywhere.
 */
export interface ClusterBootstrapped {
  readonly ClusterID: string;
  readonly CreateTime: number;
  readonly ServerName: string;
}

export type ClusterEvent = Envelope<"ClusterBootstrapped", ClusterBootstrapped>;

export const clusterSchemas = schemas({ type: "ClusterBootstrapped", version: 1 });
