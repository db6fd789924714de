import type { Projection } from "../src/store/projection.ts";
import { aclProjection } from "./acl.ts";
import { aclSsoProjection } from "./acl-sso.ts";
import { allocsProjection } from "./allocs.ts";
import { clusterProjection } from "./cluster.ts";
import { csiDetachRequestsProjection } from "./csi-detach-requests.ts";
import { csiPluginsProjection } from "./csi-plugins.ts";
import { csiVolumesProjection } from "./csi-volumes.ts";
import { deploymentWriteRefusal } from "./deployment-writes.ts";
import { deploymentsProjection } from "./deployments.ts";
import { deleteSafetyLookups } from "./eval-delete-safety.ts";
import { evalsProjection } from "./evals.ts";
import { gcProjection } from "./gc.ts";
import { historyProjection } from "./history.ts";
import { jobSubmissionsProjection } from "./job-submissions.ts";
import { jobsProjection } from "./jobs.ts";
import { leadershipProjection } from "./leadership.ts";
import { namespacesProjection } from "./namespaces.ts";
import { nodePoolsProjection } from "./node-pools.ts";
import { nodesProjection } from "./nodes.ts";
import { preemptionEvalsProjection } from "./preemption-evals.ts";
import { rootKeysProjection } from "./root-keys.ts";
import { scalingProjection } from "./scaling.ts";
import { schedulerConfigProjection } from "./scheduler-config.ts";
import { serviceRegistrationsProjection } from "./service-registrations.ts";
import { variablesProjection } from "./variables.ts";

/**
 * Fresh, empty instances of every projection, in the order they apply a
 * record. Each server (and each replay) gets its own set.
 */
export function createProjections() {
  const cluster = clusterProjection();
  const leadership = leadershipProjection();
  const variables = variablesProjection();
  const namespaces = namespacesProjection(variables.variables);
  const schedulerConfig = schedulerConfigProjection();
  const rootKeys = rootKeysProjection();
  const acl = aclProjection();
  const aclSso = aclSsoProjection();
  const nodes = nodesProjection();
  const nodePools = nodePoolsProjection({ nodes: nodes.nodes });
  const jobs = jobsProjection({ namespaces: namespaces.namespaces, nodePools: nodePools.pools });
  nodePools.bind(jobs.jobs);
  const allocs = allocsProjection(nodes.nodes, jobs.versions);
  const deployments = deploymentsProjection(allocs.allocs);
  const evals = evalsProjection({
    schedulerConfig: schedulerConfig.schedulerConfig,
    safety: deleteSafetyLookups({ allocs: allocs.allocs, jobs: jobs.jobs }),
    safetyReads: ["allocs", "jobs", "deployments"],
    deploymentGate: (event) => deploymentWriteRefusal(deployments.deployments, allocs.allocs, event),
  });
  jobs.bind(allocs.allocs, evals.evals);
  const services = serviceRegistrationsProjection({ nodes: nodes.nodes, allocs: allocs.allocs });
  const csiPlugins = csiPluginsProjection();
  const csiVolumes = csiVolumesProjection({
    namespaces: namespaces.namespaces,
    plugins: csiPlugins.plugins,
    allocs: allocs.allocs,
  });
  allocs.bindCsiVolumes(csiVolumes.volumes);
  namespaces.bind(csiVolumes.volumes);
  const scaling = scalingProjection();
  const jobSubmissions = jobSubmissionsProjection();
  const csiDetaches = csiDetachRequestsProjection(csiVolumes.volumes);
  const all: Projection[] = [
    cluster.projection,
    // Its admit() fences off writes made under a superseded leadership epoch.
    leadership.projection,
    namespaces.projection,
    schedulerConfig.projection,
    rootKeys.projection,
    variables.projection,
    acl.projection,
    aclSso.projection,
    // Before evals: a job registration it refuses must not create its evaluation.
    jobs.projection,
    evals.projection,
    // After jobs: they follow its rows, and record a scaling action only when it accepted it.
    scaling.projection,
    jobSubmissions.projection,
    // nodes before allocs: a client update is refused by the nodes projection before any change.
    nodes.projection,
    // After nodes: a registration the nodes projection refuses creates no pool.
    nodePools.projection,
    allocs.projection,
    // After nodes and allocs: it checks a registration against their rows as this record leaves them.
    services.projection,
    // After nodes: the plugins derive from the nodes' fingerprints within the node's record.
    csiPlugins.projection,
    // After csi_plugins and allocs: a claim reads the plugin's health and the claiming allocations.
    csiVolumes.projection,
    // After allocs: it counts the placements of a plan that applied.
    deployments.projection,
    // After allocs: it creates evaluations only for the preemptions that applied.
    preemptionEvalsProjection({ evals: evals.evals, allocs: allocs.allocs, jobs: jobs.jobs }).projection,
    gcProjection({
      evals: evals.evals,
      allocs: allocs.allocs,
      jobs: jobs.jobs,
      summaries: jobs.summaries,
      launches: jobs.launches,
    }).projection,
    // After csi_volumes: a request needs its volume, and a row goes with it.
    csiDetaches.projection,
  ];
  // Last: it folds in the row changes the others make (the audit trail).
  const history = historyProjection(all.flatMap((p) => p.tables.map((t) => t.name)));
  all.push(history.projection);
  return {
    all,
    tables: {
      cluster: cluster.cluster,
      leadership: leadership.leadership,
      namespaces: namespaces.namespaces,
      evals: evals.evals,
      evalDeletes: evals.evalDeletes,
      schedulerConfig: schedulerConfig.schedulerConfig,
      rootKeys: rootKeys.rootKeys,
      variables: variables.variables,
      variablesQuota: variables.quotas,
      aclTokens: acl.tokens,
      aclPolicies: acl.policies,
      aclRoles: acl.roles,
      aclOneTimeTokens: acl.oneTimeTokens,
      aclBootstrap: acl.bootstrap,
      aclAuthMethods: aclSso.authMethods,
      aclBindingRules: aclSso.bindingRules,
      nodes: nodes.nodes,
      nodeSecrets: nodes.secrets,
      nodePools: nodePools.pools,
      allocs: allocs.allocs,
      planRefusals: allocs.refusals,
      jobs: jobs.jobs,
      jobVersions: jobs.versions,
      jobSummaries: jobs.summaries,
      periodicLaunches: jobs.launches,
      jobSubmissions: jobSubmissions.submissions,
      scalingPolicies: scaling.policies,
      scalingEvents: scaling.events,
      deployments: deployments.deployments,
      serviceRegistrations: services.registrations,
      csiPlugins: csiPlugins.plugins,
      csiVolumes: csiVolumes.volumes,
      csiDetachRequests: csiDetaches.detaches,
      history: history.history,
    },
  };
}

export type Projections = ReturnType<typeof createProjections>;
