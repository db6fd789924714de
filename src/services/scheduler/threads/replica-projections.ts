import type { Projection } from "../../../store/projection.ts";

/**
 * The tables the scheduler computes against (worker.ts, the generic and
 * system schedulers, the reconciler, the placement stack and what they
 * call). A replica in a scheduler thread keeps these, and everything their
 * contents depend on, at the same index as the main store.
 */
export const SCHEDULER_TABLES: readonly string[] = [
  "nodes",
  "allocs",
  "jobs",
  "job_versions",
  "evals",
  "deployments",
  "scheduler_config",
  "node_pools",
  // The CSI volume check (csi-feasibility.ts): volumes and their claims, plugin health.
  "csi_volumes",
  "csi_plugins",
];

/**
 * The projections a replica must apply, in the main store's order, so that
 * `tables` hold exactly the rows the main store's do at every index. Applying
 * the same projection code to the same records is what makes them agree;
 * leaving one out is only safe when nothing it decides can reach `tables`.
 * Closed under:
 * - ownership: the projection that declares a wanted table;
 * - `reads`: a projection's evolve reads those projections' tables;
 * - `observes`: it folds in changes of those tables;
 * - refusals: another projection that handles one of its event types and
 *   applies before it may refuse the record, which the member then skips;
 * - gates: a projection with `admit` decides whether any record applies;
 * - table-less projections that read a member (garbage collection): they
 *   exist only to change other projections' tables.
 * Left out are those whose tables nobody here reads and which change nothing
 * of the above: the audit trail (the largest table), ACLs, root keys,
 * scaling, job submissions, service registrations.
 */
export function replicaProjections(
  all: readonly Projection[],
  tables: readonly string[] = SCHEDULER_TABLES,
): Projection[] {
  const byName = new Map(all.map((p) => [p.name, p]));
  const ownerOf = new Map<string, Projection>();
  for (const p of all) for (const t of p.tables) ownerOf.set(t.name, p);
  const order = new Map(all.map((p, i) => [p, i]));
  const members = new Set<Projection>();
  const add = (p: Projection | undefined): boolean => {
    if (!p || members.has(p)) return false;
    members.add(p);
    return true;
  };
  for (const t of tables) {
    const owner = ownerOf.get(t);
    if (!owner) throw new Error(`no projection declares table ${t}`);
    add(owner);
  }
  for (const p of all) if (p.admit) add(p);
  for (let grew = true; grew; ) {
    grew = false;
    for (const p of [...members]) {
      for (const name of p.reads ?? []) grew = add(byName.get(name)) || grew;
      for (const t of p.observes ?? []) grew = add(ownerOf.get(t)) || grew;
    }
    for (const q of all) {
      if (members.has(q)) continue;
      const writer = q.tables.length === 0 && (q.reads ?? []).some((n) => members.has(byName.get(n)!));
      const refuses = [...members].some(
        (p) => order.get(q)! < order.get(p)! && [...q.handles].some((type) => p.handles.has(type)),
      );
      if (writer || refuses) grew = add(q) || grew;
    }
  }
  return all.filter((p) => members.has(p));
}

/** Every table the given projections declare: what a replica holds, and what its state hash covers. */
export function tablesOf(projections: readonly Projection[]): string[] {
  return projections.flatMap((p) => p.tables.map((t) => t.name));
}
