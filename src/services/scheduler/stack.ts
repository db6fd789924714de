import type { JobRow } from "../../../projections/jobs.ts";
import type { NodeRow } from "../../../projections/nodes.ts";
import {
  addUsage,
  exhaustedDimension,
  groupAllocation,
  nodeCapacity,
  type Usage,
} from "../../../projections/resources.ts";
import type { TaskGroupSpec } from "../../../streams/jobs.ts";
import type { Table } from "../../store/table.ts";
import type { Feasibility } from "./feasibility.ts";
import { AllocMetric, type NodeScoreMeta } from "./metrics.ts";
import type { Plan } from "./plan.ts";
import { antiAffinityPenalty, fitScore, normalize, RESCHEDULE_PENALTY } from "./ranking.ts";
import { LazyShuffle } from "./rng.ts";

/** Nomad's LimitIterator knobs: options scoring at or below 0 are skipped, at most 3 of them. */
const SKIP_SCORE_THRESHOLD = 0;
const MAX_SKIP = 3;
const SCORE_META_KEPT = 5;

export interface SelectOptions {
  /** Nodes a rescheduled allocation failed on (Nomad's PenaltyNodeIDs). */
  readonly penaltyNodes?: ReadonlySet<string>;
}

export interface Selection {
  readonly node: NodeRow;
  readonly score: number;
}

interface RankedOption {
  readonly node: NodeRow;
  readonly scores: Record<string, number>;
  readonly final: number;
}

/**
 * Nomad's GenericStack for one evaluation: nodes in a random order seeded by
 * the evaluation (reproducible), feasibility, bin-packing against what the
 * plan already placed, and the limit iterator — only `limit` feasible nodes
 * are scored per placement (2 for batch jobs, log2 of the pool for service
 * jobs, as Nomad), so the cost of a placement does not grow with the
 * cluster. The position in the shuffled order carries over from one
 * placement to the next, spreading consecutive placements.
 */
export class PlacementStack {
  private offset = 0;
  private readonly source: LazyShuffle<string>;
  private readonly limit: number;

  constructor(
    private readonly nodes: Table<NodeRow>,
    readyNodeIDs: readonly string[],
    random: () => number,
    private readonly job: JobRow,
    private readonly plan: Plan,
    private readonly feasibility: Feasibility,
    private readonly algorithm: "binpack" | "spread",
    private readonly poolSize: number,
    batch: boolean,
    private readonly available: Record<string, number>,
  ) {
    this.source = new LazyShuffle(readyNodeIDs, random);
    this.limit = batch ? 2 : Math.max(2, Math.ceil(Math.log2(Math.max(1, poolSize))));
  }

  /** The best node for one allocation of `tg`, and the metric of the search. */
  select(tg: TaskGroupSpec, options: SelectOptions = {}): { selection?: Selection; metric: AllocMetric } {
    const metric = this.newMetric();
    const n = this.source.length;
    const picked: RankedOption[] = [];
    const skipped: RankedOption[] = [];
    for (let visited = 0; visited < n && picked.length < this.limit; visited++) {
      const id = this.source.at(this.offset);
      this.offset = (this.offset + 1) % n;
      const node = this.nodes.get(id);
      if (!node || !this.feasibility.inPool(node)) continue;
      metric.NodesEvaluated++;
      const option = this.rank(node, tg, options, metric);
      if (!option) continue;
      if (option.final <= SKIP_SCORE_THRESHOLD && skipped.length < MAX_SKIP) {
        skipped.push(option);
        continue;
      }
      picked.push(option);
    }
    while (picked.length < this.limit && skipped.length > 0) picked.push(skipped.shift()!);
    return this.choose(picked, metric);
  }

  /** Nomad's stack with one node (system jobs, in-place updates): whether `tg` can run on `node`; the caller decides the node is in the pool. */
  selectOn(
    node: NodeRow,
    tg: TaskGroupSpec,
    releasing?: Readonly<Usage>,
  ): { selection?: Selection; metric: AllocMetric } {
    const metric = this.newMetric();
    metric.NodesEvaluated++;
    const option = this.rank(node, tg, {}, metric, releasing);
    return this.choose(option ? [option] : [], metric);
  }

  private newMetric(): AllocMetric {
    const metric = new AllocMetric();
    metric.NodesAvailable = this.available;
    metric.NodesInPool = this.poolSize;
    return metric;
  }

  private rank(
    node: NodeRow,
    tg: TaskGroupSpec,
    options: SelectOptions,
    metric: AllocMetric,
    releasing?: Readonly<Usage>,
  ): RankedOption | undefined {
    const use = this.plan.proposed(node.ID);
    if (!this.feasibility.feasible(node, tg, releasing ? undefined : use, metric)) return undefined;
    const used: Usage = { cpu: 0, memoryMB: 0, diskMB: 0 };
    addUsage(used, use.used);
    if (releasing) addUsage(used, releasing, -1);
    addUsage(used, groupAllocation(tg).usage);
    const capacity = nodeCapacity(node);
    const dimension = exhaustedDimension(capacity, used);
    if (dimension) {
      metric.exhausted(node.ComputedClass, dimension);
      return undefined;
    }
    const scores: Record<string, number> = { binpack: fitScore(capacity, used, this.algorithm) };
    const penalty = antiAffinityPenalty(use.count(this.job.ID, tg.Name) - (releasing ? 1 : 0), tg.Count);
    if (penalty !== undefined) scores["job-anti-affinity"] = penalty;
    if (options.penaltyNodes?.has(node.ID)) scores["node-reschedule-penalty"] = RESCHEDULE_PENALTY;
    return { node, scores, final: normalize(scores) };
  }

  private choose(
    picked: readonly RankedOption[],
    metric: AllocMetric,
  ): { selection?: Selection; metric: AllocMetric } {
    if (picked.length === 0) return { metric };
    let best = picked[0]!;
    for (const o of picked) if (o.final > best.final) best = o;
    const meta: NodeScoreMeta[] = [...picked]
      .sort((a, b) => b.final - a.final)
      .slice(0, SCORE_META_KEPT)
      .map((o) => ({ NodeID: o.node.ID, Scores: o.scores, NormScore: o.final }));
    metric.ScoreMetaData = meta;
    return { selection: { node: best.node, score: best.final }, metric };
  }
}
