import { HclParser, HclSyntaxError } from "../../jobs/hcl/hcl-parser.ts";
import { goHostVolume, goLevel, goNamespace } from "./go-format.ts";
import { withEmptyLabels } from "./hcl-empty-labels.ts";
import { GoPanic, Hcl1PosError, type ObjectList } from "./hcl1-ast.ts";
import { hcl2Tree } from "./hcl2-tree.ts";
import { decodePolicy, type RawNamed, type RawNamespace, type RawPolicy } from "./policy-decode.ts";
import { isJsonRules, PolicyJsonSyntaxError, parseJsonRules } from "./policy-json.ts";
import {
  emptyPolicy,
  HostVolumeCapability,
  NodePoolCapability,
  NamespaceCapability as NS,
  POLICY_DENY,
  POLICY_LIST,
  POLICY_READ,
  POLICY_SCALE,
  POLICY_WRITE,
  type Policy,
  VariablesCapability,
} from "./policy-types.ts";

/**
 * Nomad v1.6.1's acl.Parse: ACL rules (HCL or JSON) to a validated policy
 * with every `policy` shorthand expanded into capabilities, with Nomad's
 * error texts.
 *
 * Nomad reads rules with HCL v1. JSON rules here go through a port of HCL
 * v1's JSON parser and decoder, so they read exactly as in Nomad, leniency
 * included. HCL rules go through HashiCorp's HCL2 parser (hcl2json, in a
 * worker) and then the same decoder: anything a policy is usually written
 * with reads the same, but HCL2 is stricter than v1 in places (one argument
 * per line in a block, no repeated attribute), its syntax errors are its own
 * (`input.hcl:2,6-3,1: ...`), and decode errors print `At -:` where Nomad
 * would give a line and column.
 */

/** Rules that do not parse or do not validate; the message is Nomad's. */
export class PolicyParseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PolicyParseError";
  }
}

let sharedParser: HclParser | undefined;

function defaultParser(): HclParser {
  sharedParser ??= new HclParser();
  return sharedParser;
}

/**
 * Parses and validates ACL rules. HCL text is parsed in `parser`'s worker
 * (by default one shared, started on first use; it does not keep the process
 * alive). Throws PolicyParseError.
 */
export async function parsePolicy(rules: string, parser?: HclParser): Promise<Policy> {
  if (rules === "") return emptyPolicy();
  if (isJsonRules(rules)) return parsePolicyJson(rules);
  const hcl = parser ?? defaultParser();
  let text = rules;
  let json: unknown;
  try {
    json = await hcl.parse(text, "input.hcl");
  } catch (err) {
    if (!(err instanceof HclSyntaxError)) throw err;
    const retry = err.message.startsWith(MIXED_LABELS) ? withEmptyLabels(rules) : undefined;
    if (retry === undefined) throw new PolicyParseError(`Failed to parse ACL Policy: ${err.message}`);
    text = retry;
    json = await hcl.parse(text, "input.hcl").catch(() => {
      throw new PolicyParseError(`Failed to parse ACL Policy: ${err.message}`);
    });
  }
  return finish(rules, () => hcl2Tree(json, text));
}

/** HclParser's words for blocks of one type written with and without labels (see hcl-empty-labels.ts). */
const MIXED_LABELS = "unsupported block layout:";

/**
 * Rules in Nomad's JSON form (text whose first non-space character is `{`),
 * synchronously; throws PolicyParseError, also for text that is not JSON
 * rules. The empty string is the empty policy.
 */
export function parsePolicyJson(rules: string): Policy {
  if (rules === "") return emptyPolicy();
  if (!isJsonRules(rules)) {
    throw new PolicyParseError(
      "Failed to parse ACL Policy: JSON rules must start with '{' (HCL rules need parsePolicy)",
    );
  }
  return finish(rules, () => parseJsonRules(rules));
}

function finish(rules: string, tree: () => ObjectList): Policy {
  let raw: RawPolicy;
  try {
    raw = decodePolicy(tree());
  } catch (err) {
    // Nomad recovers a panic of the decoder (acl/policy.go hclDecode) and reports it so.
    if (err instanceof GoPanic)
      throw new PolicyParseError(`Failed to parse ACL Policy: invalid acl policy: ${err.message}`);
    if (err instanceof Hcl1PosError || err instanceof PolicyJsonSyntaxError) {
      throw new PolicyParseError(`Failed to parse ACL Policy: ${err.message}`);
    }
    throw err;
  }
  if (isEmpty(raw)) throw new PolicyParseError(`Invalid policy: ${rules}`);
  validateAndExpand(raw);
  return toPolicy(raw, rules);
}

