import type { PlacementMetrics } from "../../../streams/allocs.ts";
import type { TaskGroupSpec } from "../../../streams/jobs.ts";

/** One node's scores for a placement (Nomad's NodeScoreMeta). */
export interface NodeScoreMeta {
  readonly NodeID: string;
  readonly Scores: Readonly<Record<string, number>>;
  readonly NormScore: number;
}

/**
 * Nomad's AllocMetric: what one placement attempt looked at and why nodes
 * were passed over. Evaluations carry it per failed task group
 * (FailedTGAllocs), as Nomad's JSON shows it.
 */
export class AllocMetric {
  NodesEvaluated = 0;
  NodesFiltered = 0;
  NodesInPool = 0;
  NodesAvailable: Record<string, number> | null = null;
  ClassFiltered: Record<string, number> | null = null;
  ConstraintFiltered: Record<string, number> | null = null;
  NodesExhausted = 0;
  ClassExhausted: Record<string, number> | null = null;
  DimensionExhausted: Record<string, number> | null = null;
  QuotaExhausted: string[] | null = null;
  ResourcesExhausted: Record<string, Record<string, number>> | null = null;
  AllocationTime = 0;
  CoalescedFailures = 0;
  private scoreMeta: NodeScoreMeta[] | null = null;
  private pendingScoreMeta: (() => NodeScoreMeta[]) | null = null;

  /** Nomad's top scores of the placement; built when read (most placements succeed and nobody reads them). */
  get ScoreMetaData(): NodeScoreMeta[] | null {
    if (this.pendingScoreMeta) {
      this.scoreMeta = this.pendingScoreMeta();
      this.pendingScoreMeta = null;
    }
    return this.scoreMeta;
  }

  set ScoreMetaData(meta: NodeScoreMeta[] | null) {
    this.scoreMeta = meta;
    this.pendingScoreMeta = null;
  }

  /** Sets ScoreMetaData to what `build` returns, when first read. */
  scoreMetaFrom(build: () => NodeScoreMeta[]): void {
    this.pendingScoreMeta = build;
  }

  /**
   * Nomad's FilterNode: counted per node class (the operator's NodeClass, not
   * the computed class) and per reason: the constraint, "missing drivers",
   * "distinct_hosts", or "computed class ineligible" when an earlier node of
   * the same computed class already failed.
   */
  filterNode(nodeClass: string, reason: string): void {
    this.NodesFiltered++;
    if (nodeClass !== "") {
      this.ClassFiltered ??= {};
      this.ClassFiltered[nodeClass] = (this.ClassFiltered[nodeClass] ?? 0) + 1;
    }
    this.ConstraintFiltered ??= {};
    this.ConstraintFiltered[reason] = (this.ConstraintFiltered[reason] ?? 0) + 1;
  }

  /** Nomad's ExhaustedNode: counted per node class (NodeClass) and per dimension. */
  exhaustedNode(nodeClass: string, dimension: string): void {
    this.NodesExhausted++;
    if (nodeClass !== "") {
      this.ClassExhausted ??= {};
      this.ClassExhausted[nodeClass] = (this.ClassExhausted[nodeClass] ?? 0) + 1;
    }
    this.DimensionExhausted ??= {};
    this.DimensionExhausted[dimension] = (this.DimensionExhausted[dimension] ?? 0) + 1;
  }

  /** Nomad's ExhaustResources: what the group asked for, per task. */
  exhaustResources(tg: TaskGroupSpec): void {
    if (this.DimensionExhausted === null) return;
    this.ResourcesExhausted ??= {};
    for (const t of tg.Tasks) {
      const prev = this.ResourcesExhausted[t.Name] ?? { CPU: 0, MemoryMB: 0, DiskMB: 0 };
      this.ResourcesExhausted[t.Name] = {
        CPU: (prev.CPU ?? 0) + t.Resources.CPU,
        MemoryMB: (prev.MemoryMB ?? 0) + t.Resources.MemoryMB,
        DiskMB: prev.DiskMB ?? 0,
      };
    }
  }

  /** Whether the search has more to tell than the chosen node's score: nodes filtered or exhausted. */
  get eventful(): boolean {
    return this.NodesFiltered > 0 || this.NodesExhausted > 0;
  }

  /** What a placement records of the search (its non-zero fields; NodesEvaluated travels on its own). */
  explanation(): PlacementMetrics {
    const out: { -readonly [K in keyof PlacementMetrics]: PlacementMetrics[K] } = {};
    if (this.NodesFiltered > 0) out.NodesFiltered = this.NodesFiltered;
    if (this.NodesInPool > 0) out.NodesInPool = this.NodesInPool;
    if (this.NodesAvailable) out.NodesAvailable = this.NodesAvailable;
    if (this.ClassFiltered) out.ClassFiltered = this.ClassFiltered;
    if (this.ConstraintFiltered) out.ConstraintFiltered = this.ConstraintFiltered;
    if (this.NodesExhausted > 0) out.NodesExhausted = this.NodesExhausted;
    if (this.ClassExhausted) out.ClassExhausted = this.ClassExhausted;
    if (this.DimensionExhausted) out.DimensionExhausted = this.DimensionExhausted;
    const scores = this.ScoreMetaData;
    if (scores && scores.length > 0) out.ScoreMetaData = scores;
    return out;
  }

  toJSON(): Record<string, unknown> {
    return {
      NodesEvaluated: this.NodesEvaluated,
      NodesFiltered: this.NodesFiltered,
      NodesInPool: this.NodesInPool,
      NodesAvailable: this.NodesAvailable,
      ClassFiltered: this.ClassFiltered,
      ConstraintFiltered: this.ConstraintFiltered,
      NodesExhausted: this.NodesExhausted,
      ClassExhausted: this.ClassExhausted,
      DimensionExhausted: this.DimensionExhausted,
      QuotaExhausted: this.QuotaExhausted,
      ResourcesExhausted: this.ResourcesExhausted,
      Scores: null,
      ScoreMetaData: this.ScoreMetaData,
      AllocationTime: this.AllocationTime,
      CoalescedFailures: this.CoalescedFailures,
    };
  }
}
