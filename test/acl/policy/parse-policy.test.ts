import { afterAll, describe, expect, it } from "vitest";
import { PolicyParseError, parsePolicy, parsePolicyJson } from "../../../src/acl/policy/parse-policy.ts";
import type { NamespacePolicy, Policy } from "../../../src/acl/policy/policy-types.ts";
import { HclParser } from "../../../src/jobs/hcl/hcl-parser.ts";

/**
 * Nomad v1.6.1's acl/policy_test.go (TestParse, TestParse_BadInput), ported:
 * the same rules texts and the same expected policies (Raw included), then
 * the error texts and the reading rules the table does not spell out.
 */

const hcl = new HclParser();
afterAll(() => hcl.close());

const parse = (rules: string) => parsePolicy(rules, hcl);

async function failure(rules: string): Promise<string> {
  try {
    await parse(rules);
  } catch (err) {
    expect(err).toBeInstanceOf(PolicyParseError);
    return (err as Error).message;
  }
  throw new Error(`parsed: ${rules}`);
}

const READ = [
  "list-jobs",
  "parse-job",
  "read-job",
  "csi-list-volume",
  "csi-read-volume",
  "read-job-scaling",
  "list-scaling-policies",
  "read-scaling-policy",
];
const WRITE = [
  ...READ,
  "scale-job",
  "submit-job",
  "dispatch-job",
  "read-logs",
  "read-fs",
  "alloc-exec",
  "alloc-lifecycle",
  "csi-mount-volume",
  "csi-write-volume",
  "submit-recommendation",
];
const SCALE = ["list-scaling-policies", "read-scaling-policy", "read-job-scaling", "scale-job"];

/** A policy as Nomad's struct: every block absent unless given. */
function policy(raw: string, p: Partial<Policy>): Policy {
  return {
    Namespaces: null,
    NodePools: null,
    HostVolumes: null,
    Agent: null,
    Node: null,
    Operator: null,
    Quota: null,
    Plugin: null,
    ...p,
    Raw: raw,
  };
}

const ns = (
  Name: string,
  Policy: string,
  Capabilities: string[] | null,
  Variables: NamespacePolicy["Variables"] = null,
): NamespacePolicy => ({ Name, Policy, Capabilities, Variables });

const FULL_EXPECTED: Partial<Policy> = {
  Namespaces: [
    ns("default", "read", READ),
    ns("other", "write", WRITE),
    ns("secret", "", ["deny", "read-logs"]),
    ns("apps", "", null, {
      Paths: [
        { PathSpec: "jobs/write-does-not-imply-read-or-delete", Capabilities: ["write"] },
        { PathSpec: "project/read-implies-list", Capabilities: ["read", "list"] },
        { PathSpec: "project/explicit", Capabilities: ["read", "list", "destroy"] },
      ],
    }),
    ns("autoscaler", "scale", SCALE),
  ],
  HostVolumes: [
    { Name: "production-tls-*", Policy: "", Capabilities: ["mount-readonly"] },
    { Name: "staging-tls-*", Policy: "write", Capabilities: ["mount-readonly", "mount-readwrite"] },
  ],
  NodePools: [
    { Name: "prod", Policy: "", Capabilities: ["read"] },
    { Name: "dev", Policy: "write", Capabilities: ["delete", "read", "write"] },
  ],
  Agent: { Policy: "read" },
  Node: { Policy: "write" },
  Operator: { Policy: "deny" },
  Quota: { Policy: "read" },
  Plugin: { Policy: "read" },
};

const FULL_HCL = `
			namespace "default" {
				policy = "read"
			}
			namespace "other" {
				policy = "write"
			}
			namespace "secret" {
				capabilities = ["deny", "read-logs"]
			}
			namespace "apps" {
				variables {
					path "jobs/write-does-not-imply-read-or-delete" {
						capabilities = ["write"]
					}
					path "project/read-implies-list" {
						capabilities = ["read"]
					}
					path "project/explicit" {
						capabilities = ["read", "list", "destroy"]
					}
				}
			}
			namespace "autoscaler" {
				policy = "scale"
			}
			host_volume "production-tls-*" {
				capabilities = ["mount-readonly"]
			}
			host_volume "staging-tls-*" {
				policy = "write"
			}
			node_pool "prod" {
				capabilities = ["read"]
			}
			node_pool "dev" {
				policy = "write"
			}
			agent {
				policy = "read"
			}
			node {
				policy = "write"
			}
			operator {
				policy = "deny"
			}
			quota {
				policy = "read"
			}
			plugin {
				policy = "read"
			}
			`;

