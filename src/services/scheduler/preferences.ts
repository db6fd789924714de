import type { JobRow } from "../../../projections/jobs.ts";
import type { NodeRow } from "../../../projections/nodes.ts";
import type { Constraint, TaskGroupSpec } from "../../../streams/jobs.ts";
import type { Table } from "../../store/table.ts";
import { checkConstraint, resolveTarget } from "./constraints.ts";
import type { AllocMetric } from "./metrics.ts";
import type { Plan } from "./plan.ts";
import { IMPLICIT_TARGET, PropertySet } from "./property-set.ts";

/** Nomad's Affinity as a job carries it (Weight defaults to 50, as Nomad's api Canonicalize sets it). */
interface Affinity extends Constraint {
  readonly Weight?: number;
}

/** Nomad's Spread. */
interface Spread {
  readonly Attribute: string;
  readonly Weight?: number;
  readonly SpreadTarget?: readonly { readonly Value: string; readonly Percent?: number }[] | null;
}

const DEFAULT_WEIGHT = 50;
/** Nomad's GenericStack.Select: with affinities or spreads, at least this many nodes are scored per placement. */
const WIDE_LIMIT = 100;

const affinitiesOf = (x: { readonly [field: string]: unknown }): readonly Affinity[] =>
  Array.isArray(x.Affinities) ? (x.Affinities as Affinity[]) : [];
const spreadsOf = (x: { readonly [field: string]: unknown }): readonly Spread[] =>
  Array.isArray(x.Spreads) ? (x.Spreads as Spread[]) : [];
const weightOf = (x: { readonly Weight?: number }) =>
  typeof x.Weight === "number" ? x.Weight : DEFAULT_WEIGHT;

/** A spread's desired counts for one group (Nomad's spreadInfo). */
interface SpreadInfo {
  readonly weight: number;
  /** Target value (or `*`) → desired allocations; empty: spread evenly. */
  readonly desired: ReadonlyMap<string, number>;
}

/**
 * What a job asks of placement beyond constraints: distinct_property
 * (Nomad's DistinctPropertyIterator), affinities (NodeAffinityIterator) and
 * spreads (SpreadIterator), for one evaluation. Built only for a job that
 * has one of them, so a job that only asks for a count pays nothing.
 */
export class PlacementPreferences {
  private readonly groups = new Map<string, GroupPreferences>();
  private readonly jobDistinct: PropertySet[] = [];
  /** Nomad's SpreadIterator.sumSpreadWeights: it grows with each group's spreads, the job's counted again per group. */
  sumSpreadWeights = 0;
  /** Nomad's SpreadIterator.lowestSpreadBoost: what a target of 0% scores. */
  lowestSpreadBoost = -1;

  private constructor(
    readonly job: JobRow,
    readonly nodes: Table<NodeRow>,
    readonly plan: Plan,
  ) {
    for (const c of job.Constraints ?? []) {
      if (c.Operand === "distinct_property") this.jobDistinct.push(this.distinctSet(c, ""));
    }
  }

  /** Undefined when neither the job, its groups nor its tasks have affinities, spreads or distinct_property. */
  static forJob(job: JobRow, nodes: Table<NodeRow>, plan: Plan): PlacementPreferences | undefined {
    const any =
      hasPreferences(job, job.Constraints) ||
      job.TaskGroups.some(
        (tg) => hasPreferences(tg, tg.Constraints) || tg.Tasks.some((t) => affinitiesOf(t).length > 0),
      );
    return any ? new PlacementPreferences(job, nodes, plan) : undefined;
  }

  /** The group's preferences, up to date with the plan; undefined when it has none. */
  forGroup(tg: TaskGroupSpec): GroupPreferences | undefined {
    let g = this.groups.get(tg.Name);
    if (!g) {
      g = new GroupPreferences(this, tg, this.jobDistinct);
      this.groups.set(tg.Name, g);
    }
    if (!g.any) return undefined;
    g.sync();
    return g;
  }

  distinctSet(c: Constraint, taskGroup: string): PropertySet {
    // Validation accepts only digits; empty means 1 (Nomad's propertySet.setConstraint).
    const allowed = c.RTarget === "" ? 1 : Number(c.RTarget);
    return new PropertySet(this.nodes, this.plan, c.LTarget, taskGroup, null, allowed);
  }
}

/**
 * Affinities, spreads or a distinct_property constraint on a job or group. A
 * module function, not a closure per pass: under tsx each closure made costs
 * a defineProperty of its name (`__name`).
 */
function hasPreferences(
  x: { readonly [field: string]: unknown },
  constraints: readonly Constraint[] | null,
): boolean {
  return (
    affinitiesOf(x).length > 0 ||
    spreadsOf(x).length > 0 ||
    (constraints ?? []).some((c) => c.Operand === "distinct_property")
  );
}

/** One group's share of {@link PlacementPreferences}. */
export class GroupPreferences {
  readonly any: boolean;
  /** Nomad's limit: max(count, 100) nodes scored when the group has affinities or spreads. */
  readonly limit: number | undefined;
  private readonly distinct: readonly PropertySet[];
  private readonly affinities: readonly Affinity[];
  private readonly affinityWeights: number;
  private readonly affinityByNode = new Map<string, number>();
  private readonly spreads: readonly { readonly set: PropertySet; readonly info: SpreadInfo | undefined }[];

