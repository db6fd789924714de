import type { AllocRow } from "../../../projections/allocs.ts";
import { jobKey } from "../../../projections/evals.ts";
import type { NodeRow } from "../../../projections/nodes.ts";
import { isTerminalAlloc } from "../../../streams/allocs.ts";
import type { Table } from "../../store/table.ts";
import { resolveTarget } from "./constraints.ts";
import type { Plan } from "./plan.ts";

/** Nomad's implicitTarget: the values a spread's targets do not name. */
export const IMPLICIT_TARGET = "*";

/** What a node's value of the property is used by (Nomad's propertySet.UsedCount). */
export interface PropertyUse {
  /** The node's value as counted (`*` for a value a spread's targets do not name); undefined when the node lacks it. */
  readonly value: string | undefined;
  readonly count: number;
}

/**
 * Nomad's propertySet (scheduler/propertyset.go): how many allocations of a
 * job (of one group, or of every group for a job-level distinct_property)
 * run on nodes with each value of a node property, counting the job's
 * non-terminal allocations, the plan's placements, and discounting the
 * plan's stops. Nomad recomputes the plan's share before every placement;
 * here it follows the plan as it grows (placements are appended, stops are
 * watched), so a placement costs nothing per value, and the lowest and
 * highest counts come from a histogram of counts (few distinct counts, even
 * with a value per node).
 */
export class PropertySet {
  private readonly existing = new Map<string, number>();
  private readonly proposed = new Map<string, number>();
  private readonly cleared = new Map<string, number>();
  /** Nomad's GetCombinedUseMap, kept up to date value by value. */
  private readonly combined = new Map<string, number>();
  /** Combined count → how many values have it. */
  private readonly histogram = new Map<number, number>();
  /** A node's counted value (null: the node lacks the property or is gone). */
  private readonly nodeValues = new Map<string, string | null>();
  private seenPlacements = 0;

  constructor(
    private readonly nodes: Table<NodeRow>,
    private readonly plan: Plan,
    readonly attribute: string,
    /** The group counted; "" counts every group of the job (a job-level distinct_property). */
    private readonly taskGroup: string,
    /** A spread's target values: other values count as `*`. Null or empty: every value counts as itself. */
    private readonly targets: ReadonlySet<string> | null,
    /** distinct_property's limit (Nomad's allowedCount). */
    readonly allowed: number,
  ) {
    const job = plan.job;
    if (job) {
      for (const a of plan.allocs.by("job", jobKey(job.Namespace, job.ID))) {
        if (isTerminalAlloc(a) || !this.counts(a.TaskGroup)) continue;
        const v = this.valueOn(a.NodeID);
        if (v !== null) this.bump(this.existing, v, 1);
      }
    }
    for (const stop of plan.stops.values()) {
      const a = plan.allocs.get(stop.ID);
      if (a) this.stopped(a, 1);
    }
    plan.stopWatchers.push((a, delta) => this.stopped(a, delta));
    this.sync();
  }

  /** Takes in the placements the plan made since the last call. */
  sync(): void {
    const placements = this.plan.placements;
    for (; this.seenPlacements < placements.length; this.seenPlacements++) {
      const p = placements[this.seenPlacements]!;
      if (!this.counts(p.TaskGroup)) continue;
      const v = this.valueOn(p.NodeID);
      if (v !== null) this.bump(this.proposed, v, 1);
    }
  }

  /** Nomad's UsedCount: the node's counted value and how many allocations use it. */
  usedOn(node: NodeRow): PropertyUse {
    const value = this.valueOn(node.ID, node) ?? undefined;
    return { value, count: value === undefined ? 0 : (this.combined.get(value) ?? 0) };
  }

  /** The node's counted value (`*` for a value a spread's targets do not name); null when it lacks the property. */
  countedValue(node: NodeRow): string | null {
    return this.valueOn(node.ID, node);
  }

  /** How many allocations use a counted value. */
  usedBy(value: string): number {
    return this.combined.get(value) ?? 0;
  }

  /** How many allocations use a value (its raw value, as Nomad's even spread reads it). */
  countOf(value: string): number {
    return this.combined.get(value) ?? 0;
  }

  /** Whether any value is used (Nomad's combined use map is not empty). */
  get empty(): boolean {
    return this.combined.size === 0;
  }

  /** The lowest and highest combined counts. */
  range(): { min: number; max: number } {
    let min = Number.POSITIVE_INFINITY;
    let max = 0;
    for (const [count, values] of this.histogram) {
      if (values <= 0) continue;
      if (count < min) min = count;
      if (count > max) max = count;
    }
    return { min: Number.isFinite(min) ? min : 0, max };
  }

  /** Nomad's SatisfiesDistinctProperties: undefined when the node may take one more, else the filter reason. */
  distinctRefusal(node: NodeRow): string | undefined {
    const use = this.usedOn(node);
    if (use.value === undefined) return `missing property "${this.attribute}"`;
    if (use.count < this.allowed) return undefined;
    return `distinct_property: ${this.attribute}=${use.value} used by ${use.count} allocs`;
  }

  private counts(taskGroup: string): boolean {
    return this.taskGroup === "" || taskGroup === this.taskGroup;
  }

  private stopped(a: AllocRow, delta: 1 | -1): void {
    if (!this.counts(a.TaskGroup) || a.JobID !== this.plan.job?.ID) return;
    const v = this.valueOn(a.NodeID);
    if (v !== null) this.bump(this.cleared, v, delta);
  }

  private targeted(value: string): string {
    return !this.targets || this.targets.size === 0 || this.targets.has(value) ? value : IMPLICIT_TARGET;
  }

  /** A node's counted value, resolved once per evaluation (a node's properties do not change within it). */
  private valueOn(nodeID: string, row?: NodeRow): string | null {
    let v = this.nodeValues.get(nodeID);
    if (v === undefined) {
      const node = row ?? this.nodes.get(nodeID);
      const raw = node ? resolveTarget(this.attribute, node) : undefined;
      v = raw === undefined ? null : this.targeted(raw);
      this.nodeValues.set(nodeID, v);
    }
    return v;
  }

  private bump(map: Map<string, number>, value: string, delta: number): void {
    const n = (map.get(value) ?? 0) + delta;
    if (n === 0 && map !== this.cleared) map.delete(value);
    else map.set(value, n);
    this.refresh(value);
  }

  /**
   * Nomad's combined count of one value: existing plus proposed, less the
   * stops, never below 0, and only for a value some allocation uses. A stop
   * and a placement on the same value count once less stopped when more
   * than one stop is on it (Nomad's PopulateProposed does so).
   */
  private refresh(value: string): void {
    const present = this.existing.has(value) || this.proposed.has(value);
    let next: number | undefined;
    if (present) {
      const proposed = this.proposed.get(value) ?? 0;
      let cleared = this.cleared.get(value) ?? 0;
      if (proposed > 0 && cleared > 1) cleared--;
      next = Math.max(0, (this.existing.get(value) ?? 0) + proposed - cleared);
    }
    const prev = this.combined.get(value);
    if (prev === next) return;
    if (prev !== undefined) this.histogram.set(prev, (this.histogram.get(prev) ?? 0) - 1);
    if (next === undefined) this.combined.delete(value);
    else {
      this.combined.set(value, next);
      this.histogram.set(next, (this.histogram.get(next) ?? 0) + 1);
    }
  }
}