/** Nomad's JSON form of the same, trailing commas and all (HCL v1's JSON parser takes them). */
const FULL_JSON = `
			{
				"namespace": [
					{
						"default": {
							"policy": "read"
						},
					},
					{
						"other": {
							"policy": "write"
						},
					},
					{
						"secret": {
							"capabilities": [
								"deny",
								"read-logs"
							]
						}
					},
					{
						"apps": {
							"variables": [
								{
									"path": [
										{
											"jobs/write-does-not-imply-read-or-delete": {
												"capabilities": ["write"],
											},
										},
										{
											"project/read-implies-list": {
												"capabilities": ["read"],
											},
										},
										{
											"project/explicit": {
												"capabilities": ["read", "list", "destroy"],
											},
										},
									],
								},
							],
						},
					},
					{
						"autoscaler": {
							"policy": "scale"
						},
					},
				],
				"host_volume": [
					{
						"production-tls-*": {
							"capabilities": ["mount-readonly"]
						}
					},
					{
						"staging-tls-*": {
							"policy": "write"
						}
					}
				],
				"node_pool": [
					{
						"prod": {
							"capabilities": ["read"]
						}
					},
					{
						"dev": {
							"policy": "write"
						}
					}
				],
				"agent": {
					"policy": "read"
				},
				"node": {
					"policy": "write"
				},
				"operator": {
					"policy": "deny"
				},
				"quota": {
					"policy": "read"
				},
				"plugin": {
					"policy": "read"
				}
			}`;

