import type { FastifyReply } from "fastify";
import type { ApiContext } from "./context.ts";

/**
 * A job write's reply (JobRegisterResponse and kin): the index header, and
 * the QueryMeta fields Nomad's RPC reply carries beside the index.
 */
export function writeAnswer<A extends { readonly Index: number }>(
  ctx: ApiContext,
  reply: FastifyReply,
  answer: A,
): A & { LastContact: number; KnownLeader: boolean; NextToken: string } {
  reply.header("X-Nomad-Index", String(answer.Index));
  return withQueryMeta(answer, ctx.leadership.leaderAddress() !== "");
}

/**
 * `answer` with Nomad's QueryMeta fields after its own. Copied and then
 * assigned rather than spread into a literal with the new keys: V8 takes a
 * slow path, tens of times slower, for a literal that adds keys after a
 * spread, and every job write answers through here.
 */
export function withQueryMeta<A extends object>(
  answer: A,
  knownLeader: boolean,
): A & { LastContact: number; KnownLeader: boolean; NextToken: string } {
  const out = Object.assign({}, answer) as A & {
    LastContact: number;
    KnownLeader: boolean;
    NextToken: string;
  };
  out.LastContact = 0;
  out.KnownLeader = knownLeader;
  out.NextToken = "";
  return out;
}

/** The namespace a request names: `?namespace=`, else the body's, else "default" (Nomad's parseNamespace). */
export function requestNamespace(query: unknown, body?: { readonly Namespace?: string } | null): string {
  const fromQuery = (query as Record<string, string | undefined> | undefined)?.namespace;
  return fromQuery || body?.Namespace || "default";
}
