import type { RouteKey, RouteRule } from "./route-rule.ts";

/*
 * What each route asks of its caller under ACLs, as Nomad v1.6.1 asks it.
 *
 * A rule is the check Nomad makes before it looks at any object: in the HTTP
 * handler (command/agent/*_endpoint.go) or at the top of the RPC it calls
 * (nomad/*_endpoint.go). Checks against an object's own namespace, and rows
 * filtered out of a list, stay in chronomad's handlers. Where Nomad checks
 * nothing but that the credential is valid (its RPC then decides per object,
 * often with a 404), the rule is "any-token".
 *
 * "handler" means the capability depends on what the request names, so the
 * gate cannot finish the check: the event topics, the search context, the
 * namespace of a job in the body (Nomad takes ?namespace=, else the body's
 * Namespace, else the job's), a path that names an ACL object, or two
 * capabilities needed together (RouteRule has no "all of"). Its anyOf is
 * always a condition Nomad's own check implies, so the gate never refuses
 * what Nomad would allow.
 *
 * Client RPCs (/v1/rpc/*) are "client": the node's SecretID, checked by the
 * handler (src/api/client-rpc/node-auth.ts). Nomad 1.6.1 only authenticates
 * them (anonymous passes, relying on mTLS); chronomad requires the secret its
 * clients send on every call since 1.6.0 (reference §3.3).
 *
 * Not here: the 405 answers of src/api/refuse-other-methods.ts (Nomad checks
 * the method before anything else), and HEAD, which the gate reads as GET
 * (src/acl/route-authorization.ts).
 */

const PUBLIC: RouteRule = { kind: "public" };
const ANY_TOKEN: RouteRule = { kind: "any-token" };
const MANAGEMENT: RouteRule = { kind: "management" };
const CLIENT: RouteRule = { kind: "client" };

const ns = (...capabilities: string[]): RouteRule => ({ kind: "namespace", capabilities });
const agent = (level: "read" | "write"): RouteRule => ({ kind: "agent", level });
const node = (level: "read" | "write"): RouteRule => ({ kind: "node", level });
const operator = (level: "read" | "write"): RouteRule => ({ kind: "operator", level });
const nodePool = (level: "read" | "write" | "delete"): RouteRule => ({ kind: "node-pool", level });
const byHandler = (why: string, ...anyOf: RouteRule[]): RouteRule => ({ kind: "handler", anyOf, why });

type Entry = readonly [RouteKey, RouteRule];

/** Nomad's write routes take PUT and POST alike. */
const putPost = (path: `/${string}`, rule: RouteRule): Entry[] => [
  [`PUT ${path}`, rule],
  [`POST ${path}`, rule],
];

/** Job.Register, for `/v1/jobs` and `/v1/job/:id`. */
const JOB_REGISTER = byHandler(
  "submit-job in the job's namespace: ?namespace=, else the body's Namespace, else Job.Namespace; " +
    "also host_volume mount-readonly/mount-readwrite for each host volume, csi-mount-volume for CSI " +
    "volumes, csi-register-plugin for CSI plugin tasks, sentinel-override for PolicyOverride, and " +
    "management while the scheduler rejects registrations",
  ANY_TOKEN,
);

/** Job.Revert, Job.Stable and Job.Evaluate decode their body into a WriteRequest. */
const submitInWriteNamespace = (rpc: string) =>
  byHandler(`${rpc}: submit-job in ?namespace=, else in the body's Namespace, else in "default"`, ANY_TOKEN);

