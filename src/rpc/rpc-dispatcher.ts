import type { FastifyInstance } from "fastify";
import type { ApiContext } from "../api/context.ts";
import { CLIENT_RPC_METHODS } from "../api/plugins/client-rpc.ts";
import { admissionOf } from "../api/request-admission.ts";
import { clusterServers, REGION, rpcAddressOf } from "../cluster/server-members.ts";
import { ACL_RPCS } from "./acl-rpcs.ts";
import { bridge } from "./http-bridge.ts";
import type { NodeSessions } from "./node-sessions.ts";
import type { RpcMetrics } from "./rpc-metrics.ts";
import type { YamuxSession } from "./yamux/session.ts";

/** Who is calling: the connection's peer, and the session it came in on (none for a plain connection). */
export interface RpcCaller {
  readonly remoteAddress: string;
  readonly session?: YamuxSession;
}

/**
 * The endpoints Nomad 1.6's server registers (nomad/server.go
 * setupRpcServer), by Go type name: net/rpc answers a method of one of
 * these it lacks with "can't find method", any other name with "can't
 * find service", and a client reads those words.
 */
const NOMAD_SERVICES = new Set([
  "ACL",
  "Agent",
  "Alloc",
  "CSIPlugin",
  "CSIVolume",
  "ClientAllocations",
  "ClientCSI",
  "ClientStats",
  "Deployment",
  "Eval",
  "FileSystem",
  "Job",
  "Keyring",
  "Namespace",
  "Node",
  "NodeMeta",
  "NodePool",
  "Operator",
  "Periodic",
  "Plan",
  "Region",
  "Scaling",
  "Search",
  "ServiceRegistration",
  "Status",
  "System",
  "Variables",
]);

/** Calls whose success proves the caller is that node (its secret was checked): its session reaches it. */
const NODE_OF_CALL: Readonly<Record<string, (body: Record<string, unknown>) => unknown>> = {
  "Node.Register": (b) => (b.Node as Record<string, unknown> | null | undefined)?.ID,
  "Node.UpdateStatus": (b) => b.NodeID,
};

/**
 * Serves Nomad's client RPCs arriving on the RPC port. The port is a second
 * transport into the very handlers of `PUT /v1/rpc/<Method>` (one
 * implementation, two transports): each call becomes an in-process request
 * to that route (http-bridge.ts), so body validation, node authentication,
 * forwarding to the leader, blocking, audit and errors are the HTTP path's
 * own; the ACL lookups of a client's token cache go to the ACL routes the
 * same way. The few calls about the servers themselves (Status.*) are
 * answered here.
 */
export class RpcDispatcher {
  constructor(
    private readonly app: FastifyInstance,
    private readonly ctx: ApiContext,
    private readonly sessions: NodeSessions,
    private readonly metrics: RpcMetrics,
  ) {}

  async call(method: string, body: unknown, caller: RpcCaller): Promise<unknown> {
    const args = isObject(body) ? body : {};
    try {
      const reply = await this.serve(method, args, caller);
      this.metrics.served(method, false);
      return reply;
    } catch (err) {
      if (err instanceof UnknownMethod) this.metrics.unknown(method);
      else this.metrics.served(method, true);
      throw err;
    }
  }

  private async serve(method: string, args: Record<string, unknown>, caller: RpcCaller): Promise<unknown> {
    const local = this.statusCall(method);
    if (local) return local();
    const acl = ACL_RPCS[method];
    if (acl) return acl(this.app, args, caller.remoteAddress);
    if (!CLIENT_RPC_METHODS.has(method)) throw new UnknownMethod(method);
    // In the HTTP server's queue: heartbeats first, the rest paced (request-admission.ts).
    await admissionOf(this.app.server)?.admitCall(method);
    const { body } = await bridge(this.app, {
      method: "PUT",
      url: `/v1/rpc/${method}`,
      body: args,
      remoteAddress: caller.remoteAddress,
    });
    const nodeID = NODE_OF_CALL[method]?.(args);
    if (caller.session && typeof nodeID === "string" && nodeID !== "")
      this.sessions.record(nodeID, caller.session);
    return body;
  }

  /** Status.*: what a client or tool asks about the servers, answered by any server. */
  private statusCall(method: string): (() => unknown) | undefined {
    const servers = () => clusterServers(this.ctx.leadership, this.ctx.config.serverName);
    switch (method) {
      case "Status.Ping":
        return () => ({});
      case "Status.Leader":
        return () => {
          const leader = servers().find((s) => s.leader);
          return leader ? rpcAddressOf(leader) : "";
        };
      case "Status.Peers":
        return () => servers().map(rpcAddressOf);
      case "Region.List":
        return () => [REGION];
      default:
        return undefined;
    }
  }
}

/** A method chronomad does not serve, in Go net/rpc's words. */
export class UnknownMethod extends Error {
  constructor(method: string) {
    super(unknownMethodError(method));
  }
}

/** Go net/rpc's words for a method it has no handler for. */
export function unknownMethodError(method: string): string {
  const dot = method.lastIndexOf(".");
  if (dot < 0) return `rpc: service/method request ill-formed: ${method}`;
  return NOMAD_SERVICES.has(method.slice(0, dot))
    ? `rpc: can't find method ${method}`
    : `rpc: can't find service ${method}`;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
