import { BehaviorSubject } from "rxjs";
import { describe, expect, it } from "vitest";
import type { ApiContext } from "../../src/api/context.ts";
import { nodeUpdateResponse } from "../../src/api/node-responses.ts";
import type { Leadership, ServerMember } from "../../src/leadership.ts";

/** A cluster whose members the test sets; `members()` makes new objects on each call, as the elections' do. */
class Members implements Leadership {
  readonly leader$ = new BehaviorSubject(true).asObservable();
  list: ServerMember[] = [];
  isLeader(): boolean {
    return true;
  }
  leaderAddress(): string {
    return this.list.find((m) => m.leader)?.address ?? "";
  }
  peers(): readonly string[] {
    return this.list.map((m) => m.address);
  }
  lastContactMs(): number {
    return 0;
  }
  members(): readonly ServerMember[] {
    return this.list.map((m) => ({ ...m }));
  }
}

const member = (name: string, leader: boolean, rpcAddress = ""): ServerMember => ({
  name,
  address: `${name}:4646`,
  rpcAddress,
  leader,
  self: name === "a",
});

function context(leadership: Leadership): ApiContext {
  // The reply reads these three only; the rest of the context is not needed.
  return {
    leadership,
    config: { serverName: "a" },
    tables: { nodes: { size: 3 } },
  } as unknown as ApiContext;
}

describe("a node update reply's servers", () => {
  it("list each server's RPC address and the leader's, made again only when the members change", () => {
    const leadership = new Members();
    const ctx = context(leadership);
    leadership.list = [member("a", true, "a:4647"), member("b", false, "b:4647"), member("c", false)];
    const first = nodeUpdateResponse(ctx, { index: 5 });
    expect(first.LeaderRPCAddr).toBe("a:4647");
    expect(first.Servers).toEqual([
      { RPCAdvertiseAddr: "a:4647", RPCMajorVersion: 0, RPCMinorVersion: 0, Datacenter: "dc1" },
      { RPCAdvertiseAddr: "b:4647", RPCMajorVersion: 0, RPCMinorVersion: 0, Datacenter: "dc1" },
      { RPCAdvertiseAddr: "c:4646", RPCMajorVersion: 0, RPCMinorVersion: 0, Datacenter: "dc1" },
    ]);
    // The same members (new objects): the same list, which no reply may change.
    const again = nodeUpdateResponse(ctx, { index: 6 });
    expect(again.Servers).toBe(first.Servers);
    expect(Object.isFrozen(again.Servers)).toBe(true);
    expect(Object.isFrozen((again.Servers as object[])[0])).toBe(true);

    // Another leader.
    leadership.list = [member("a", false, "a:4647"), member("b", true, "b:4647"), member("c", false)];
    const led = nodeUpdateResponse(ctx, { index: 7 });
    expect(led.LeaderRPCAddr).toBe("b:4647");
    expect(led.Servers).toEqual(first.Servers);
    // A server learns its RPC address; one leaves.
    leadership.list = [
      member("a", false, "a:4647"),
      member("b", true, "b:4647"),
      member("c", false, "c:4647"),
    ];
    expect((nodeUpdateResponse(ctx, { index: 8 }).Servers as { RPCAdvertiseAddr: string }[])[2]).toEqual(
      expect.objectContaining({ RPCAdvertiseAddr: "c:4647" }),
    );
    leadership.list = [member("a", false, "a:4647"), member("b", true, "b:4647")];
    expect(nodeUpdateResponse(ctx, { index: 9 }).Servers).toHaveLength(2);
    // No leader known.
    leadership.list = [member("a", false, "a:4647")];
    const none = nodeUpdateResponse(ctx, { index: 10 });
    expect(none.LeaderRPCAddr).toBe("");
    expect(none.KnownLeader).toBe(false);
  });

  it("are kept apart for each server in the process", () => {
    const one = new Members();
    const two = new Members();
    one.list = [member("a", true, "a:4647")];
    two.list = [member("x", true, "x:4647")];
    expect(nodeUpdateResponse(context(one), { index: 1 }).LeaderRPCAddr).toBe("a:4647");
    expect(nodeUpdateResponse(context(two), { index: 1 }).LeaderRPCAddr).toBe("x:4647");
    expect(nodeUpdateResponse(context(one), { index: 2 }).LeaderRPCAddr).toBe("a:4647");
  });
});