const isEmpty = (p: RawPolicy) =>
  !p.Namespaces?.length &&
  !p.NodePools?.length &&
  !p.HostVolumes?.length &&
  p.Agent === null &&
  p.Node === null &&
  p.Operator === null &&
  p.Quota === null &&
  p.Plugin === null;

const VALID_NAMESPACE = /^[a-zA-Z0-9*-]{1,128}$/;
const VALID_NODE_POOL = /^[a-zA-Z0-9_*-]{1,128}$/;
const VALID_VOLUME = /^[a-zA-Z0-9*-]{1,128}$/;

const POLICY_VALUES = new Set([POLICY_DENY, POLICY_READ, POLICY_WRITE, POLICY_SCALE]);
const PLUGIN_VALUES = new Set([POLICY_DENY, POLICY_READ, POLICY_LIST]);
const NAMESPACE_CAPABILITIES = new Set<string>(Object.values(NS));
const NODE_POOL_CAPABILITIES = new Set<string>(Object.values(NodePoolCapability));
const HOST_VOLUME_CAPABILITIES = new Set<string>(Object.values(HostVolumeCapability));
const VARIABLE_CAPABILITIES = new Set<string>(Object.values(VariablesCapability));

const NAMESPACE_READ = [
  NS.ListJobs,
  NS.ParseJob,
  NS.ReadJob,
  NS.CSIListVolume,
  NS.CSIReadVolume,
  NS.ReadJobScaling,
  NS.ListScalingPolicies,
  NS.ReadScalingPolicy,
];

/** What each `policy` adds to a namespace; `write` leaves out alloc-node-exec, csi-register-plugin and sentinel-override. */
const NAMESPACE_EXPANSION: Record<string, readonly string[]> = {
  [POLICY_DENY]: [NS.Deny],
  [POLICY_READ]: NAMESPACE_READ,
  [POLICY_WRITE]: [
    ...NAMESPACE_READ,
    NS.ScaleJob,
    NS.SubmitJob,
    NS.DispatchJob,
    NS.ReadLogs,
    NS.ReadFS,
    NS.AllocExec,
    NS.AllocLifecycle,
    NS.CSIMountVolume,
    NS.CSIWriteVolume,
    NS.SubmitRecommendation,
  ],
  [POLICY_SCALE]: [NS.ListScalingPolicies, NS.ReadScalingPolicy, NS.ReadJobScaling, NS.ScaleJob],
};

/** A node pool's `scale` is valid and adds nothing. */
const NODE_POOL_EXPANSION: Record<string, readonly string[]> = {
  [POLICY_DENY]: [NodePoolCapability.Deny],
  [POLICY_READ]: [NodePoolCapability.Read],
  [POLICY_WRITE]: [NodePoolCapability.Delete, NodePoolCapability.Read, NodePoolCapability.Write],
};

/** A host volume's `scale` is valid and adds nothing. */
const HOST_VOLUME_EXPANSION: Record<string, readonly string[]> = {
  [POLICY_DENY]: [HostVolumeCapability.Deny],
  [POLICY_READ]: [HostVolumeCapability.MountReadOnly],
  [POLICY_WRITE]: [HostVolumeCapability.MountReadOnly, HostVolumeCapability.MountReadWrite],
};

/** Go's append(caps, extra...): nothing appended leaves a nil list nil. */
function appendCaps(caps: string[] | null, extra: readonly string[] | undefined): string[] | null {
  if (!extra || extra.length === 0) return caps;
  return [...(caps ?? []), ...extra];
}

/** A path's capabilities: any `deny` leaves only deny; `read` brings `list` along. */
function expandVariables(caps: string[] | null): string[] | null {
  if (caps === null) return null;
  if (caps.includes(VariablesCapability.Deny)) return [VariablesCapability.Deny];
  if (caps.includes(VariablesCapability.Read) && !caps.includes(VariablesCapability.List)) {
    return [...caps, VariablesCapability.List];
  }
  return caps;
}

