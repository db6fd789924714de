import { type Envelope, schemas } from "./event-schema.ts";

/**
 * A server took over the leader-only services (scheduler, heartbeat watcher,
 * ...). `Epoch` is the claim: the current epoch plus one, as the claimant saw
 * it. Apply accepts it only if that is still true, so of two servers racing
 * for the same epoch the first in the log wins and the other learns it lost.
 * Every write a leader-only service makes carries the epoch it was made
 * under (Actor.epoch); once a later epoch is established, those writes are
 * refused at apply, so a deposed leader's late writes change nothing.
 */
export interface LeadershipEstablished {
  readonly ServerName: string;
  /** The HTTP address the new leader advertises (where followers forward to). */
  readonly Address: string;
  readonly Epoch: number;
}

export type LeadershipEvent = Envelope<"LeadershipEstablished", LeadershipEstablished>;

export const leadershipSchemas = schemas({ type: "LeadershipEstablished", version: 1 });
