import type { Capacity, Usage } from "../../../projections/resources.ts";

/** Nomad's binPackingMaxFitScore: scores are divided by it to fall in [0, 1]. */
const MAX_FIT_SCORE = 18;

/** Nomad's computeFreePercentage: the share of CPU and memory left free with the placement. */
function freeShares(capacity: Capacity, used: Readonly<Usage>): [number, number] {
  const cpu = capacity.cpu > 0 ? 1 - used.cpu / capacity.cpu : 0;
  const mem = capacity.memoryMB > 0 ? 1 - used.memoryMB / capacity.memoryMB : 0;
  return [cpu, mem];
}

/**
 * Nomad's ScoreFitBinPack (fuller nodes score higher: 0 for an empty node,
 * 18 for a perfect fit) or ScoreFitSpread (the reverse), normalized to [0, 1].
 */
export function fitScore(capacity: Capacity, used: Readonly<Usage>, algorithm: "binpack" | "spread"): number {
  const [cpu, mem] = freeShares(capacity, used);
  const total = 10 ** cpu + 10 ** mem;
  let score = algorithm === "spread" ? total - 2 : 20 - total;
  if (score > MAX_FIT_SCORE) score = MAX_FIT_SCORE;
  else if (score < 0) score = 0;
  return score / MAX_FIT_SCORE;
}

/** Nomad's JobAntiAffinityIterator penalty for `collisions` allocations of the same group already on the node. */
export function antiAffinityPenalty(collisions: number, desiredCount: number): number | undefined {
  if (collisions <= 0) return undefined;
  return (-1 * (collisions + 1)) / Math.max(1, desiredCount);
}

/** Nomad's NodeReschedulingPenaltyIterator: the node a failed allocation ran on scores -1. */
export const RESCHEDULE_PENALTY = -1;

/** Nomad's ScoreNormalizationIterator: the mean of the scores an option collected. */
export function normalize(scores: Readonly<Record<string, number>>): number {
  const values = Object.values(scores);
  if (values.length === 0) return 0;
  let sum = 0;
  for (const v of values) sum += v;
  return sum / values.length;
}
