/** Nomad's binPackingMaxFitScore: scores are divided by it to fall in [0, 1]. */
const MAX_FIT_SCORE = 18;

/**
 * Nomad's ScoreFitBinPack (fuller nodes score higher: 0 for an empty node,
 * 18 for a perfect fit) or ScoreFitSpread (the reverse), normalized to
 * [0, 1], from what the node offers and would have in use with the
 * placement. Plain numbers: it runs for every node scored.
 */
export function fitScoreOf(
  capacityCpu: number,
  capacityMemoryMB: number,
  usedCpu: number,
  usedMemoryMB: number,
  algorithm: "binpack" | "spread",
): number {
  // Nomad's computeFreePercentage: the share of CPU and memory left free.
  const cpu = capacityCpu > 0 ? 1 - usedCpu / capacityCpu : 0;
  const mem = capacityMemoryMB > 0 ? 1 - usedMemoryMB / capacityMemoryMB : 0;
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
