import type { FastifyPluginAsync } from "fastify";
import { filter, map, merge, Observable, take } from "rxjs";
import { isTokenIdentity, TOKEN_EXPIRED } from "../../auth/acl-authenticator.ts";
import type { AuthenticatedIdentity } from "../../auth/authenticate.ts";
import { TOPIC_NAMES } from "../../events/topics.ts";
import { ApiError } from "../api-error.ts";
import type { ApiContext } from "../context.ts";
import { EventStreamConnection, type TopicFilter } from "../event-stream-connection.ts";

/**
 * `GET /v1/event/stream`: Nomad's NDJSON event stream, served from the log.
 * Unlike Nomad's 100-entry memory buffer, `index=N` resumes after any index
 * the log holds: the frames with Index > N (an exclusive cursor, so a client
 * that saw N and reconnects with index=N gets every later frame once).
 */
export const eventsPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  let subscribers = 0;
  ctx.metrics.gauge("chronomad.event_stream.subscribers", () => subscribers);
  app.get(
    "/v1/event/stream",
    {
      schema: {
        querystring: {
          type: "object",
          properties: {
            index: { type: "integer", minimum: 0 },
            topic: { type: "array", items: { type: "string" } },
            namespace: { type: "string" },
            // chronomad's complete change feed: every change, with its actor, cause and before-image.
            changes: { type: "string", enum: ["nomad", "all"] },
          },
        },
      },
    },
    async (request, reply) => {
      const query = request.query as {
        index?: number;
        topic?: string[];
        namespace?: string;
        changes?: "nomad" | "all";
      };
      const topics = parseTopics(query.topic ?? []);
      const namespace = query.namespace || "default";
      if (!mayRead(request.identity, topics, namespace)) throw ApiError.forbidden();

      if (subscribers >= ctx.config.eventStreamMaxSubscribers) {
        reply.header("Retry-After", "1");
        throw new ApiError(
          429,
          `too many event stream subscribers (${ctx.config.eventStreamMaxSubscribers}): retry later`,
        );
      }
      subscribers++;
      reply.raw.once("close", () => subscribers--);
      reply.hijack();
      // Which cluster's history this is: an exporter refuses to mix two clusters' rows in one target.
      const cluster = ctx.tables.cluster.get("cluster");
      if (cluster) reply.raw.setHeader("X-Chronomad-Cluster-Id", cluster.ClusterID);
      new EventStreamConnection(
        ctx,
        request.raw,
        reply.raw,
        topics,
        namespace,
        query.index ?? 0,
        query.changes === "all",
        tokenRevocation(ctx, request.identity),
      );
    },
  );
};

/**
 * When the subscriber's token is deleted, changed or expires, its stream
 * ends (Nomad closes the subscriptions of a token that changed); a client
 * resubscribes and is checked again.
 */
function tokenRevocation(ctx: ApiContext, identity: AuthenticatedIdentity): Observable<string> | undefined {
  if (!isTokenIdentity(identity) || identity.token === "anonymous") return undefined;
  const { AccessorID, ExpirationTime } = identity.token;
  const changed = ctx.store.change$.pipe(
    filter((c) => c.table === "acl_tokens" && c.key === AccessorID),
    map((c) => (c.after ? "ACL token changed: resubscribe" : "ACL token deleted")),
  );
  if (ExpirationTime === null) return changed.pipe(take(1));
  const expires = new Observable<string>((subscriber) => {
    const at = Date.parse(ExpirationTime) - ctx.clock.now() + 1;
    const timer = ctx.clock.setTimeout(() => subscriber.next(TOKEN_EXPIRED), Math.max(0, at));
    return () => ctx.clock.clearTimeout(timer);
  });
  return merge(changed, expires).pipe(take(1));
}

/** The capability each topic needs, as Nomad's aclAllowsSubscription asks it; any other topic (and `*`) needs management. */
const TOPIC_CAPABILITY: Readonly<Record<string, string>> = {
  Deployment: "read-job",
  Evaluation: "read-job",
  Allocation: "read-job",
  Job: "read-job",
  Service: "read-job",
  // Nomad's validateNsOp (later releases, which publish them).
  CSIVolume: "csi-read-volume",
  CSIPlugin: "read-job",
  Node: "node:read",
  // Not a Nomad 1.6 topic. Nomad 2.0 lets any variables rule in the namespace
  // subscribe and drops each event whose path the token may not list; this
  // stream has no per-event ACL filter, and a path can itself be telling
  // (who has which secret), so only management may follow variables.
  Variable: "management",
};

/** Whether the caller may subscribe to every topic it asked for: one it may not read refuses the whole stream. */
function mayRead(identity: AuthenticatedIdentity, topics: TopicFilter, namespace: string): boolean {
  for (const topic of topics.keys()) {
    const capability = TOPIC_CAPABILITY[topic] ?? "management";
    if (!identity.allows(capability === "management" ? "*" : namespace, capability)) return false;
  }
  return true;
}

/**
 * `topic=Topic[:Key]`, repeatable, as Nomad's parseEventTopics reads it, and
 * with its error text. Nomad takes any topic name and a misspelt one yields
 * nothing forever; here a name that is neither Nomad's nor chronomad's is
 * refused, in the same words' form, so the typo shows.
 */
function parseTopics(raw: readonly string[]): TopicFilter {
  const topics = new Map<string, Set<string>>();
  if (raw.length === 0) return new Map([["*", new Set(["*"])]]);
  for (const t of raw) {
    const parts = t.split(":");
    if (parts.length > 2) {
      throw ApiError.badRequest(
        `Invalid topic query: error parsing topics: Invalid key value pair for topic, topic: ${t}`,
      );
    }
    const [topic, key = "*"] = parts as [string, string?];
    if (topic !== "*" && !TOPIC_NAMES.has(topic)) {
      throw ApiError.badRequest(
        `Invalid topic query: unknown topic "${topic}" (known: *, ${[...TOPIC_NAMES].join(", ")})`,
      );
    }
    const keys = topics.get(topic) ?? new Set<string>();
    keys.add(key || "*");
    topics.set(topic, keys);
  }
  return topics;
}
