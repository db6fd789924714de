import type { AllocRow } from "../../../projections/allocs.ts";
import type { JobRow } from "../../../projections/jobs.ts";
import type { NetworkOffer } from "../../../projections/networks.ts";
import type { NodeRow } from "../../../projections/nodes.ts";
import { type Capacity, groupUsage, nodeCapacity, type Usage } from "../../../projections/resources.ts";
import type { TaskGroupSpec } from "../../../streams/jobs.ts";
import type { Table } from "../../store/table.ts";
import { CLASS_INELIGIBLE, type Feasibility } from "./feasibility.ts";
import { AllocMetric, type NodeScoreMeta } from "./metrics.ts";
import { NetworkIndex } from "./network-index.ts";
import type { NodeUse, Plan } from "./plan.ts";
import { preemptionFor, preemptionScore } from "./preemption.ts";
import { type GroupPreferences, PlacementPreferences } from "./preferences.ts";
import { antiAffinityPenalty, fitScoreOf, RESCHEDULE_PENALTY } from "./ranking.ts";
import { LazyShuffle } from "./rng.ts";

/** Nomad's LimitIterator knobs: options scoring at or below 0 are skipped, at most 3 of them. */
const SKIP_SCORE_THRESHOLD = 0;
const MAX_SKIP = 3;
const SCORE_META_KEPT = 5;

export interface SelectOptions {
  /** Nodes a rescheduled allocation failed on (Nomad's PenaltyNodeIDs). */
  readonly penaltyNodes?: ReadonlySet<string>;
  /** The allocation's name (Nomad's AllocName): a per_alloc volume is `source[index]` of it. */
  readonly allocName?: string;
}

export interface Selection {
  readonly node: NodeRow;
  readonly score: number;
  /** Allocations to evict for the placement to fit (Nomad's RankedNode.PreemptedAllocs). */
  readonly preempted?: readonly AllocRow[];
  /** The ports and networks given, for a group that asks for some. */
  readonly network?: NetworkOffer;
}

/** A feasible node with its scores (Nomad's RankedNode), kept as numbers: most are never shown. */
interface RankedOption {
  readonly node: NodeRow;
  readonly binpack: number;
  /** Nomad's job anti-affinity penalty; 0 when the node runs none of the group. */
  readonly antiAffinity: number;
  /** A node the allocation failed on (Nomad's node-reschedule-penalty). */
  readonly penalized: boolean;
  /** Nomad's node-affinity; undefined when the group has affinities none of which the node matches (Nomad records none). */
  readonly affinity: number | undefined;
  /** Nomad's allocation-spread; 0 is not recorded. */
  readonly spread: number;
  readonly final: number;
  readonly preempted?: readonly AllocRow[];
  /** Nomad's "preemption" score, when the option preempts and the stack scores it. */
  readonly preemption?: number;
  readonly network?: NetworkOffer;
}

/**
 * What one evaluation learnt of a node at its first visit: whether the job
 * may use it at all, what it offers, its proposed use (the plan's, updated as
 * the plan places and stops), and the feasibility verdict for the last group
 * checked. Later visits (the order wraps around for a large job) read these
 * instead of the node row, so a placement costs a few numbers per node scored.
 */
class NodeSlot {
  use: NodeUse | undefined = undefined;
  /** The group whose verdict `groupOk` is, when it can be cached (nothing escaped, the node has a computed class). */
  group: string | undefined = undefined;
  groupOk = false;
  readonly cpu: number;
  readonly memoryMB: number;
  readonly diskMB: number;

  constructor(
    readonly node: NodeRow,
    readonly inPool: boolean,
    capacity: Capacity,
  ) {
    this.cpu = capacity.cpu;
    this.memoryMB = capacity.memoryMB;
    this.diskMB = capacity.diskMB;
  }
}

