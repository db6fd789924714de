import { currentLeadership, type LeadershipRow } from "../../projections/leadership.ts";
import type { Actor } from "../../streams/event-schema.ts";
import type { LeadershipEstablished, LeadershipEvent } from "../../streams/leadership.ts";
import type { Store } from "../store/store.ts";
import type { Table } from "../store/table.ts";
import { writeEvents } from "../store/writer.ts";

export interface ClaimRequest {
  readonly store: Store;
  readonly leadership: Table<LeadershipRow>;
  readonly now: number;
  readonly actor: Actor;
  readonly serverName: string;
  readonly address: string;
}

export type ClaimResult =
  | { readonly status: "established"; readonly epoch: number; readonly index: number }
  | { readonly status: "lost"; readonly reason: string; readonly index: number };

/**
 * Appends this server's claim to the next leadership epoch and waits until
 * the log has decided it: established when no other claim to that epoch came
 * first, lost otherwise (the caller's view was stale or another server was
 * faster). One attempt; retrying is the caller's decision.
 */
export async function claimLeadership(request: ClaimRequest): Promise<ClaimResult> {
  const data: LeadershipEstablished = {
    ServerName: request.serverName,
    Address: request.address,
    Epoch: (currentLeadership(request.leadership)?.Epoch ?? 0) + 1,
  };
  const draft: Pick<LeadershipEvent, "type" | "v" | "data"> = { type: "LeadershipEstablished", v: 1, data };
  const { outcomes } = await writeEvents(request.store, request.now, request.actor, [draft]);
  const outcome = outcomes[0]!;
  return outcome.status === "applied"
    ? { status: "established", epoch: data.Epoch, index: outcome.index }
    : { status: "lost", reason: outcome.reason, index: outcome.index };
}
