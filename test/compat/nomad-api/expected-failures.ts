import type { ExpectedFailures } from "../expectations.ts";

const NEWER_NOMAD = "an API of a Nomad release after 1.6 (chronomad follows Nomad 1.6.1)";
const SECRET_HASHED =
  "deliberate (design.md rule 5, issue 17): the server keeps only a hash of each token's SecretID, so a management token reading another token gets SecretID \"\"; the secret is shown at creation and to the token's owner";
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
  TestACLTokens_Upload: `${NEWER_NOMAD}: PUT /v1/acl/token/upload (Nomad 1.10)`,
  TestACLTokens_Info: SECRET_HASHED,
  TestACLIdentity_CreateClientIntroductionToken: `${NEWER_NOMAD}: client introduction tokens (Nomad 1.11)`,
  TestAgentCPUProfile:
    "documented difference: /v1/agent/pprof answers 501 (V8 profiles are taken with node --cpu-prof)",
  TestAgentTrace: "documented difference: /v1/agent/pprof answers 501",
  TestAgentProfile: "documented difference: /v1/agent/pprof answers 501",
  TestCSIVolumes_CRUD: "CSI volumes (issue 21)",
  TestVariables_LockRenewRelease: `${NEWER_NOMAD}: variable locks (Nomad 1.7)`,
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
