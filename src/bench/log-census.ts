import { unpackPlain } from "../codec/envelope-codec.ts";
import { openFileLog } from "../log/file/index.ts";

/** The file log frames each record with a length and a CRC (u32 LE each). */
const FRAME_BYTES = 8;

export interface TypeCensus {
  events: number;
  /** Framed bytes on disk (record + 8-byte frame). */
  bytes: number;
}

export interface LogCensus {
  readonly records: number;
  readonly bytes: number;
  readonly byType: Readonly<Record<string, TypeCensus>>;
  /** Records of the allocation stream (plans, client updates, disconnects, reconnects, losses). */
  readonly allocEvents: number;
  readonly allocBytes: number;
  /** AllocClientUpdated: what clients' Node.UpdateAlloc calls put in the log. */
  readonly clientUpdateEvents: number;
  readonly clientUpdateBytes: number;
  /** Allocation entries carried by AllocClientUpdated records. */
  readonly clientUpdateEntries: number;
  /** Changes of an allocation's ClientStatus or DesiredStatus, placements included. */
  readonly allocTransitions: number;
  /** ClientStatus changes that clients reported. */
  readonly clientTransitions: number;
  /** Allocations placed (full or compact placements), and the envelope times of the first and last. */
  readonly placed: number;
  readonly firstPlacementAt: number;
  readonly lastPlacementAt: number;
  /** Per plan record that placed allocations: its envelope time (ms) and how many it placed. */
  readonly placements: readonly { readonly at: number; readonly n: number }[];
  /** Envelope times (ms) of the records that declared a node down (NodeStatusUpdated to "down"). */
  readonly nodeDownAt: readonly number[];
  /** Envelope time of the first and last record (ms). */
  readonly firstAt: number;
  readonly lastAt: number;
}

const ALLOC_EVENTS = new Set([
  "AllocsPlanApplied",
  "AllocClientUpdated",
  "AllocsDisconnected",
  "AllocsReconnected",
  "AllocsLost",
  "AllocsDesiredTransitionUpdated",
]);

type Json = Record<string, unknown>;
interface AllocState {
  client: string;
  desired: string;
}

/**
 * Reads a file log once and counts what is in it by event type: records,
 * bytes, and the allocation transitions they carry. The allocation state is
 * followed only as far as the transitions need (client and desired status),
 * from the records themselves; a record the projections refused still counts
 * as written, since it took its bytes.
 */
export async function logCensus(dir: string): Promise<LogCensus> {
  const log = await openFileLog(dir, { fsync: "never" });
  const byType: Record<string, TypeCensus> = {};
  const allocs = new Map<string, AllocState>();
  let records = 0;
  let bytes = 0;
  let clientUpdateEntries = 0;
  let allocTransitions = 0;
  let clientTransitions = 0;
  let placed = 0;
  let firstPlacementAt = 0;
  let lastPlacementAt = 0;
  let firstAt = 0;
  let lastAt = 0;
  const nodeDownAt: number[] = [];
  const placements: { at: number; n: number }[] = [];
  const set = (id: string, client: string | undefined, desired: string | undefined, fromClient = false) => {
    const s = allocs.get(id);
    if (!s) return;
    if (client && client !== s.client) {
      s.client = client;
      allocTransitions++;
      if (fromClient) clientTransitions++;
    }
    if (desired && desired !== s.desired) {
      s.desired = desired;
      allocTransitions++;
    }
  };
  try {
    for await (const batch of log.read(1, { maxBatch: 4096 })) {
      for (const record of batch) {
        const size = record.bytes.length + FRAME_BYTES;
        records++;
        bytes += size;
        const env = unpackPlain(record.bytes) as { type: string; at: number; data: Json };
        let t = byType[env.type];
        if (!t) {
          t = { events: 0, bytes: 0 };
          byType[env.type] = t;
        }
        t.events++;
        t.bytes += size;
        if (firstAt === 0) firstAt = env.at;
        lastAt = env.at;
        if (env.type === "NodeStatusUpdated" && env.data.Status === "down") nodeDownAt.push(env.at);
        if (!ALLOC_EVENTS.has(env.type)) continue;
        const d = env.data;
        switch (env.type) {
          case "AllocsPlanApplied": {
            const fresh = [...list(d.Placed), ...list(d.Placements)];
            for (const a of fresh) {
              allocs.set(String(a.ID), { client: "pending", desired: "run" });
              allocTransitions++;
            }
            if (fresh.length > 0) {
              placed += fresh.length;
              placements.push({ at: env.at, n: fresh.length });
              if (firstPlacementAt === 0) firstPlacementAt = env.at;
              lastPlacementAt = env.at;
            }
            for (const s of list(d.Stopped))
              set(String(s.ID), (s.ClientStatus as string) || undefined, "stop");
            for (const p of list(d.Preempted)) set(String(p.ID), undefined, "evict");
            for (const u of list(d.Disconnected)) set(String(u.ID), "unknown", undefined);
            break;
          }
          case "AllocClientUpdated":
            for (const u of list(d.Allocs)) {
              clientUpdateEntries++;
              set(String(u.ID), u.ClientStatus as string, undefined, true);
            }
            break;
          case "AllocsDisconnected":
            for (const id of strings(d.AllocIDs)) set(id, "unknown", undefined);
            break;
          case "AllocsLost":
            for (const id of strings(d.AllocIDs)) set(id, "lost", "stop");
            break;
        }
      }
    }
  } finally {
    await log.close();
  }
  const sum = (types: string[]) =>
    types.reduce(
      (acc, t) => ({
        events: acc.events + (byType[t]?.events ?? 0),
        bytes: acc.bytes + (byType[t]?.bytes ?? 0),
      }),
      { events: 0, bytes: 0 },
    );
  const alloc = sum([...ALLOC_EVENTS]);
  const client = sum(["AllocClientUpdated"]);
  return {
    records,
    bytes,
    byType,
    allocEvents: alloc.events,
    allocBytes: alloc.bytes,
    clientUpdateEvents: client.events,
    clientUpdateBytes: client.bytes,
    clientUpdateEntries,
    allocTransitions,
    clientTransitions,
    placed,
    firstPlacementAt,
    lastPlacementAt,
    placements,
    nodeDownAt,
    firstAt,
    lastAt,
  };
}

const list = (v: unknown): Json[] => (Array.isArray(v) ? (v as Json[]) : []);
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.map(String) : []);
