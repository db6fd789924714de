import type { ExpectedFailures } from "../expectations.ts";

const ACL = "ACL: tokens, policies, roles, auth methods, bootstrap (issue 17)";
const VARIABLES = "variables and their locks: /v1/var, /v1/vars (issue 18)";
const CLIENT_AGENT = "a real client agent joined to chronomad (issue 27)";
const DEPLOYMENTS = "deployment fail/pause/promote with canaries (issue 20)";
const GOSSIP =
  "documented difference: chronomad servers are members of a cluster by sharing its log, not by gossip, so joining a separate server (another log) is refused with a clear 400 (README, Nomad compatibility)";

/**
 * Tests of Nomad's api suite that fail against chronomad: test → the missing
 * feature (an open issue) or the documented difference. run-suite.ts fails
 * when a test not listed here fails, or when a listed one passes.
 */
export const EXPECTED_FAILURES: ExpectedFailures = {
  TestACLPolicies_ListUpsert: ACL,
  TestACLPolicies_Delete: ACL,
  TestACLPolicies_Info: ACL,
  TestACLTokens_List: ACL,
  TestACLTokens_CreateUpdate: ACL,
  TestACLTokens_Upload: ACL,
  TestACLTokens_Info: ACL,
  TestACLTokens_Self: ACL,
  TestACLTokens_Delete: ACL,
  TestACL_OneTimeToken: ACL,
  TestACLTokens_BootstrapInvalidToken: ACL,
  TestACLTokens_BootstrapValidToken: ACL,
  TestACLRoles: ACL,
  TestACLAuthMethods: ACL,
  TestACLBindingRules: ACL,
  TestACLIdentity_CreateClientIntroductionToken: ACL,
  TestAgentCPUProfile: `${ACL}; then /v1/agent/pprof answers 501 (V8 profiles are taken with node --cpu-prof)`,
  TestAgentTrace: `${ACL}; then /v1/agent/pprof answers 501`,
  TestAgentProfile: `${ACL}; then /v1/agent/pprof answers 501`,
  TestEvent_Stream: `${ACL} (the test bootstraps ACLs first)`,
  TestOperator_AutopilotState: `${ACL} (the test bootstraps ACLs first)`,
  TestCSIVolumes_CRUD: `${ACL}, and CSI volumes (issue 21)`,
  TestKeyring_CRUD: "keyring rotation, rekey and key deletion (issue 18)",
  TestVariables_SimpleCRUD: VARIABLES,
  TestVariables_CRUDWithCAS: VARIABLES,
  TestVariables_Read: VARIABLES,
  TestVariables_GetVariableItems: VARIABLES,
  TestVariable_CreateReturnsContent: VARIABLES,
  TestVariables_LockRenewRelease: VARIABLES,
  TestNodeIdentity_Get: `${CLIENT_AGENT}: /v1/client/identity, with node identities (issue 18)`,
  TestNodeIdentity_Renew: `${CLIENT_AGENT}: /v1/client/identity/renew, with node identities (issue 18)`,
  TestNode_Stats: `${CLIENT_AGENT}: /v1/client/stats`,
  TestNodeMeta_Apply: `${CLIENT_AGENT}: /v1/client/metadata and the node meta a client fingerprints`,
  TestFS_Logs: `${CLIENT_AGENT}: task logs at /v1/client/fs (and the mock driver's run_for)`,
  TestAllocations_Info: `${CLIENT_AGENT}: the allocation's NetworkStatus, which a client reports`,
  TestAgent_MonitorWithNode: `${CLIENT_AGENT}: monitoring a client's own log`,
  TestDeployments_Fail: DEPLOYMENTS,
  TestDeployments_Pause: DEPLOYMENTS,
  TestDeployments_Unpause: DEPLOYMENTS,
  TestJobs_PeriodicForce: "periodic jobs: /v1/job/:id/periodic/force (issue 20)",
  TestAgent_Join: GOSSIP,
  TestAgent_ForceLeave: GOSSIP,
  TestAgent_ForceLeavePrune: GOSSIP,
  TestRegionsList: `${GOSSIP}; federating regions waits for the same`,
};
