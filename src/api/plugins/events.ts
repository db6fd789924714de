import type { FastifyPluginAsync } from "fastify";
import type { StreamEvent } from "../../events/frames.ts";
import { TOPIC_NAMES } from "../../events/topics.ts";
import { ApiError } from "../api-error.ts";
import type { ApiContext } from "../context.ts";

/** Nomad sends `{}` this often so idle connections stay open through proxies. */
const HEARTBEAT_MS = 30_000;

type TopicFilter = ReadonlyMap<string, ReadonlySet<string>>;

/**
 * `GET /v1/event/stream`: Nomad's NDJSON event stream, served from the log.
 * Unlike Nomad's 100-entry memory buffer, `index=N` resumes after any index
 * the log holds: the frames with Index > N (an exclusive cursor, so a client
 * that saw N and reconnects with index=N gets every later frame once).
 */
export const eventsPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
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
          },
        },
      },
    },
    async (request, reply) => {
      const query = request.query as { index?: number; topic?: string[]; namespace?: string };
      const topics = parseTopics(query.topic ?? []);
      const namespace = query.namespace || "default";
      if (!request.identity.allows(namespace, "read-job")) throw ApiError.forbidden();

      reply.hijack();
      const out = reply.raw;
      out.writeHead(200, { "Content-Type": "application/json", "Cache-Control": "no-cache" });
      let queued = 0;
      let closed = false;
      const write = (line: string) => {
        if (closed) return;
        if (!out.write(`${line}\n`)) queued++;
      };
      out.on("drain", () => {
        queued = 0;
      });

      const heartbeat = () => {
        write("{}");
        timer = ctx.clock.setTimeout(heartbeat, HEARTBEAT_MS);
      };
      let timer = ctx.clock.setTimeout(heartbeat, HEARTBEAT_MS);
      write("{}");

      const finish = (final?: Record<string, unknown>) => {
        if (closed) return;
        if (final) write(JSON.stringify(final));
        closed = true;
        ctx.clock.clearTimeout(timer);
        subscription.unsubscribe();
        closing.unsubscribe();
        out.end();
      };
      let lastSent = query.index ?? 0;
      const subscription = ctx.events.framesAfter(query.index ?? 0).subscribe({
        next: (frame) => {
          const events = frame.Events.filter((e) => matches(e, topics, namespace));
          if (events.length === frame.Events.length) write(JSON.stringify(frame));
          else if (events.length > 0) write(JSON.stringify({ ...frame, Events: events }));
          lastSent = frame.Index;
          // What was written still reaches the client before the end; the
          // cursor in the final frame picks up right after it.
          // A subscriber that does not read is closed rather than let its
          // backlog grow the server's memory without bound.
          if (queued > ctx.config.eventStreamMaxQueued) {
            finish({
              Error: `subscriber too slow: more than ${ctx.config.eventStreamMaxQueued} frames waiting; resubscribe with index=${lastSent}`,
            });
          }
        },
        error: (err: Error) => finish({ Error: err.message }),
        complete: () => finish(),
      });
      const closing = ctx.closing$.subscribe(() => finish());
      request.raw.on("close", () => finish());
    },
  );
};

function parseTopics(raw: readonly string[]): TopicFilter {
  const topics = new Map<string, Set<string>>();
  if (raw.length === 0) return new Map([["*", new Set(["*"])]]);
  for (const t of raw) {
    const parts = t.split(":");
    if (parts.length > 2 || parts[0] === "") {
      throw ApiError.badRequest(`Invalid topic query "${t}": use Topic or Topic:Key`);
    }
    const [topic, key = "*"] = parts as [string, string?];
    if (topic !== "*" && !TOPIC_NAMES.has(topic)) {
      throw ApiError.badRequest(`unknown topic "${topic}" (known: *, ${[...TOPIC_NAMES].join(", ")})`);
    }
    const keys = topics.get(topic) ?? new Set<string>();
    keys.add(key || "*");
    topics.set(topic, keys);
  }
  return topics;
}

/** Nomad's subscription filter (nomad/stream/subscription.go). */
function matches(e: StreamEvent, topics: TopicFilter, namespace: string): boolean {
  if (namespace !== "*" && e.Namespace !== "" && e.Namespace !== namespace) return false;
  const keyMatches = (keys: ReadonlySet<string> | undefined) =>
    keys !== undefined && (keys.has("*") || keys.has(e.Key) || e.FilterKeys.some((k) => keys.has(k)));
  return keyMatches(topics.get("*")) || keyMatches(topics.get(e.Topic));
}
