import type { Projection } from "../src/store/projection.ts";
import { Table } from "../src/store/table.ts";
import type { SchedulerConfigEvent, SchedulerConfigSpec } from "../streams/scheduler-config.ts";

export type SchedulerConfigRow = SchedulerConfigSpec & {
  readonly CreateIndex: number;
  readonly ModifyIndex: number;
};

const KEY = "config";

/**
 * Nomad's DefaultSchedulerConfig (nomad/config.go). Nomad's leader writes it
 * to Raft when it first finds none; here a cluster that never set one reads
 * these values, with indexes 0.
 */
export const DEFAULT_SCHEDULER_CONFIG: SchedulerConfigRow = {
  SchedulerAlgorithm: "binpack",
  PreemptionConfig: {
    SystemSchedulerEnabled: true,
    SysBatchSchedulerEnabled: false,
    BatchSchedulerEnabled: false,
    ServiceSchedulerEnabled: false,
  },
  MemoryOversubscriptionEnabled: false,
  RejectJobRegistration: false,
  PauseEvalBroker: false,
  NodeLimitForFeasibilityChecks: 0,
  CreateIndex: 0,
  ModifyIndex: 0,
};

export type SchedulerConfigTable = Table<SchedulerConfigRow>;

/** The configuration in force: the stored one, or Nomad's defaults. */
export function currentSchedulerConfig(table: SchedulerConfigTable): SchedulerConfigRow {
  return table.get(KEY) ?? DEFAULT_SCHEDULER_CONFIG;
}

/** A one-row table, as Nomad's `scheduler_config`. */
export function schedulerConfigProjection() {
  const schedulerConfig = new Table<SchedulerConfigRow>({ name: "scheduler_config", key: () => KEY });
  const projection: Projection = {
    name: "scheduler-config",
    version: 1,
    tables: [schedulerConfig],
    handles: new Set(["SchedulerConfigSet"]),
    evolve(ctx, event) {
      const { Config, CAS, CASIndex } = (event as SchedulerConfigEvent).data;
      const before = schedulerConfig.get(KEY);
      const current = before?.ModifyIndex ?? 0;
      // Another write may have landed between the handler's check and this
      // record: check-and-set is decided here, where every server agrees.
      if (CAS && CASIndex !== current) {
        ctx.reject(
          409,
          `scheduler configuration CAS failed: index ${CASIndex} is not the current ${current}`,
        );
        return;
      }
      ctx.put(schedulerConfig, {
        ...Config,
        PreemptionConfig: { ...Config.PreemptionConfig },
        NodeLimitForFeasibilityChecks: Config.NodeLimitForFeasibilityChecks ?? 0,
        CreateIndex: before?.CreateIndex ?? ctx.index,
        ModifyIndex: ctx.index,
      });
    },
  };
  return { projection, schedulerConfig };
}