  constructor(
    private readonly prefs: PlacementPreferences,
    tg: TaskGroupSpec,
    jobDistinct: readonly PropertySet[],
  ) {
    const job = prefs.job;
    const groupDistinct = (tg.Constraints ?? [])
      .filter((c) => c.Operand === "distinct_property")
      .map((c) => prefs.distinctSet(c, tg.Name));
    this.distinct = [...jobDistinct, ...groupDistinct];

    // Nomad's NodeAffinityIterator.SetTaskGroup: the job's, the group's, then each task's.
    this.affinities = [
      ...affinitiesOf(job),
      ...affinitiesOf(tg),
      ...tg.Tasks.flatMap((t) => affinitiesOf(t)),
    ];
    this.affinityWeights = this.affinities.reduce((s, a) => s + Math.abs(weightOf(a)), 0);

    // Nomad's SpreadIterator: a property set per spread (the job's first), and
    // the desired counts per attribute (the group's first, the job's win a tie).
    const jobSpreads = spreadsOf(job);
    const groupSpreads = spreadsOf(tg);
    const infos = new Map<string, SpreadInfo>();
    for (const s of [...groupSpreads, ...jobSpreads]) {
      const desired = new Map<string, number>();
      let sum = 0;
      for (const t of s.SpreadTarget ?? []) {
        const n = ((t.Percent ?? 0) / 100) * tg.Count;
        desired.set(t.Value, n);
        sum += n;
      }
      if (sum > 0 && sum < tg.Count) desired.set(IMPLICIT_TARGET, tg.Count - sum);
      infos.set(s.Attribute, { weight: weightOf(s), desired });
      prefs.sumSpreadWeights += weightOf(s);
    }
    this.spreads = [...jobSpreads, ...groupSpreads].map((s) => ({
      set: new PropertySet(
        prefs.nodes,
        prefs.plan,
        s.Attribute,
        tg.Name,
        new Set((s.SpreadTarget ?? []).map((t) => t.Value)),
        0,
      ),
      info: infos.get(s.Attribute),
    }));

    const scores = this.affinities.length > 0 || this.spreads.length > 0;
    this.limit = scores ? Math.max(tg.Count, WIDE_LIMIT) : undefined;
    this.any = scores || this.distinct.length > 0;
  }

  /** Whether the group has affinities (Nomad records a node-affinity of 0 for every node when it has none). */
  get hasAffinities(): boolean {
    return this.affinities.length > 0;
  }

  sync(): void {
    for (const s of this.distinct) s.sync();
    for (const s of this.spreads) s.set.sync();
  }

  /** Nomad's DistinctPropertyIterator: whether the node may take one more allocation, counting a refusal. */
  distinctProperty(node: NodeRow, metric: AllocMetric): boolean {
    for (const s of this.distinct) {
      const refusal = s.distinctRefusal(node);
      if (refusal !== undefined) {
        metric.filterNode(node.NodeClass, refusal);
        return false;
      }
    }
    return true;
  }

  /** Nomad's NodeAffinityIterator: matching weights over the sum of all weights' magnitudes; 0 without affinities. */
  affinity(node: NodeRow): number {
    if (this.affinities.length === 0) return 0;
    let score = this.affinityByNode.get(node.ID);
    if (score === undefined) {
      let total = 0;
      for (const a of this.affinities) {
        if (checkConstraint(a.Operand, resolveTarget(a.LTarget, node), resolveTarget(a.RTarget, node)))
          total += weightOf(a);
      }
      score = total / this.affinityWeights;
      this.affinityByNode.set(node.ID, score);
    }
    return score;
  }

  /** Nomad's SpreadIterator score for the node; 0 without spreads. */
  spread(node: NodeRow): number {
    let total = 0;
    for (const { set, info } of this.spreads) {
      const value = set.countedValue(node);
      if (value === null) {
        total -= 1;
        continue;
      }
      if (!info) continue;
      if (info.desired.size === 0) {
        total += evenSpreadBoost(set, node);
        continue;
      }
      const desired = info.desired.get(value) ?? info.desired.get(IMPLICIT_TARGET);
      if (desired === undefined) {
        total -= 1;
        continue;
      }
      const weight = info.weight / this.prefs.sumSpreadWeights;
      if (desired === 0) {
        total += this.prefs.lowestSpreadBoost;
        continue;
      }
      // This placement counts: one more than the value already has.
      const boost = ((desired - (set.usedBy(value) + 1)) / desired) * weight;
      total += boost;
      if (boost < this.prefs.lowestSpreadBoost) this.prefs.lowestSpreadBoost = boost;
    }
    return total;
  }
}

/**
 * Nomad's evenSpreadScoreBoost: without targets, values below the lowest
 * count gain, the values at the lowest count gain by how far the highest is
 * ahead, and an even spread scores -1 everywhere.
 */
export function evenSpreadBoost(set: PropertySet, node: NodeRow): number {
  if (set.empty) return 0;
  const value = resolveTarget(set.attribute, node);
  if (value === undefined) return -1;
  const current = set.countOf(value);
  const { min, max } = set.range();
  const deltaBoost = min === 0 ? -1 : (min - current) / min;
  if (current !== min) return deltaBoost;
  if (min === max) return -1;
  if (min === 0) return 1;
  return (max - min) / min;
}
