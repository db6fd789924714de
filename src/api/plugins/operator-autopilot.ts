import type { FastifyPluginAsync } from "fastify";
import { currentLeadership } from "../../../projections/leadership.ts";
import { clusterServers, NOMAD_API_VERSION } from "../../cluster/server-members.ts";
import type { ServerMember } from "../../leadership.ts";
import { formatDuration, parseDuration } from "../../util/duration.ts";
import { ApiError } from "../api-error.ts";
import type { ApiContext } from "../context.ts";
import { refuseOtherMethods } from "../refuse-other-methods.ts";
import { textQuery } from "../request-schemas.ts";

/** Nomad's default MaxTrailingLogs: a server further behind the log than this is unhealthy. */
const MAX_TRAILING_LOGS = 250;
/** Nomad's default ServerStabilizationTime. */
const STABILIZATION_MS = 10_000;

/** api.AutopilotConfiguration as clients send it (durations as Go duration strings). */
const configBody = {
  type: "object",
  additionalProperties: false,
  properties: {
    CleanupDeadServers: { type: "boolean" },
    LastContactThreshold: { type: "string" },
    MaxTrailingLogs: { type: "integer", minimum: 0 },
    MinQuorum: { type: "integer", minimum: 0 },
    ServerStabilizationTime: { type: "string" },
    EnableRedundancyZones: { type: "boolean" },
    DisableUpgradeMigration: { type: "boolean" },
    EnableCustomUpgrades: { type: "boolean" },
    CreateIndex: { type: "integer" },
    ModifyIndex: { type: "integer" },
  },
} as const;

interface ConfigBody {
  CleanupDeadServers?: boolean;
  LastContactThreshold?: string;
  MaxTrailingLogs?: number;
  MinQuorum?: number;
  ServerStabilizationTime?: string;
  EnableRedundancyZones?: boolean;
  DisableUpgradeMigration?: boolean;
  EnableCustomUpgrades?: boolean;
}

/** The settings as numbers, for comparing what a caller sends with what is in force. */
interface Settings {
  readonly CleanupDeadServers: boolean;
  readonly LastContactThresholdMs: number;
  readonly MaxTrailingLogs: number;
  readonly MinQuorum: number;
  readonly ServerStabilizationMs: number;
  readonly EnableRedundancyZones: boolean;
  readonly DisableUpgradeMigration: boolean;
  readonly EnableCustomUpgrades: boolean;
}

/**
 * `/v1/operator/autopilot/*`. Nomad's autopilot prunes dead Raft peers and
 * promotes new ones; chronomad's servers are members of the log's leader
 * election instead, which drops a server silent for leader_session_timeout
 * by itself. The configuration shows the rules that actually hold (dead
 * servers are cleaned up, the contact threshold is the election's session
 * timeout) and cannot be changed: a PUT that would change anything is
 * refused, one that changes nothing succeeds. Health is reported from this
 * server's view of the election.
 */
export const operatorAutopilotPlugin: FastifyPluginAsync<ApiContext> = async (app, ctx) => {
  const settings = (): Settings => ({
    CleanupDeadServers: true,
    LastContactThresholdMs: ctx.config.leaderSessionTimeout,
    MaxTrailingLogs: MAX_TRAILING_LOGS,
    MinQuorum: 0,
    ServerStabilizationMs: STABILIZATION_MS,
    EnableRedundancyZones: false,
    DisableUpgradeMigration: false,
    EnableCustomUpgrades: false,
  });
  // Fixed since the cluster was created: its indexes are the bootstrap's.
  const createIndex = () => ctx.tables.cluster.get("cluster")?.CreateIndex ?? 0;

  const configuration = "/v1/operator/autopilot/configuration";
  app.get(configuration, { schema: { querystring: textQuery("region", "stale") } }, async (request) => {
    if (!request.identity.allows("", "operator:read")) throw ApiError.forbidden();
    const s = settings();
    return {
      CleanupDeadServers: s.CleanupDeadServers,
      LastContactThreshold: formatDuration(s.LastContactThresholdMs),
      MaxTrailingLogs: s.MaxTrailingLogs,
      MinQuorum: s.MinQuorum,
      ServerStabilizationTime: formatDuration(s.ServerStabilizationMs),
      EnableRedundancyZones: s.EnableRedundancyZones,
      DisableUpgradeMigration: s.DisableUpgradeMigration,
      EnableCustomUpgrades: s.EnableCustomUpgrades,
      CreateIndex: createIndex(),
      ModifyIndex: createIndex(),
    };
  });
  app.put(
    configuration,
    { schema: { body: configBody, querystring: textQuery("cas", "region") } },
    async (request) => {
      if (!request.identity.allows("", "operator:write")) throw ApiError.forbidden();
      const body = request.body as ConfigBody | undefined;
      if (body === undefined) throw ApiError.badRequest("Error parsing autopilot config: EOF");
      const wanted = parseSettings(body);
      const cas = (request.query as { cas?: string }).cas;
      if (cas !== undefined && !/^[0-9]+$/.test(cas)) {
        throw ApiError.badRequest(
          `Error parsing cas value: strconv.ParseUint: parsing ${JSON.stringify(cas)}: invalid syntax`,
        );
      }
      const changed = differences(settings(), wanted);
      if (changed.length > 0) {
        throw ApiError.badRequest(
          `autopilot configuration cannot be changed (${changed.join(", ")}): chronomad servers are not Raft ` +
            "peers; the leader election on the shared log removes a server silent for leader_session_timeout " +
            "by itself, and every server consumes the whole log",
        );
      }
      // Nothing to change: applied, or (with ?cas) applied only if the index still matches.
      return cas === undefined || Number(cas) === createIndex();
    },
  );
  refuseOtherMethods(app, configuration, ["GET", "PUT"]);

  const health = "/v1/operator/autopilot/health";
  app.get(health, { schema: { querystring: textQuery("region", "stale") } }, async (request, reply) => {
    if (!request.identity.allows("", "operator:read")) throw ApiError.forbidden();
    const s = settings();
    const servers = clusterServers(ctx.leadership, ctx.config.serverName);
    const leadership = currentLeadership(ctx.tables.leadership);
    const term = leadership?.Epoch ?? 0;
    const stableSince = new Date(
      Math.round((leadership?.EstablishedAt ?? ctx.clock.now()) / 1000) * 1000,
    ).toISOString();
    const entries = servers.map((server) => {
      const view = serverView(ctx, server, s);
      return {
        ID: server.name,
        Name: server.name,
        Address: server.address,
        SerfStatus: "alive",
        Version: NOMAD_API_VERSION,
        Leader: server.leader,
        LastContact: formatDuration(view.lastContactMs),
        LastTerm: term,
        LastIndex: view.lastIndex,
        Healthy: view.healthy,
        Voter: true,
        StableSince: stableSince,
      };
    });
    const healthy = entries.filter((e) => e.Healthy).length;
    const allHealthy = healthy === entries.length && ctx.leadership.leaderAddress() !== "";
    // Nomad answers 429 when something is unhealthy, with the report.
    if (!allHealthy) reply.status(429);
    return {
      Healthy: allHealthy,
      // The log holds the state, and any one server can lead: the cluster
      // outlives all its servers but one (the log's own fault tolerance apart).
      FailureTolerance: Math.max(0, healthy - 1),
      Servers: entries,
      Leader: servers.find((x) => x.leader)?.name ?? "",
      Voters: servers.map((x) => x.name),
    };
  });
  refuseOtherMethods(app, health, ["GET"]);
};

