import type { Leadership, ServerMember } from "../leadership.ts";

/**
 * chronomad's servers make one region and one datacenter: Nomad's defaults,
 * which its clients and tools assume when nothing else is configured.
 */
export const REGION = "global";
export const DATACENTER = "dc1";
/** The Nomad release whose HTTP API chronomad answers as (member build tags, agent self). */
export const NOMAD_API_VERSION = "1.6.1";
/** Raft's protocol version as Nomad 1.6 servers report it. */
export const RAFT_PROTOCOL = "3";

/** The servers of the cluster; every server of a log-backed cluster consumes the whole log, so each is a voter. */
export function clusterServers(leadership: Leadership, serverName: string): readonly ServerMember[] {
  const members = leadership.members?.();
  if (members && members.length > 0) return members;
  const leader = leadership.leaderAddress();
  const peers = leadership.peers();
  if (peers.length === 0) return [{ name: serverName, address: "", leader: false, self: true }];
  return peers.map((address) => ({
    name: address,
    address,
    leader: address === leader,
    self: leadership.isLeader() && address === leader,
  }));
}

/** This server among them. */
export function selfMember(leadership: Leadership, serverName: string): ServerMember {
  const servers = clusterServers(leadership, serverName);
  return (
    servers.find((s) => s.self) ?? {
      name: serverName,
      address: "",
      leader: leadership.isLeader(),
      self: true,
    }
  );
}

/** Nomad's serf member name: `<name>.<region>`. */
export const memberName = (m: ServerMember) => `${m.name}.${REGION}`;

/** Host and port of an advertised address ("[v6]:port" too); port 0 when it has none. */
export function hostPort(address: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(address);
  if (!m) return { host: address, port: 0 };
  return { host: m[1] ?? m[2] ?? "", port: Number(m[3]) };
}

/**
 * A server as Nomad's serf member (agent_endpoint.go nomadMember). chronomad
 * has no gossip: its servers know one another through the log's election,
 * and name one another by HTTP address, which is what Addr/Port and the
 * rpc_addr/port tags carry: `nomad server members` marks the leader by
 * comparing them with /v1/status/leader, which names the leader the same
 * way. Client agents learn the RPC addresses from Node.Register's answer.
 * The protocol numbers are those a Nomad 1.6 server reports, for tools that
 * check them.
 */
export function serfMember(m: ServerMember, servers: number): Record<string, unknown> {
  const { host, port } = hostPort(m.address);
  const tags: Record<string, string> = {
    role: "nomad",
    region: REGION,
    dc: DATACENTER,
    build: NOMAD_API_VERSION,
    revision: "",
    vsn: "1",
    raft_vsn: RAFT_PROTOCOL,
    id: m.name,
    rpc_addr: host,
    port: String(port),
  };
  if (servers === 1) tags.bootstrap = "1";
  return {
    Name: memberName(m),
    Addr: host,
    Port: port,
    Tags: tags,
    Status: "alive",
    ProtocolMin: 1,
    ProtocolMax: 5,
    ProtocolCur: 2,
    DelegateMin: 2,
    DelegateMax: 5,
    DelegateCur: 4,
  };
}

/** Where Nomad's client agents reach a server: its RPC address, else (no RPC listener) its HTTP address. */
export const rpcAddressOf = (m: ServerMember): string => m.rpcAddress || m.address;
