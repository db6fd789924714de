import { AssignerProtocol, type PartitionAssigner } from "kafkajs";

/**
 * What each server tells the group about itself when it joins, in its
 * member metadata: where it serves, and whether (and under which epoch) it
 * leads now, so the assignment can keep the current leader.
 */
export interface MemberClaim {
  /** The advertised HTTP address. */
  readonly address: string;
  /** The advertised RPC address Nomad's client agents connect to; "" if none (older servers). */
  readonly rpc: string;
  readonly server: string;
  /** The leadership epoch this server established and still holds; 0 if none. */
  readonly epoch: number;
  /** Whether it holds the leader partition in the generation now ending. */
  readonly leading: boolean;
}

export interface ClaimedMember {
  readonly memberId: string;
  readonly claim: MemberClaim | undefined;
}

export const LEADER_ASSIGNER = "ChronomadLeader";
const VERSION = 1;

export function encodeClaim(claim: MemberClaim): Buffer {
  return Buffer.from(JSON.stringify(claim));
}

/** The claim inside a member's protocol metadata; undefined for anything else. */
export function claimOfMetadata(metadata: Buffer | undefined): MemberClaim | undefined {
  if (!metadata || metadata.length === 0) return undefined;
  try {
    const userData = AssignerProtocol.MemberMetadata.decode(metadata)?.userData;
    if (!userData) return undefined;
    const value: unknown = JSON.parse(userData.toString("utf8"));
    if (typeof value !== "object" || value === null) return undefined;
    const c = value as Record<string, unknown>;
    if (typeof c.address !== "string" || typeof c.server !== "string") return undefined;
    return {
      address: c.address,
      rpc: typeof c.rpc === "string" ? c.rpc : "",
      server: c.server,
      epoch: typeof c.epoch === "number" ? c.epoch : 0,
      leading: c.leading === true,
    };
  } catch {
    return undefined;
  }
}

/** Whether a member's raw assignment gives it partition 0 of `topic`. */
export function assignmentLeads(assignment: Buffer | undefined, topic: string): boolean {
  if (!assignment || assignment.length === 0) return false;
  try {
    return AssignerProtocol.MemberAssignment.decode(assignment)?.assignment[topic]?.includes(0) ?? false;
  } catch {
    return false;
  }
}

/**
 * Who gets the leader partition. Leadership moves only when it must: the
 * member holding the latest epoch keeps it, then the member that held the
 * partition, and only among newcomers does the (arbitrary but agreed)
 * member-ID order decide. So a server joining or restarting does not depose
 * a healthy leader.
 */
export function pickLeader(members: readonly ClaimedMember[]): string | undefined {
  let best: ClaimedMember | undefined;
  for (const m of members) {
    if (!m.claim) continue;
    if (!best || outranks(m, best)) best = m;
  }
  return best?.memberId;
}

function outranks(a: ClaimedMember, b: ClaimedMember): boolean {
  const ca = a.claim!;
  const cb = b.claim!;
  if (ca.epoch !== cb.epoch) return ca.epoch > cb.epoch;
  if (ca.leading !== cb.leading) return ca.leading;
  return a.memberId < b.memberId;
}

/**
 * A kafkajs partition assigner for the one-partition leader topic: the
 * chosen member gets partition 0, the others nothing. `local` is read at
 * every join, so the metadata always carries this server's current claim.
 */
export function leaderAssigner(leaderTopic: string, local: () => MemberClaim): PartitionAssigner {
  return () => ({
    name: LEADER_ASSIGNER,
    version: VERSION,
    async assign({ members }) {
      const leader = pickLeader(
        members.map((m) => ({ memberId: m.memberId, claim: claimOfMetadata(m.memberMetadata) })),
      );
      return members.map((m) => ({
        memberId: m.memberId,
        memberAssignment: AssignerProtocol.MemberAssignment.encode({
          version: VERSION,
          assignment: m.memberId === leader ? { [leaderTopic]: [0] } : {},
          userData: Buffer.alloc(0),
        }),
      }));
    },
    protocol({ topics }) {
      return {
        name: LEADER_ASSIGNER,
        metadata: AssignerProtocol.MemberMetadata.encode({
          version: VERSION,
          topics,
          userData: encodeClaim(local()),
        }),
      };
    },
  });
}