/** Nomad's checks, in its order, expanding each block in place once it passed. */
function validateAndExpand(p: RawPolicy): void {
  for (const ns of p.Namespaces ?? []) validateNamespace(ns);
  for (const np of p.NodePools ?? []) {
    if (!VALID_NODE_POOL.test(np.Name)) fail(`Invalid node pool name '${np.Name}'`);
    if (np.Policy !== "" && !POLICY_VALUES.has(np.Policy)) {
      fail(`Invalid node pool policy '${np.Policy}' for '${np.Name}'`);
    }
    for (const cap of np.Capabilities ?? []) {
      if (!NODE_POOL_CAPABILITIES.has(cap)) fail(`Invalid node pool capability '${cap}' for '${np.Name}'`);
    }
    if (np.Policy !== "") np.Capabilities = appendCaps(np.Capabilities, NODE_POOL_EXPANSION[np.Policy]);
  }
  for (const hv of p.HostVolumes ?? []) validateHostVolume(hv);
  const levels = [
    ["agent", "AgentPolicy", p.Agent],
    ["node", "NodePolicy", p.Node],
    ["operator", "OperatorPolicy", p.Operator],
    ["quota", "QuotaPolicy", p.Quota],
  ] as const;
  for (const [block, type, level] of levels) {
    if (level && !POLICY_VALUES.has(level.Policy)) fail(`Invalid ${block} policy: ${goLevel(type, level)}`);
  }
  if (p.Plugin && !PLUGIN_VALUES.has(p.Plugin.Policy)) {
    fail(`Invalid plugin policy: ${goLevel("PluginPolicy", p.Plugin)}`);
  }
}

function validateNamespace(ns: RawNamespace): void {
  if (!VALID_NAMESPACE.test(ns.Name)) fail(`Invalid namespace name: ${goNamespace(ns)}`);
  if (ns.Policy !== "" && !POLICY_VALUES.has(ns.Policy)) fail(`Invalid namespace policy: ${goNamespace(ns)}`);
  for (const cap of ns.Capabilities ?? []) {
    if (!NAMESPACE_CAPABILITIES.has(cap)) fail(`Invalid namespace capability '${cap}': ${goNamespace(ns)}`);
  }
  if (ns.Policy !== "") ns.Capabilities = appendCaps(ns.Capabilities, NAMESPACE_EXPANSION[ns.Policy]);
  if (ns.Variables === null) return;
  const paths = ns.Variables.Paths ?? [];
  if (paths.length === 0) fail(`Invalid variable policy: no variable paths in namespace ${ns.Name}`);
  for (const path of paths) {
    if (path.PathSpec === "") fail(`Invalid missing variable path in namespace ${ns.Name}`);
    for (const cap of path.Capabilities ?? []) {
      if (!VARIABLE_CAPABILITIES.has(cap))
        fail(`Invalid variable capability '${cap}' in namespace ${ns.Name}`);
    }
    path.Capabilities = expandVariables(path.Capabilities);
  }
}

function validateHostVolume(hv: RawNamed): void {
  if (!VALID_VOLUME.test(hv.Name)) fail(`Invalid host volume name: ${goHostVolume(hv)}`);
  if (hv.Policy !== "" && !POLICY_VALUES.has(hv.Policy))
    fail(`Invalid host volume policy: ${goHostVolume(hv)}`);
  for (const cap of hv.Capabilities ?? []) {
    if (!HOST_VOLUME_CAPABILITIES.has(cap))
      fail(`Invalid host volume capability '${cap}': ${goHostVolume(hv)}`);
  }
  if (hv.Policy !== "") hv.Capabilities = appendCaps(hv.Capabilities, HOST_VOLUME_EXPANSION[hv.Policy]);
}

function fail(message: string): never {
  throw new PolicyParseError(message);
}

/** The plain-data policy, keys in the Go struct's order (RulesJSON's order). */
function toPolicy(p: RawPolicy, rules: string): Policy {
  const named = (xs: RawNamed[] | null) =>
    xs === null ? null : xs.map((x) => ({ Name: x.Name, Policy: x.Policy, Capabilities: x.Capabilities }));
  const level = (l: { Policy: string } | null) => l && { Policy: l.Policy };
  return {
    Namespaces:
      p.Namespaces === null
        ? null
        : p.Namespaces.map((ns) => ({
            Name: ns.Name,
            Policy: ns.Policy,
            Capabilities: ns.Capabilities,
            Variables: ns.Variables && {
              Paths: (ns.Variables.Paths ?? []).map((path) => ({
                PathSpec: path.PathSpec,
                Capabilities: path.Capabilities,
              })),
            },
          })),
    NodePools: named(p.NodePools),
    HostVolumes: named(p.HostVolumes),
    Agent: level(p.Agent),
    Node: level(p.Node),
    Operator: level(p.Operator),
    Quota: level(p.Quota),
    Plugin: level(p.Plugin),
    Raw: rules,
  };
}
