import type { AllocRow } from "../../../projections/allocs.ts";
import { type FakeClientOptions, FakeClientPeer } from "../../rpc/fake-client-peer.ts";
import type { TestServer } from "../../server-harness.ts";
import { placeAlloc } from "../node-fixtures.ts";

export interface AgentWithAlloc {
  readonly agent: FakeClientPeer;
  readonly alloc: AllocRow;
}

/**
 * A fake client agent connected to `s`'s RPC port and registered over it
 * (so `s` holds its session), with one allocation placed on its node.
 */
export async function agentWithAlloc(
  s: TestServer,
  options: FakeClientOptions,
  attributes: Record<string, string> = {},
): Promise<AgentWithAlloc> {
  const agent = new FakeClientPeer(options);
  await agent.connect(s.rpcAddress, attributes);
  const alloc = await placeAlloc(s, { NodeID: agent.id });
  return { agent, alloc };
}

/** The calls the agent received for `method`. */
export function callsOf(agent: FakeClientPeer, method: string): Record<string, unknown>[] {
  return agent.calls.filter((c) => c.method === method).map((c) => c.args);
}

/** Resolves after `ms` milliseconds. */
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
