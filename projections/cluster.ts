import type { Projection } from "../src/store/projection.ts";
import { Table } from "../src/store/table.ts";
import type { ClusterEvent } from "../streams/cluster.ts";

export interface ClusterRow {
  readonly ClusterID: string;
  readonly CreateTime: number;
  readonly BootstrappedBy: string;
  readonly CreateIndex: number;
  readonly ModifyIndex: number;
}

export function clusterProjection() {
  const cluster = new Table<ClusterRow>({ name: "cluster", key: () => "cluster" });
  const projection: Projection = {
    name: "cluster",
    version: 1,
    tables: [cluster],
    handles: new Set(["ClusterBootstrapped"]),
    evolve(ctx, event) {
      const e = event as ClusterEvent;
      if (cluster.get("cluster")) {
        ctx.reject(409, "cluster is already bootstrapped");
        return;
      }
      ctx.put(cluster, {
        ClusterID: e.data.ClusterID,
        CreateTime: e.data.CreateTime,
        BootstrappedBy: e.data.ServerName,
        CreateIndex: ctx.index,
        ModifyIndex: ctx.index,
      });
    },
  };
  return { projection, cluster };
}
