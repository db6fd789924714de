import type { FastifyPluginAsync } from "fastify";
import type { ApiContext } from "../context.ts";

/**
 * `/v1/agent/health` as Nomad answers it for a server agent, plus whether
 * this server has applied everything its log held when asked: a server still
 * replaying serves stale reads and says so with 500, as Nomad does when a
 * server is unhealthy.
 */
export const agentPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  app.get("/v1/agent/health", async (_request, reply) => {
    const lag = ctx.store.log.lastIndex() - ctx.store.appliedIndex;
    const leader = ctx.leadership.leaderAddress();
    const ok = leader !== "" && lag <= 0;
    const message = !leader
      ? "No cluster leader"
      : lag > 0
        ? `applying the log: ${lag} records behind`
        : "ok";
    return reply.status(ok ? 200 : 500).send({ server: { ok, message } });
  });

  app.get("/v1/agent/self", async () => ({
    config: {
      Name: ctx.config.serverName,
      DataDir: ctx.config.dataDir,
      Server: { Enabled: true },
      Addresses: { HTTP: ctx.config.httpAddr },
      Log: ctx.store.log.url,
    },
    stats: {
      chronomad: {
        applied_index: String(ctx.store.appliedIndex),
        log_last_index: String(ctx.store.log.lastIndex()),
        leader: String(ctx.leadership.isLeader()),
      },
    },
  }));
};
