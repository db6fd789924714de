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
  return { ...answer, LastContact: 0, KnownLeader: ctx.leadership.leaderAddress() !== "", NextToken: "" };
}

/** The namespace a request names: `?namespace=`, else the body's, else "default" (Nomad's parseNamespace). */
export function requestNamespace(query: unknown, body?: { readonly Namespace?: string } | null): string {
  const fromQuery = (query as Record<string, string | undefined> | undefined)?.namespace;
  return fromQuery || body?.Namespace || "default";
}