describe("TestParse (Nomad's table)", () => {
  const ok: [string, string, Partial<Policy>][] = [
    [
      "namespace read",
      `
			namespace "default" {
				policy = "read"
			}
			`,
      { Namespaces: [ns("default", "read", READ)] },
    ],
    ["every block, HCL", FULL_HCL, FULL_EXPECTED],
    ["every block, JSON", FULL_JSON, FULL_EXPECTED],
    [
      "sentinel-override",
      `
			namespace "default" {
				capabilities = ["sentinel-override"]
			}
			`,
      { Namespaces: [ns("default", "", ["sentinel-override"])] },
    ],
    [
      "node pools",
      `
			node_pool "pool-read-only" {
				policy = "read"
			}

			node_pool "pool-read-write" {
				policy = "write"
			}

			node_pool "pool-read-upsert" {
				policy = "read"
				capabilities = ["write"]
			}

			node_pool "pool-multiple-capabilities" {
				policy = "read"
				capabilities = ["write", "delete"]
			}

			node_pool "pool-deny-policy" {
				policy = "deny"
				capabilities = ["write"]
			}

			node_pool "pool-deny-capability" {
				capabilities = ["deny", "read"]
			}

			node_pool "pool-*" {
				policy = "read"
			}
			`,
      {
        NodePools: [
          { Name: "pool-read-only", Policy: "read", Capabilities: ["read"] },
          { Name: "pool-read-write", Policy: "write", Capabilities: ["delete", "read", "write"] },
          { Name: "pool-read-upsert", Policy: "read", Capabilities: ["write", "read"] },
          { Name: "pool-multiple-capabilities", Policy: "read", Capabilities: ["write", "delete", "read"] },
          { Name: "pool-deny-policy", Policy: "deny", Capabilities: ["write", "deny"] },
          { Name: "pool-deny-capability", Policy: "", Capabilities: ["deny", "read"] },
          { Name: "pool-*", Policy: "read", Capabilities: ["read"] },
        ],
      },
    ],
    [
      "host volume mount-readonly",
      `
			host_volume "production-tls-*" {
				capabilities = ["mount-readonly"]
			}
			`,
      { HostVolumes: [{ Name: "production-tls-*", Policy: "", Capabilities: ["mount-readonly"] }] },
    ],
    [
      "host volume mount-readwrite",
      `
			host_volume "production-tls-*" {
				capabilities = ["mount-readwrite"]
			}
			`,
      { HostVolumes: [{ Name: "production-tls-*", Policy: "", Capabilities: ["mount-readwrite"] }] },
    ],
    [
      "plugin list",
      `
			plugin {
				policy = "list"
			}
			`,
      { Plugin: { Policy: "list" } },
    ],
  ];
  for (const [name, raw, expected] of ok) {
    it(name, async () => {
      expect(await parse(raw)).toStrictEqual(policy(raw, expected));
    });
  }

  const bad: [string, string][] = [
    [`namespace "default" { policy = "foo" }`, "Invalid namespace policy"],
    [`namespace {\n  policy = "read"\n}`, "Invalid namespace name"],
    [`{ "namespace": [ { "": { "policy": "read" } } ] }`, "Invalid namespace name"],
    [
      `namespace "dev" {\n  variables "*" {\n    capabilities = ["read", "write"]\n  }\n}`,
      "Invalid variable policy: no variable paths in namespace dev",
    ],
    [
      `namespace "dev" {\n  policy = "read"\n\n  variables {\n    path {}\n    path "nomad/jobs/example" {\n      capabilities = ["read"]\n    }\n  }\n}`,
      "Invalid missing variable path in namespace",
    ],
    [
      `{
				"namespace": [
					{
						"dev": {
							"policy": "read",
							"variables": [
								{
									"paths": [
										{
											"": {
												"capabilities": ["read"]
											}
										}
									]
								]
							]
						}
					}
				]
			}`,
      "no variable paths in namespace dev",
    ],
    [`namespace "default" {\n  capabilities = ["deny", "foo"]\n}`, "Invalid namespace capability"],
    [`namespace {}`, "invalid acl policy"],
    [`agent {\n  policy = "foo"\n}`, "Invalid agent policy"],
    [`node {\n  policy = "foo"\n}`, "Invalid node policy"],
    [`operator {\n  policy = "foo"\n}`, "Invalid operator policy"],
    [`quota {\n  policy = "foo"\n}`, "Invalid quota policy"],
    [
      `{\n  "Name": "my-policy",\n  "Description": "This is a great policy",\n  "Rules": "anything"\n}`,
      "Invalid policy",
    ],
    [`namespace "has a space"{\n  policy = "read"\n}`, "Invalid namespace name"],
    [`node_pool "" {\n}`, "Invalid node pool name"],
    [`node_pool "pool%" {\n}`, "Invalid node pool name"],
    [`node_pool "my-pool" {\n  capabilities = ["read", "invalid"]\n}`, "Invalid node pool capability"],
    [`node_pool {\n  policy = "read"\n}`, "Invalid node pool name"],
    [`{ "node_pool": [ { "": { "policy": "read" } } ] }`, "Invalid node pool name"],
    [
      `host_volume "volume has a space" {\n  capabilities = ["mount-readwrite"]\n}`,
      "Invalid host volume name",
    ],
    [`host_volume {\n  policy = "read"\n}`, "Invalid host volume name"],
    [`{ "host_volume": [ { "": { "policy": "read" } } ] }`, "Invalid host volume name"],
    [`plugin {\n  policy = "reader"\n}`, "Invalid plugin policy"],
    // TestParse_BadInput: the escape HCL2 refuses is a syntax error here (HCL v1 panicked on it).
    [`namespace "\\500" {}`, "Failed to parse ACL Policy"],
  ];
  for (const [raw, want] of bad) {
    it(`refuses ${JSON.stringify(raw.slice(0, 60))}`, async () => {
      expect(await failure(raw)).toContain(want);
    });
  }
});