/**
 * What this server knows of one server's health. Its own: how far behind
 * the log it is and when it last heard from the election. Another's: it is
 * a member of the election, whose coordinator drops a member silent past
 * the session timeout (the contact threshold), so a listed server is in
 * contact; its log position is not known here (0).
 */
function serverView(
  ctx: ApiContext,
  server: ServerMember,
  s: Settings,
): { lastContactMs: number; lastIndex: number; healthy: boolean } {
  if (!server.self) return { lastContactMs: 0, lastIndex: 0, healthy: true };
  const lastContactMs = server.leader ? 0 : Math.round(ctx.leadership.lastContactMs());
  const behind = ctx.store.log.lastIndex() - ctx.store.appliedIndex;
  return {
    lastContactMs,
    lastIndex: ctx.store.appliedIndex,
    healthy: behind <= s.MaxTrailingLogs && lastContactMs <= s.LastContactThresholdMs,
  };
}

function parseSettings(body: ConfigBody): Settings {
  return {
    CleanupDeadServers: body.CleanupDeadServers ?? false,
    LastContactThresholdMs: duration(body.LastContactThreshold),
    MaxTrailingLogs: body.MaxTrailingLogs ?? 0,
    MinQuorum: body.MinQuorum ?? 0,
    ServerStabilizationMs: duration(body.ServerStabilizationTime),
    EnableRedundancyZones: body.EnableRedundancyZones ?? false,
    DisableUpgradeMigration: body.DisableUpgradeMigration ?? false,
    EnableCustomUpgrades: body.EnableCustomUpgrades ?? false,
  };
}

/** api.AutopilotConfiguration's UnmarshalJSON: an empty string is zero, anything else a Go duration. */
function duration(text: string | undefined): number {
  if (text === undefined || text === "") return 0;
  const ms = parseDuration(text);
  if (ms === undefined) {
    throw ApiError.badRequest(
      `Error parsing autopilot config: time: invalid duration ${JSON.stringify(text)}`,
    );
  }
  return ms;
}

function differences(current: Settings, wanted: Settings): string[] {
  const names: Record<keyof Settings, string> = {
    CleanupDeadServers: "CleanupDeadServers",
    LastContactThresholdMs: "LastContactThreshold",
    MaxTrailingLogs: "MaxTrailingLogs",
    MinQuorum: "MinQuorum",
    ServerStabilizationMs: "ServerStabilizationTime",
    EnableRedundancyZones: "EnableRedundancyZones",
    DisableUpgradeMigration: "DisableUpgradeMigration",
    EnableCustomUpgrades: "EnableCustomUpgrades",
  };
  return (Object.keys(names) as (keyof Settings)[])
    .filter((k) => current[k] !== wanted[k])
    .map((k) => `${names[k]} is ${show(k, current[k])}, not ${show(k, wanted[k])}`);
}

function show(key: keyof Settings, value: number | boolean): string {
  return typeof value === "number" && key.endsWith("Ms") ? formatDuration(value) : String(value);
}