/**
 * Nomad's GenericStack for one evaluation: nodes in a random order seeded by
 * the evaluation (reproducible), feasibility (cached per computed class, and
 * per node for the evaluation), bin-packing against what the plan already
 * placed, and the limit iterator — only `limit` feasible nodes are scored per
 * placement (2 for batch jobs, log2 of the pool for service jobs, as Nomad),
 * so the cost of a placement does not grow with the cluster. The position in
 * the shuffled order carries over from one placement to the next, spreading
 * consecutive placements.
 */
export class PlacementStack {
  private offset = 0;
  private readonly source: LazyShuffle<string>;
  private readonly limit: number;
  /** Per position in the shuffled order: the node's slot, null when the node is gone. */
  private readonly slots: (NodeSlot | null | undefined)[] = [];
  /** Affinities, spreads and distinct_property; undefined for a job without any. */
  private readonly preferences: PlacementPreferences | undefined;
  private raisedLimit: number | undefined;
  /** The job's priority when this scheduler may preempt (see preemption.ts); undefined when it may not. */
  private preemptPriority: number | undefined = undefined;
  /** Nomad's generic stack scores the preemption an option needs; its system stack does not. */
  private scorePreemption = false;
  private readonly networks: NetworkIndex;

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
    this.preferences = PlacementPreferences.forJob(job, nodes, plan);
    this.networks = new NetworkIndex(plan, random);
    this.limit = batch ? 2 : Math.max(2, Math.ceil(Math.log2(Math.max(1, poolSize))));
  }

  /** Whether placements should record what their search saw (the job has affinities, spreads or distinct_property). */
  get explains(): boolean {
    return this.preferences !== undefined;
  }

  /** Lets placements evict allocations of jobs at least 10 below `priority` when a node does not fit. */
  enablePreemption(priority: number): void {
    this.preemptPriority = priority;
  }

  /** The best node for one allocation of `tg`, and the metric of the search. */
  select(tg: TaskGroupSpec, options: SelectOptions = {}): { selection?: Selection; metric: AllocMetric } {
    this.scorePreemption = true;
    const metric = this.newMetric();
    const n = this.source.length;
    // Asked for once a node is ranked: a search that finds none (a pass that places nothing) needs no usage.
    let ask: Readonly<Usage> | undefined;
    const cacheable = this.feasibility.cacheable(tg);
    const distinct = this.feasibility.hasDistinctHosts(tg);
    const volumes = this.feasibility.asksForVolumes(tg);
    const allocName = options.allocName ?? "";
    const prefs = this.preferences?.forGroup(tg);
    // Nomad raises the limit for a group with affinities or spreads, and the raised limit stays for the evaluation's later placements.
    if (prefs?.limit !== undefined) this.raisedLimit = prefs.limit;
    const limit = this.raisedLimit ?? this.limit;
    const picked: RankedOption[] = [];
    const skipped: RankedOption[] = [];
    for (let visited = 0; visited < n && picked.length < limit; visited++) {
      const slot = this.slotAt(this.offset);
      this.offset = (this.offset + 1) % n;
      if (!slot?.inPool) continue;
      metric.NodesEvaluated++;
      const node = slot.node;
      if (!this.feasibleOn(slot, tg, cacheable && node.ComputedClass !== "", metric)) continue;
      if (volumes && !this.feasibility.volumesFeasible(node, tg, allocName, metric)) continue;
      slot.use ??= this.plan.proposed(node.ID);
      if (distinct && !this.feasibility.distinctHosts(node, tg, slot.use, metric)) continue;
      if (prefs && !prefs.distinctProperty(node, metric)) continue;
      ask ??= groupUsage(tg);
      const option = this.rank(slot, slot.use, tg, ask, options.penaltyNodes, metric, undefined, prefs);
      if (!option) continue;
      if (option.final <= SKIP_SCORE_THRESHOLD && skipped.length < MAX_SKIP) {
        skipped.push(option);
        continue;
      }
      picked.push(option);
    }
    while (picked.length < limit && skipped.length > 0) picked.push(skipped.shift()!);
    return this.choose(picked, metric);
  }

  /** Nomad's stack with one node (system jobs, in-place updates): whether `tg` can run on `node`; the caller decides the node is in the pool. */
  selectOn(
    node: NodeRow,
    tg: TaskGroupSpec,
    allocName: string,
    releasing?: Readonly<Usage>,
  ): { selection?: Selection; metric: AllocMetric } {
    this.scorePreemption = false;
    const metric = this.newMetric();
    metric.NodesEvaluated++;
    const use = this.plan.proposed(node.ID);
    // An in-place update keeps its node: distinct_hosts has nothing to say about it.
    if (!this.feasibility.feasible(node, tg, releasing ? undefined : use, metric, allocName))
      return { metric };
    const prefs = releasing ? undefined : this.preferences?.forGroup(tg);
    if (prefs && !prefs.distinctProperty(node, metric)) return { metric };
    const slot = new NodeSlot(node, true, nodeCapacity(node));
    const option = this.rank(slot, use, tg, groupUsage(tg), undefined, metric, releasing);
    return this.choose(option ? [option] : [], metric);
  }

  private slotAt(position: number): NodeSlot | null {
    let slot = this.slots[position];
    if (slot === undefined) {
      const node = this.nodes.get(this.source.at(position));
      slot = node ? new NodeSlot(node, this.feasibility.inPool(node), nodeCapacity(node)) : null;
      this.slots[position] = slot;
    }
    return slot;
  }

  /**
   * The job's and the group's constraints and drivers on the slot's node.
   * Once a node's class has a verdict for the group it is kept on the slot;
   * a refusal is then counted as Nomad counts it for a class it already
   * marked ineligible.
   */
  private feasibleOn(slot: NodeSlot, tg: TaskGroupSpec, cacheable: boolean, metric: AllocMetric): boolean {
    if (cacheable && slot.group === tg.Name) {
      if (!slot.groupOk) metric.filterNode(slot.node.NodeClass, CLASS_INELIGIBLE);
      return slot.groupOk;
    }
    const ok = this.feasibility.constraintsFeasible(slot.node, tg, metric);
    if (cacheable) {
      slot.group = tg.Name;
      slot.groupOk = ok;
    }
    return ok;
  }

  private newMetric(): AllocMetric {
    const metric = new AllocMetric();
    metric.NodesAvailable = this.available;
    metric.NodesInPool = this.poolSize;
    return metric;
  }

  /** Bin-packing and the other scores of a feasible node; undefined when the group does not fit. */
  private rank(
    slot: NodeSlot,
    use: NodeUse,
    tg: TaskGroupSpec,
    ask: Readonly<Usage>,
    penaltyNodes: ReadonlySet<string> | undefined,
    metric: AllocMetric,
    releasing: Readonly<Usage> | undefined,
    prefs?: GroupPreferences,
  ): RankedOption | undefined {
    const node = slot.node;
    // Nomad's BinPackIterator gives ports first; an in-place update keeps the ones it holds.
    let network: NetworkOffer | undefined;
    if (!releasing && this.networks.asksFor(tg)) {
      network = this.networks.offer(node, use, tg, metric);
      if (!network) return undefined;
    }
    let cpu = use.used.cpu;
    let memoryMB = use.used.memoryMB;
    let diskMB = use.used.diskMB;
    if (releasing) {
      cpu -= releasing.cpu;
      memoryMB -= releasing.memoryMB;
      diskMB -= releasing.diskMB;
    }
    cpu += ask.cpu;
    memoryMB += ask.memoryMB;
    diskMB += ask.diskMB;
    // Nomad's AllocsFit order.
    const dimension =
      cpu > slot.cpu
        ? "cpu"
        : memoryMB > slot.memoryMB
          ? "memory"
          : diskMB > slot.diskMB
            ? "disk"
            : undefined;
    // An in-place update never preempts: it becomes destructive instead.
    const preempted =
      dimension && this.preemptPriority !== undefined && !releasing
        ? preemptionFor(this.plan, this.preemptPriority, slot, use, ask)
        : undefined;
    if (dimension && !preempted) {
      metric.exhaustedNode(node.NodeClass, dimension);
      return undefined;
    }
    const binpack = fitScoreOf(slot.cpu, slot.memoryMB, cpu, memoryMB, this.algorithm);
    // Nomad's ScoreNormalizationIterator: the mean of the scores that apply, summed in its order.
    let sum = binpack;
    let scorers = 1;
    const collisions = use.count(this.job.ID, tg.Name) - (releasing ? 1 : 0);
    const antiAffinity = antiAffinityPenalty(collisions, tg.Count) ?? 0;
    if (collisions > 0) {
      sum += antiAffinity;
      scorers++;
    }
    const penalized = penaltyNodes?.has(node.ID) === true;
    if (penalized) {
      sum += RESCHEDULE_PENALTY;
      scorers++;
    }
    // Nomad's NodeAffinityIterator and SpreadIterator: a score of 0 is not a score.
    let affinity: number | undefined = 0;
    let spread = 0;
    if (prefs) {
      affinity = prefs.affinity(node);
      if (affinity !== 0) {
        sum += affinity;
        scorers++;
      } else if (prefs.hasAffinities) affinity = undefined;
      spread = prefs.spread(node);
      if (spread !== 0) {
        sum += spread;
        scorers++;
      }
    }
    if (!preempted)
      return { node, binpack, antiAffinity, penalized, affinity, spread, final: sum / scorers, network };
    // Nomad's PreemptionScoringIterator comes after the spread, before normalization.
    const preemption = this.scorePreemption ? preemptionScore(preempted) : undefined;
    if (preemption !== undefined) {
      sum += preemption;
      scorers++;
    }
    return {
      node,
      binpack,
      antiAffinity,
      penalized,
      affinity,
      spread,
      final: sum / scorers,
      preempted,
      preemption,
      network,
    };
  }

  private choose(
    picked: readonly RankedOption[],
    metric: AllocMetric,
  ): { selection?: Selection; metric: AllocMetric } {
    if (picked.length === 0) return { metric };
    // Nomad's MaxScoreIterator: the first of the best.
    let best = picked[0]!;
    for (const o of picked) if (o.final > best.final) best = o;
    metric.scoreMetaFrom(() => scoreMeta(picked));
    const selection: Selection = {
      node: best.node,
      score: best.final,
      preempted: best.preempted,
      network: best.network,
    };
    return { selection, metric };
  }
}

/** Nomad's ScoreMetaData: the best few options with every score Nomad records for them, zeros included. */
function scoreMeta(picked: readonly RankedOption[]): NodeScoreMeta[] {
  // The best few in one pass: with affinities or spreads thousands of nodes may be scored.
  const best: RankedOption[] = [];
  for (const o of picked) {
    if (best.length === SCORE_META_KEPT && o.final <= best[best.length - 1]!.final) continue;
    let i = best.length;
    while (i > 0 && best[i - 1]!.final < o.final) i--;
    best.splice(i, 0, o);
    if (best.length > SCORE_META_KEPT) best.pop();
  }
  return best.map((o) => ({
    NodeID: o.node.ID,
    Scores: {
      binpack: o.binpack,
      "job-anti-affinity": o.antiAffinity,
      "node-reschedule-penalty": o.penalized ? RESCHEDULE_PENALTY : 0,
      ...(o.affinity === undefined ? {} : { "node-affinity": o.affinity }),
      ...(o.spread === 0 ? {} : { "allocation-spread": o.spread }),
      ...(o.preemption === undefined ? {} : { preemption: o.preemption }),
    },
    NormScore: o.final,
  }));
}