describe("Nomad's error texts", () => {
  const cases: [string, string][] = [
    [
      `namespace "has a space" {\n  policy = "read"\n}`,
      `Invalid namespace name: &acl.NamespacePolicy{Name:"has a space", Policy:"read", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}`,
    ],
    [
      `namespace {\n  policy = "read"\n}`,
      `Invalid namespace name: &acl.NamespacePolicy{Name:"", Policy:"read", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}`,
    ],
    [
      `namespace "x" {\n  capabilities = []\n  policy = "bad"\n}`,
      `Invalid namespace policy: &acl.NamespacePolicy{Name:"x", Policy:"bad", Capabilities:[]string{}, Variables:(*acl.VariablesPolicy)(nil)}`,
    ],
    [
      `namespace "x" {\n  capabilities = ["deny", "foo"]\n  variables {\n    path "a" {\n      capabilities = ["read"]\n    }\n  }\n}`,
      `Invalid namespace capability 'foo': &acl.NamespacePolicy{Name:"x", Policy:"", Capabilities:[]string{"deny", "foo"}, Variables:(*acl.VariablesPolicy)(0xc000010000)}`,
    ],
    [
      `namespace {}`,
      "Failed to parse ACL Policy: invalid acl policy: runtime error: index out of range [0] with length 0",
    ],
    [
      `namespace "a" {\n  variables {\n    path "x" {\n      capabilities = ["bogus"]\n    }\n  }\n}`,
      "Invalid variable capability 'bogus' in namespace a",
    ],
    [`node_pool "a" {\n  policy = "list"\n}`, "Invalid node pool policy 'list' for 'a'"],
    [`node_pool "a" {\n  capabilities = ["x"]\n}`, "Invalid node pool capability 'x' for 'a'"],
    [
      `host_volume "a b" {\n  policy = "read"\n}`,
      `Invalid host volume name: &acl.HostVolumePolicy{Name:"a b", Policy:"read", Capabilities:[]string(nil)}`,
    ],
    [
      `host_volume "a" {\n  capabilities = ["x"]\n}`,
      `Invalid host volume capability 'x': &acl.HostVolumePolicy{Name:"a", Policy:"", Capabilities:[]string{"x"}}`,
    ],
    [`agent {\n  policy = "foo"\n}`, `Invalid agent policy: &acl.AgentPolicy{Policy:"foo"}`],
    [`agent "x" {\n  policy = "read"\n}`, `Invalid agent policy: &acl.AgentPolicy{Policy:""}`],
    [`plugin {\n  policy = "write"\n}`, `Invalid plugin policy: &acl.PluginPolicy{Policy:"write"}`],
    [
      `namespace "x" {\n  policy = "re\\tad"\n}`,
      `Invalid namespace policy: &acl.NamespacePolicy{Name:"x", Policy:"re\\tad", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}`,
    ],
    ["   ", "Invalid policy:    "],
    ["x = 1", "Invalid policy: x = 1"],
    [
      `agent {\n  policy = ["read"]\n}`,
      "Failed to parse ACL Policy: At -: root.agent.Policy: unknown type for string *ast.ListType",
    ],
    [
      `namespace "a" {\n  capabilities = "read-job"\n}`,
      "Failed to parse ACL Policy: At -: unknown slice type: *ast.LiteralType",
    ],
    [
      `{"namespace": {"x": {"capabilities": "read-job"}}}`,
      "Failed to parse ACL Policy: At -: unknown slice type: *ast.LiteralType",
    ],
    [
      `{"namespace": []}`,
      "Failed to parse ACL Policy: invalid acl policy: runtime error: index out of range [0] with length 0",
    ],
    [`{"agent": [null]}`, "Failed to parse ACL Policy: unexpected token while parsing list: NULL"],
    [`{"agent": {"policy": "re\\/ad"}}`, "Failed to parse ACL Policy: 1:26: illegal char escape"],
    [`{"agent": {"policy": 01}}`, "Failed to parse ACL Policy: 1:23: numbers cannot start with 0"],
    [`{"agent": {"policy": x}}`, "Failed to parse ACL Policy: 1:22: illegal char"],
    [`{:}`, "Failed to parse ACL Policy: expected: STRING got: COLON"],
    [
      `{"agent": {"policy": "r\\ud83dx"}}`,
      `Failed to parse ACL Policy: invalid acl policy: unquote "r\\ud83dx" err: invalid syntax`,
    ],
  ];
  for (const [raw, want] of cases) {
    it(JSON.stringify(raw.slice(0, 50)), async () => {
      expect(await failure(raw)).toBe(want);
    });
  }

  it("reports an HCL syntax error with HCL's line and column", async () => {
    expect(await failure(`namespace "x" {\n  policy = \n}`)).toMatch(
      /^Failed to parse ACL Policy: input\.hcl:2,\d+-/,
    );
  });
});