const ENTRIES: readonly Entry[] = [
  // chronomad's own: the shape of the routes, no cluster data; tools read it before they hold a token.
  ["GET /v1/openapi.json", PUBLIC],
  // The history explorer's static files (src/api/plugins/ui.ts): public as Nomad's UI assets are;
  // the page asks the API with the user's own token.
  ["GET /", PUBLIC],
  ["GET /ui", PUBLIC],
  ["GET /ui/*", PUBLIC],

  // ---- status, agent, regions, metrics ----
  ["GET /v1/status/leader", PUBLIC], // Status.Leader: none (authentication error ignored)
  ["GET /v1/status/peers", PUBLIC], // Status.Peers: none (authentication error ignored)
  ["GET /v1/agent/health", PUBLIC], // HealthRequest: none (HTTP only, no token read)
  ["GET /v1/agent/self", agent("read")], // AgentSelfRequest: AllowAgentRead
  ["GET /v1/agent/members", node("read")], // Status.Members: AllowNodeRead
  // AgentJoinRequest: none. Nomad 1.6.1 reads no token here (docs: "ACL Required: none").
  ...putPost("/v1/agent/join", PUBLIC),
  ...putPost("/v1/agent/force-leave", agent("write")), // AgentForceLeaveRequest: AllowAgentWrite
  ["GET /v1/agent/schedulers", agent("read")], // AgentSchedulerWorkerInfoRequest: AllowAgentRead
  ["GET /v1/agent/schedulers/config", agent("read")], // getScheduleWorkersConfig: AllowAgentRead
  ...putPost("/v1/agent/schedulers/config", agent("write")), // updateScheduleWorkersConfig: AllowAgentWrite
  ["GET /v1/agent/monitor", agent("read")], // Agent.Monitor: AllowAgentRead
  ["GET /v1/agent/pprof/:profile", agent("write")], // Agent.Profile: AllowAgentWrite
  ["GET /v1/agent/host", agent("read")], // AgentHostRequest, Agent.Host: AllowAgentRead
  ["GET /v1/regions", PUBLIC], // Region.List: none (authentication error ignored)
  ["GET /v1/metrics", PUBLIC], // MetricsRequest: none (HTTP only, no token read)

  // ---- operator ----
  ["GET /v1/operator/raft/configuration", MANAGEMENT], // Operator.RaftGetConfiguration: IsManagement
  ["DELETE /v1/operator/raft/peer", MANAGEMENT], // Operator.RaftRemovePeerByID/ByAddress: IsManagement
  ["GET /v1/operator/autopilot/configuration", operator("read")], // Operator.AutopilotGetConfiguration: AllowOperatorRead
  ["PUT /v1/operator/autopilot/configuration", operator("write")], // Operator.AutopilotSetConfiguration: AllowOperatorWrite
  ["GET /v1/operator/autopilot/health", operator("read")], // Operator.ServerHealth: AllowOperatorRead
  ["GET /v1/operator/scheduler/configuration", operator("read")], // Operator.SchedulerGetConfiguration: AllowOperatorRead
  ...putPost("/v1/operator/scheduler/configuration", operator("write")), // Operator.SchedulerSetConfiguration: AllowOperatorWrite
  // chronomad's own: a digest of the whole state; the server-level read that operator read grants (as autopilot health).
  ["GET /v1/operator/state-hash", operator("read")],
  // Keyring.List: IsManagement, or a server's mTLS certificate. Quirk: without
  // tls.verify_server_hostname Nomad skips the check; its docs say management.
  ["GET /v1/operator/keyring/keys", MANAGEMENT],
  ...putPost("/v1/operator/keyring/rotate", MANAGEMENT), // Keyring.Rotate: IsManagement
  ["DELETE /v1/operator/keyring/key/:id", MANAGEMENT], // Keyring.Delete: IsManagement
  ["PUT /v1/system/gc", MANAGEMENT], // System.GarbageCollect: IsManagement
  ["PUT /v1/system/reconcile/summaries", MANAGEMENT], // System.ReconcileJobSummaries: IsManagement

  // ---- events, search ----
  // Event.Stream: aclAllowsSubscription, per topic.
  [
    "GET /v1/event/stream",
    byHandler(
      "each topic: Deployment, Evaluation, Allocation, Job, Service need read-job in ?namespace=; " +
        "Node needs node read; NodePool, * (the default) and every other topic need management",
      ns("read-job"),
      node("read"),
    ),
  ],
  // Search.PrefixSearch: sufficientSearchPerms for the context named; "all" keeps the contexts allowed.
  ...putPost(
    "/v1/search",
    byHandler(
      "the context decides: nodes need node read, node_pools a node_pool read, namespaces any capability " +
        "in the namespace, vars a variables rule, plugins plugin list, volumes a CSI or job read, " +
        "the job contexts read-job, in ?namespace= (else the body's Namespace); context all is open, " +
        "filtered per context",
      ANY_TOKEN,
    ),
  ),
  // Search.FuzzySearch: as the prefix search, except that namespace * is open (filtered per row).
  ...putPost(
    "/v1/search/fuzzy",
    byHandler(
      "as /v1/search, per context; with namespace * nothing is refused and rows are filtered",
      ANY_TOKEN,
    ),
  ),

  // ---- namespaces ----
  ["GET /v1/namespaces", ANY_TOKEN], // Namespace.ListNamespaces: none (rows filtered by AllowNamespace)
  [
    "GET /v1/namespace/:name",
    byHandler(
      "Namespace.GetNamespace: AllowNamespace(:name), any capability in the namespace the path names",
      ANY_TOKEN,
    ),
  ],
  ...putPost("/v1/namespace/:name", MANAGEMENT), // Namespace.UpsertNamespaces: IsManagement
  ...putPost("/v1/namespace", MANAGEMENT), // Namespace.UpsertNamespaces: IsManagement
  ["DELETE /v1/namespace/:name", MANAGEMENT], // Namespace.DeleteNamespaces: IsManagement

  // ---- variables: Nomad checks each path in the RPC (AllowVariableOperation), so the handler does ----
  // Variables.List: authentication only; rows filtered by list on each path (namespace * included).
  [
    "GET /v1/vars",
    byHandler(
      "Variables.List: list on each variable's path; rows the caller may not list are left out",
      ANY_TOKEN,
    ),
  ],
  // Variables.Read: read on the path in ?namespace= (a workload also by its implicit nomad/jobs paths).
  ["GET /v1/var/*", byHandler("Variables.Read: read on the path the URL names, in ?namespace=", ANY_TOKEN)],
  // Variables.Apply set/cas: write on the path, in the body's Namespace, else ?namespace=.
  ...putPost(
    "/v1/var/*",
    byHandler(
      "Variables.Apply: write on the path the URL names, in the body's Namespace, else ?namespace=",
      ANY_TOKEN,
    ),
  ),
  // Variables.Apply delete/delete-cas: destroy on the path.
  [
    "DELETE /v1/var/*",
    byHandler("Variables.Apply: destroy on the path the URL names, in ?namespace=", ANY_TOKEN),
  ],

  // ---- evaluations ----
  ["GET /v1/evaluations", ns("read-job")], // Eval.List: read-job (namespace * = any; rows filtered)
  ["DELETE /v1/evaluations", MANAGEMENT], // Eval.Delete: IsManagement
  ["GET /v1/evaluations/count", ns("read-job")], // Eval.Count: read-job (namespace * = any; rows filtered)
  ["GET /v1/evaluation/:id", ns("read-job")], // Eval.GetEval: read-job, then again in the eval's namespace
  ["GET /v1/evaluation/:id/allocations", ns("read-job")], // Eval.Allocations: read-job, then per alloc namespace

  // ---- nodes ----
  ["GET /v1/nodes", node("read")], // Node.List: AllowNodeRead
  ["GET /v1/node/:id", node("read")], // Node.GetNode: AllowNodeRead (Nomad also lets any client node read it)
  ["GET /v1/node/:id/allocations", node("read")], // Node.GetAllocs: AllowNodeRead (allocs filtered by read-job)
  ...putPost("/v1/node/:id/drain", node("write")), // Node.UpdateDrain: AllowNodeWrite
  ...putPost("/v1/node/:id/eligibility", node("write")), // Node.UpdateEligibility: AllowNodeWrite
  ...putPost("/v1/node/:id/evaluate", node("write")), // Node.Evaluate: AllowNodeWrite
  ...putPost("/v1/node/:id/purge", node("write")), // Node.Deregister: AllowNodeWrite

  // ---- node pools ----
  ["GET /v1/node/pools", nodePool("read")], // NodePool.List: none (rows filtered by node_pool read)
  ...putPost(
    "/v1/node/pools",
    byHandler("NodePool.UpsertNodePools: node_pool write on the pool the body names", nodePool("write")),
  ),
  ["GET /v1/node/pool/:name", nodePool("read")], // NodePool.GetNodePool: node_pool read on :name
  // NodePool.UpsertNodePools: node_pool write on the body's pool, which must be :name (else 400).
  ...putPost("/v1/node/pool/:name", nodePool("write")),
  ["DELETE /v1/node/pool/:name", nodePool("delete")], // NodePool.DeleteNodePools: node_pool delete on :name
  [
    "GET /v1/node/pool/:name/nodes",
    byHandler("NodePool.ListNodes: node_pool read on :name and also node read", nodePool("read")),
  ],
  ["GET /v1/node/pool/:name/jobs", nodePool("read")], // NodePool.ListJobs: node_pool read on :name (rows filtered by list-jobs)

  // ---- allocations ----
  ["GET /v1/allocations", ns("read-job")], // Alloc.List: read-job (namespace * = any; rows filtered)
  // Alloc.GetAlloc: none before the lookup; then read-job in the alloc's namespace, else the
  // error "Unknown allocation" (which Nomad 1.6.1's HTTP layer answers with 500, not 403).
  ["GET /v1/allocation/:id", ANY_TOKEN],
  ...putPost("/v1/allocation/:id/stop", ANY_TOKEN), // Alloc.Stop: none before the lookup; alloc-lifecycle in the alloc's namespace
  // ClientAllocations.Exec: none before the lookup (404); alloc-exec in the alloc's namespace
  // (and alloc-node-exec on the client for drivers without filesystem isolation).
  ["GET /v1/client/allocation/:id/exec", ANY_TOKEN],

  // ---- calls passed on to client agents: none before the allocation's lookup (404); then a
  // capability in the allocation's namespace, checked in the handler ----
  ["GET /v1/client/fs/ls/:id", ANY_TOKEN], // FileSystem.List: read-fs
  ["GET /v1/client/fs/stat/:id", ANY_TOKEN], // FileSystem.Stat: read-fs
  ["GET /v1/client/fs/readat/:id", ANY_TOKEN], // FileSystem.Stream: read-fs
  ["GET /v1/client/fs/cat/:id", ANY_TOKEN], // FileSystem.Stream: read-fs
  ["GET /v1/client/fs/stream/:id", ANY_TOKEN], // FileSystem.Stream: read-fs
  ["GET /v1/client/fs/logs/:id", ANY_TOKEN], // FileSystem.Logs: read-fs or read-logs
  ["GET /v1/client/allocation/:id/stats", ANY_TOKEN], // ClientAllocations.Stats: read-job
  ["GET /v1/client/allocation/:id/checks", ANY_TOKEN], // ClientAllocations.Checks: read-job
  ...putPost("/v1/client/allocation/:id/restart", ANY_TOKEN), // ClientAllocations.Restart: alloc-lifecycle
  ...putPost("/v1/client/allocation/:id/signal", ANY_TOKEN), // ClientAllocations.Signal: alloc-lifecycle
  ["GET /v1/client/allocation/:id/gc", ANY_TOKEN], // ClientAllocations.GarbageCollect: submit-job
  // The node's own calls check the node block first. (Nomad's HTTP handler answers 400 "No local
  // Node and node_id not provided" before any RPC; here a caller without the capability hears 403 first.)
  ["GET /v1/client/gc", node("write")], // ClientAllocations.GarbageCollectAll: AllowNodeWrite
  ["GET /v1/client/stats", node("read")], // ClientStats.Stats: AllowNodeRead
  ["GET /v1/client/metadata", node("read")], // NodeMeta.Read: AllowNodeRead
  ["POST /v1/client/metadata", node("write")], // NodeMeta.Apply: AllowNodeWrite

  // ---- jobs ----
  ["GET /v1/jobs", ns("list-jobs")], // Job.List: list-jobs (namespace * = any; rows filtered)
  ...putPost("/v1/jobs", JOB_REGISTER), // Job.Register
  ["GET /v1/job/:id", ns("read-job")], // Job.GetJob: read-job
  ...putPost("/v1/job/:id", JOB_REGISTER), // Job.Register
  ["DELETE /v1/job/:id", ns("submit-job")], // Job.Deregister: submit-job
  ["GET /v1/job/:id/allocations", ns("read-job")], // Job.Allocations: read-job
  ["GET /v1/job/:id/evaluations", ns("read-job")], // Job.Evaluations: read-job
  ["GET /v1/job/:id/versions", ns("read-job")], // Job.GetJobVersions: read-job
  ["GET /v1/job/:id/summary", ns("read-job")], // Job.Summary: read-job
  ["GET /v1/job/:id/deployments", ns("read-job")], // Job.Deployments: read-job
  ["GET /v1/job/:id/deployment", ns("read-job")], // Job.LatestDeployment: read-job
  ["GET /v1/job/:id/submission", ns("read-job")], // Job.GetJobSubmission: read-job
  // Job.Plan: submit-job (sentinel-override for PolicyOverride), in the namespace Job.Register would use.
  ...putPost(
    "/v1/job/:id/plan",
    byHandler(
      "Job.Plan: submit-job in the job's namespace: ?namespace=, else the body's Namespace, else Job.Namespace",
      ANY_TOKEN,
    ),
  ),
  ...putPost("/v1/job/:id/evaluate", submitInWriteNamespace("Job.Evaluate")), // Job.Evaluate: submit-job
  ...putPost("/v1/job/:id/revert", submitInWriteNamespace("Job.Revert")), // Job.Revert: submit-job
  ...putPost("/v1/job/:id/stable", submitInWriteNamespace("Job.Stable")), // Job.Stable: submit-job
  ["GET /v1/job/:id/scale", ns("read-job", "read-job-scaling")], // Job.ScaleStatus: read-job or read-job-scaling
  ...putPost("/v1/job/:id/scale", ns("scale-job", "submit-job")), // Job.Scale: scale-job or submit-job
  ...putPost("/v1/job/:id/periodic/force", ns("dispatch-job")), // Periodic.Force: dispatch-job
  ...putPost("/v1/job/:id/dispatch", ns("dispatch-job")), // Job.Dispatch: dispatch-job
  ...putPost("/v1/jobs/parse", ns("parse-job", "submit-job")), // JobsParseRequest (HTTP): parse-job or submit-job
  // Job.Validate: read-job in the body job's namespace (the HTTP handler overwrites ?namespace= with it).
  ...putPost(
    "/v1/validate/job",
    byHandler(
      'Job.Validate: read-job in the body job\'s Namespace (default "default"); ?namespace= is ignored',
      ANY_TOKEN,
    ),
  ),

  // ---- scaling policies ----
  [
    "GET /v1/scaling/policies",
    byHandler(
      "Scaling.ListPolicies: list-scaling-policies, or list-jobs and read-job together, in ?namespace=; " +
        "with namespace * nothing is refused and rows are filtered the same way",
      ANY_TOKEN,
    ),
  ],
  [
    "GET /v1/scaling/policy/:id",
    byHandler(
      "Scaling.GetPolicy: read-scaling-policy, or list-jobs and read-job together, in ?namespace=",
      ns("read-scaling-policy", "read-job"),
    ),
  ],

  // ---- deployments ----
  ["GET /v1/deployments", ns("read-job")], // Deployment.List: read-job (namespace * = any; rows filtered)
  ["GET /v1/deployment/:id", ns("read-job")], // Deployment.GetDeployment: read-job, then hidden (404) outside the deployment's namespace
  ["GET /v1/deployment/allocations/:id", ns("read-job")], // Deployment.Allocations: read-job, then per alloc namespace
  // Deployment.Fail, Pause, Promote, SetAllocHealth: submit-job, then checked again in the
  // deployment's own namespace once it is found (as the reads above).
  ...(["fail", "pause", "promote", "allocation-health"] as const).flatMap((sub) =>
    putPost(`/v1/deployment/${sub}/:id`, ns("submit-job")),
  ),

  // ---- service registrations (provider "nomad") ----
  // ServiceRegistration.List: read-job in ?namespace= (a workload identity passes: Nomad skips the
  // check for claims); with namespace * nothing is refused and rows are filtered by read-job.
  [
    "GET /v1/services",
    byHandler(
      "ServiceRegistration.List: read-job in ?namespace=, or any workload identity; " +
        "with namespace * rows are filtered by read-job in their namespace",
      ANY_TOKEN,
    ),
  ],
  // ServiceRegistration.GetService: read-job in ?namespace=, or any workload identity (claims skip the check).
  [
    "GET /v1/service/:name",
    byHandler("ServiceRegistration.GetService: read-job in ?namespace=, or any workload identity", ANY_TOKEN),
  ],
  // ServiceRegistration.DeleteByID: submit-job in ?namespace=; a token Nomad cannot find is tried as a node SecretID.
  [
    "DELETE /v1/service/:name/:id",
    byHandler(
      "ServiceRegistration.DeleteByID: submit-job in ?namespace=, or a client node's SecretID " +
        "(which deletes only that node's registrations)",
      ANY_TOKEN,
    ),
  ],
  ["GET /v1/job/:id/services", ns("read-job")], // Job.GetServiceRegistrations: read-job
  ["GET /v1/allocation/:id/services", ns("read-job")], // Alloc.GetServiceRegistrations: read-job, then the alloc's namespace must be ?namespace=

  // ---- CSI volumes and plugins (nomad/csi_endpoint.go) ----
  // CSIVolume.List: csi-list-volume, csi-read-volume, csi-mount-volume or list-jobs in ?namespace=;
  // with namespace * rows are filtered by the same in their namespace. Without ?type=csi Nomad's
  // handler answers [] or null before the RPC, so before any check.
  [
    "GET /v1/volumes",
    byHandler(
      "CSIVolume.List with ?type=csi: csi-list-volume, csi-read-volume, csi-mount-volume or list-jobs in " +
        "?namespace= (rows filtered the same with *); without type=csi nothing is checked",
      ANY_TOKEN,
    ),
  ],
  // CSIVolume.Register: csi-write-volume in the volume's namespace and plugin read (RouteRule has no "all of").
  ...putPost(
    "/v1/volumes",
    byHandler(
      "CSIVolume.Register: csi-write-volume in each volume's namespace, and plugin read",
      ns("csi-write-volume"),
    ),
  ),
  // CSIVolume.Get: csi-read-volume, csi-mount-volume or read-job; a client's own identity passes too.
  [
    "GET /v1/volume/csi/:id",
    byHandler(
      "CSIVolume.Get: csi-read-volume, csi-mount-volume or read-job in ?namespace=, or a client node",
      ANY_TOKEN,
    ),
  ],
  ...putPost(
    "/v1/volume/csi/:id",
    byHandler(
      "CSIVolume.Register: csi-write-volume in each volume's namespace, and plugin read",
      ns("csi-write-volume"),
    ),
  ),
  ...putPost(
    "/v1/volume/csi/:id/create",
    byHandler(
      "CSIVolume.Create: csi-write-volume in each volume's namespace, and plugin read",
      ns("csi-write-volume"),
    ),
  ),
  ["DELETE /v1/volume/csi/:id", ns("csi-write-volume")], // CSIVolume.Deregister: csi-write-volume
  // CSIPlugin.List with ?type=csi: AllowPluginList; without it Nomad's handler answers before the RPC.
  ["GET /v1/plugins", byHandler("CSIPlugin.List with ?type=csi: plugin list", ANY_TOKEN)],
  ["GET /v1/plugin/csi/:id", { kind: "plugin", level: "read" }], // CSIPlugin.Get: AllowPluginRead

  // ---- history: chronomad's own, the same rule as reading the object in Nomad ----
  ["GET /v1/allocation/:id/history", ANY_TOKEN], // as Alloc.GetAlloc: read-job in the alloc's namespace, in the handler
  ["GET /v1/node/:id/history", node("read")], // as Node.GetNode: AllowNodeRead
  ["GET /v1/job/:id/history", ns("read-job")], // as Job.GetJob: read-job
  ["GET /v1/evaluation/:id/history", ns("read-job")], // as Eval.GetEval: read-job, then in the eval's namespace
  ["GET /v1/volume/csi/:id/history", ns("csi-read-volume", "csi-mount-volume", "read-job")], // as CSIVolume.Get

  // ---- client RPCs ----
  // Node.Register: trust on first use. A new node brings its SecretID in the
  // body (and may present it before it is known); a known node must present
  // the secret it registered with (src/api/client-rpc/register.ts).
  ...putPost("/v1/rpc/Node.Register", CLIENT),
  ...putPost("/v1/rpc/Node.UpdateStatus", CLIENT), // Node.UpdateStatus: authentication only in Nomad 1.6.1
  ...putPost("/v1/rpc/Node.UpdateAlloc", CLIENT), // Node.UpdateAlloc: authentication and mTLS client certificate
  ...putPost("/v1/rpc/Node.GetClientAllocs", CLIENT), // Node.GetClientAllocs: authentication only in Nomad 1.6.1
  // Node.Deregister: a client identity, or AllowNodeWrite for a token; chronomad's
  // operators purge through /v1/node/:id/purge, so this one takes the node's own secret.
  ...putPost("/v1/rpc/Node.Deregister", CLIENT),
  ...putPost("/v1/rpc/Node.EmitEvents", CLIENT), // Node.EmitEvents: authentication and mTLS client certificate
  ...putPost("/v1/rpc/Alloc.GetAllocs", CLIENT), // Alloc.GetAllocs: authentication and mTLS client certificate
  ...putPost("/v1/rpc/Alloc.GetAlloc", CLIENT), // Alloc.GetAlloc: a client watching a previous allocation elsewhere
  // ServiceRegistration.Upsert: a node's SecretID (and mTLS client certificate); here only for its own allocations.
  ...putPost("/v1/rpc/ServiceRegistration.Upsert", CLIENT),
  // ServiceRegistration.DeleteByID as a client sends it: its SecretID; here only its own registrations.
  ...putPost("/v1/rpc/ServiceRegistration.DeleteByID", CLIENT),
  // `volume detach`: CSIVolume.Unpublish, csi-mount-volume in ?namespace= and plugin read (RouteRule has no "all of").
  [
    "DELETE /v1/volume/csi/:id/detach",
    byHandler(
      "CSIVolume.Unpublish: csi-mount-volume in ?namespace=, and plugin read",
      ns("csi-mount-volume"),
    ),
  ],
  // CSIVolume.Claim / Unpublish as the csi hook sends them: the node's SecretID, for its own allocations' claims.
  ...putPost("/v1/rpc/CSIVolume.Claim", CLIENT),
  ...putPost("/v1/rpc/CSIVolume.Unpublish", CLIENT),
  // chronomad's server → client detach calls: the node's SecretID; a node sees and answers only its own.
  ...putPost("/v1/rpc/ClientCSI.PendingDetaches", CLIENT),
  ...putPost("/v1/rpc/ClientCSI.AckDetach", CLIENT),
  // An unknown method: Nomad's RPC server answers "can't find method" before any handler runs.
  ...putPost("/v1/rpc/:method", PUBLIC),

  // ---- workload identity discovery: chronomad serves Nomad 1.7's, which are unauthenticated
  // so that third parties can verify workload identities (Keyring.ListPublic) ----
  ["GET /.well-known/jwks.json", PUBLIC],
  ["GET /.well-known/openid-configuration", PUBLIC],

  // ---- ACL ----
  ...putPost("/v1/acl/bootstrap", PUBLIC), // ACL.Bootstrap: none (authentication error ignored)
  ["GET /v1/acl/policies", ANY_TOKEN], // ACL.ListPolicies: none (rows: the token's policies, direct or through roles)
  [
    "GET /v1/acl/policy/:name",
    byHandler(
      "ACL.GetPolicy: management, or a policy the token holds (directly or through a role), or the policy anonymous",
      ANY_TOKEN,
    ),
  ],
  ...putPost("/v1/acl/policy/:name", MANAGEMENT), // ACL.UpsertPolicies: IsManagement
  ["DELETE /v1/acl/policy/:name", MANAGEMENT], // ACL.DeletePolicies: IsManagement
  ["GET /v1/acl/tokens", MANAGEMENT], // ACL.ListTokens: IsManagement
  ...putPost("/v1/acl/token", MANAGEMENT), // ACL.UpsertTokens: IsManagement
  // ACL.ResolveToken: no authentication; the caller's own secret is looked up (no token, or an unknown one: 404).
  ["GET /v1/acl/token/self", PUBLIC],
  ...putPost(
    "/v1/acl/token/onetime",
    byHandler(
      "ACL.UpsertOneTimeToken: the caller's own ACL token; the anonymous token and workload identities are refused",
      ANY_TOKEN,
    ),
  ),
  // ACL.ExchangeOneTimeToken: none; the one-time secret in the body is the credential.
  ...putPost("/v1/acl/token/onetime/exchange", PUBLIC),
  [
    "GET /v1/acl/token/:accessor",
    byHandler(
      "ACL.GetToken: management, or the caller's own token (its SecretID is the caller's)",
      ANY_TOKEN,
    ),
  ],
  ...putPost("/v1/acl/token/:accessor", MANAGEMENT), // ACL.UpsertTokens: IsManagement
  ["DELETE /v1/acl/token/:accessor", MANAGEMENT], // ACL.DeleteTokens: IsManagement
  ["GET /v1/acl/roles", ANY_TOKEN], // ACL.ListRoles: none (rows: the roles linked to the token)
  ...putPost("/v1/acl/role", MANAGEMENT), // ACL.UpsertRoles: IsManagement
  [
    "GET /v1/acl/role/:id",
    byHandler("ACL.GetRoleByID: management, or a role linked to the token", ANY_TOKEN),
  ],
  ...putPost("/v1/acl/role/:id", MANAGEMENT), // ACL.UpsertRoles: IsManagement
  ["DELETE /v1/acl/role/:id", MANAGEMENT], // ACL.DeleteRolesByID: IsManagement
  [
    "GET /v1/acl/role/name/:name",
    byHandler("ACL.GetRoleByName: management, or a role linked to the token", ANY_TOKEN),
  ],
  ["GET /v1/acl/auth-methods", PUBLIC], // ACL.ListAuthMethods: none, not even authentication (stubs)
  ...putPost("/v1/acl/auth-method", MANAGEMENT), // ACL.UpsertAuthMethods: IsManagement
  ["GET /v1/acl/auth-method/:name", MANAGEMENT], // ACL.GetAuthMethod: IsManagement
  ...putPost("/v1/acl/auth-method/:name", MANAGEMENT), // ACL.UpsertAuthMethods: IsManagement
  ["DELETE /v1/acl/auth-method/:name", MANAGEMENT], // ACL.DeleteAuthMethods: IsManagement
  ["GET /v1/acl/binding-rules", MANAGEMENT], // ACL.ListBindingRules: IsManagement
  ...putPost("/v1/acl/binding-rule", MANAGEMENT), // ACL.UpsertBindingRules: IsManagement
  ["GET /v1/acl/binding-rule/:id", MANAGEMENT], // ACL.GetBindingRule: IsManagement
  ...putPost("/v1/acl/binding-rule/:id", MANAGEMENT), // ACL.UpsertBindingRules: IsManagement
  ["DELETE /v1/acl/binding-rule/:id", MANAGEMENT], // ACL.DeleteBindingRules: IsManagement
  ...putPost("/v1/acl/login", PUBLIC), // ACL.Login: none (the login token is the credential)
  ...putPost("/v1/acl/oidc/auth-url", PUBLIC), // ACL.OIDCAuthURL: none
  ...putPost("/v1/acl/oidc/complete-auth", PUBLIC), // ACL.OIDCCompleteAuth: none
  // ACL.WhoAmI (no HTTP route in Nomad 1.6.1): returns the authentication error itself; anonymous passes.
  ["GET /v1/acl/whoami", ANY_TOKEN],
  // chronomad's own audit trails of the ACL objects: who changed what, seen by those who may manage
  // the objects (every write of them is management-only; a token's trail names its holders' actions).
  ["GET /v1/acl/token/:accessor/history", MANAGEMENT],
  ["GET /v1/acl/policy/:name/history", MANAGEMENT],
  ["GET /v1/acl/role/:id/history", MANAGEMENT],
  ["GET /v1/acl/auth-method/:name/history", MANAGEMENT],
  ["GET /v1/acl/binding-rule/:id/history", MANAGEMENT],
];

function freezeRule(rule: RouteRule): RouteRule {
  if (rule.kind === "namespace") Object.freeze(rule.capabilities);
  if (rule.kind === "handler") {
    for (const r of rule.anyOf) freezeRule(r);
    Object.freeze(rule.anyOf);
  }
  return Object.freeze(rule);
}

function toTable(entries: readonly Entry[]): Readonly<Record<RouteKey, RouteRule>> {
  const table: Record<RouteKey, RouteRule> = {};
  for (const [key, rule] of entries) {
    // A second entry would silently replace the first: a table bug, caught at load.
    if (Object.hasOwn(table, key)) throw new Error(`route-permissions: ${key} has two rules`);
    table[key] = freezeRule(rule);
  }
  return Object.freeze(table);
}

/** The rule of every route chronomad serves, keyed `METHOD /path` as fastify registers it. */
export const ROUTE_RULES: Readonly<Record<RouteKey, RouteRule>> = toTable(ENTRIES);
