/**
 * A chronomad server for the load benchmark when the server has no jobs API
 * yet: the same server `chronomad serve` runs (same config, log, API,
 * services), plus one bench-only channel, the parent's IPC, through which it
 * appends plan results placing allocations — the AllocsPlanApplied records
 * the plan applier writes, refused at apply like any other when a node is
 * not ready. Nothing about the clients' side is faked: they pull, run and
 * report these allocations over the client RPC. Run as
 * `node --import tsx src/bench/direct-place-server.ts <serve flags>` with an
 * IPC channel.
 */
import { randomUUID } from "node:crypto";
import { type AllocJob, newAllocation } from "../../streams/allocs.ts";
import { loadConfig } from "../config.ts";
import { startServer } from "../server.ts";
import { writeEvents } from "../store/writer.ts";

/** One plan result: allocations of one job placed on the nodes named. */
export interface PlaceMessage {
  readonly type: "place";
  readonly seq: number;
  readonly job: AllocJob;
  readonly group: string;
  readonly placements: readonly { readonly nodeID: string; readonly name: string }[];
}

export interface PlacedMessage {
  readonly type: "placed";
  readonly seq: number;
  readonly placed: number;
  readonly refused: string;
}

const config = await loadConfig(process.argv.slice(2));
const server = await startServer(config);

process.on("message", (raw) => {
  const msg = raw as PlaceMessage;
  if (msg.type !== "place") return;
  void place(msg).then(
    (reply) => process.send?.(reply),
    (err: Error) => process.send?.({ type: "placed", seq: msg.seq, placed: 0, refused: err.message }),
  );
});

async function place(msg: PlaceMessage): Promise<PlacedMessage> {
  const now = Date.now();
  const Placed = msg.placements.map((p) =>
    newAllocation({
      ID: randomUUID(),
      Namespace: msg.job.Namespace,
      EvalID: "",
      Name: p.name,
      JobID: msg.job.ID,
      TaskGroup: msg.group,
      NodeID: p.nodeID,
      Job: msg.job,
      CreateTime: now * 1e6,
    }),
  );
  const { outcomes } = await writeEvents(
    server.store,
    now,
    { kind: "server", id: config.serverName, name: "load-bench" },
    [
      {
        type: "AllocsPlanApplied",
        v: 1,
        data: { EvalID: "", Placed, Updated: [], Stopped: [], Preempted: [] },
      },
    ],
  );
  const o = outcomes[0];
  return {
    type: "placed",
    seq: msg.seq,
    placed: o?.status === "applied" ? Placed.length : 0,
    refused: o?.status === "applied" ? "" : JSON.stringify(o),
  };
}

let stopping = false;
const stop = () => {
  if (stopping) process.exit(1);
  stopping = true;
  server.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
process.on("disconnect", stop);