describe("reading rules", () => {
  it("an empty string is the empty policy; blank text is refused", async () => {
    expect(await parse("")).toStrictEqual(policy("", {}));
    expect(parsePolicyJson("")).toStrictEqual(policy("", {}));
    expect(await failure("\n")).toBe("Invalid policy: \n");
  });

  it("keeps the written order of blocks, labels that look like numbers included", async () => {
    const raw = `namespace "x" {}\nnamespace "b" {}\nnamespace "10" {}\nnamespace "9" {}\n`;
    const p = await parse(raw);
    expect(p.Namespaces?.map((n) => n.Name)).toEqual(["x", "b", "10", "9"]);
    expect(p.Namespaces?.[0]?.Capabilities).toBeNull();
  });

  it("appends the expansion of `policy` to explicit capabilities, and a deny policy still expands", async () => {
    const p = await parse(`namespace "a" {\n  policy = "deny"\n  capabilities = ["read-job"]\n}`);
    expect(p.Namespaces?.[0]?.Capabilities).toEqual(["read-job", "deny"]);
    const w = await parse(`namespace "*" {\n  policy = "write"\n}`);
    expect(w.Namespaces?.[0]?.Capabilities).not.toContain("alloc-node-exec");
    expect(w.Namespaces?.[0]?.Capabilities).not.toContain("csi-register-plugin");
  });

  it("collapses a variables deny and adds list to read", async () => {
    const p = await parse(
      `namespace "x" {\n  variables {\n    path "a" {\n      capabilities = ["deny", "read"]\n    }\n    path "b" {\n      capabilities = ["read", "write"]\n    }\n    path "c" {\n    }\n  }\n}`,
    );
    expect(p.Namespaces?.[0]?.Variables?.Paths).toEqual([
      { PathSpec: "a", Capabilities: ["deny"] },
      { PathSpec: "b", Capabilities: ["read", "write", "list"] },
      { PathSpec: "c", Capabilities: null },
    ]);
  });

  it("accepts `scale` where Nomad's validator does, granting nothing in node pools", async () => {
    const p = await parse(`node_pool "a" {\n  policy = "scale"\n}\nagent {\n  policy = "scale"\n}`);
    expect(p.NodePools).toEqual([{ Name: "a", Policy: "scale", Capabilities: null }]);
    expect(p.Agent).toEqual({ Policy: "scale" });
  });

  it("matches block and attribute names ignoring case, as HCL v1 does", async () => {
    const p = await parse(`Namespace "a" {\n  POLICY = "read"\n}`);
    expect(p.Namespaces).toEqual([ns("a", "read", READ)]);
  });

  it("reads a number or a bool by its text", async () => {
    expect(await failure(`{"agent": {"policy": 1.50}}`)).toBe(
      `Invalid agent policy: &acl.AgentPolicy{Policy:"1.50"}`,
    );
    expect(await failure(`namespace "a" {\n  policy = true\n}`)).toContain(`Policy:"true"`);
  });

  it("takes the last of repeated single blocks and merges repeated variables blocks", async () => {
    const p = await parse(
      `agent {\n  policy = "read"\n}\nagent {\n  policy = "write"\n}\nnamespace "a" {\n  variables {\n    path "x" {\n      capabilities = ["read"]\n    }\n  }\n  variables {\n    path "y" {\n      capabilities = ["write"]\n    }\n  }\n}`,
    );
    expect(p.Agent).toEqual({ Policy: "write" });
    expect(p.Namespaces?.[0]?.Variables?.Paths.map((x) => x.PathSpec)).toEqual(["x", "y"]);
  });

  it("reads Nomad's JSON shapes alike: objects, lists of objects, lenient syntax", async () => {
    const want = [ns("x", "read", READ)];
    for (const raw of [
      `{"namespace": {"x": {"policy": "read"}}}`,
      `{"namespace": [{"x": {"policy": "read"}}]}`,
      `{"namespace": {"x": {"policy": "read"}},}`,
      `{"namespace": {"x": {"policy": "read"}}`,
      `{"namespace": {"x": {"policy": "read"}}} trailing`,
    ]) {
      expect((await parse(raw)).Namespaces, raw).toEqual(want);
      expect(parsePolicyJson(raw).Namespaces, raw).toEqual(want);
    }
    // hcl2json's own shape is not Nomad's: the list under the label hides the name.
    expect(await failure(`{"namespace": {"x": [{"policy": "read"}]}}`)).toContain(
      `Invalid namespace name: &acl.NamespacePolicy{Name:""`,
    );
  });

  it("parsePolicyJson refuses HCL text", () => {
    expect(() => parsePolicyJson(`agent {\n  policy = "read"\n}`)).toThrow(PolicyParseError);
  });

  it("gives plain data whose JSON is Nomad's RulesJSON", async () => {
    const raw = `namespace "default" {\n  policy = "read"\n}\n`;
    expect(JSON.stringify(await parse(raw))).toBe(
      '{"Namespaces":[{"Name":"default","Policy":"read","Capabilities":["list-jobs","parse-job","read-job","csi-list-volume","csi-read-volume","read-job-scaling","list-scaling-policies","read-scaling-policy"],"Variables":null}],"NodePools":null,"HostVolumes":null,"Agent":null,"Node":null,"Operator":null,"Quota":null,"Plugin":null,"Raw":"namespace \\"default\\" {\\n  policy = \\"read\\"\\n}\\n"}',
    );
  });
});
