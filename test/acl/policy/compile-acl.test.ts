import { afterAll, describe, expect, it } from "vitest";
import { type Acl, type AclClaim, compileAcl, MANAGEMENT_ACL } from "../../../src/acl/policy/compile-acl.ts";
import { parsePolicy } from "../../../src/acl/policy/parse-policy.ts";
import { HclParser } from "../../../src/jobs/hcl/hcl-parser.ts";
import { aclCorpus, ask } from "./acl-corpus.ts";
import { CORPUS_ANSWERS, CORPUS_SEED } from "./acl-corpus-answers.ts";

/** Nomad v1.6.1's acl/acl_test.go, ported, then its recorded answers to a generated corpus. */

const hcl = new HclParser();
afterAll(() => hcl.close());

const compile = async (...rules: string[]): Promise<Acl> =>
  compileAcl(await Promise.all(rules.map((r) => parsePolicy(r, hcl))));

const readAll = `
namespace "default" {
	policy = "read"
}
node_pool "my-pool" {
	policy = "read"
}
agent {
	policy = "read"
}
node {
	policy = "read"
}
operator {
	policy = "read"
}
quota {
	policy = "read"
}
`;

const writeAll = readAll.replaceAll('"read"', '"write"');
const denyAll = readAll.replaceAll('"read"', '"deny"');

describe("TestACLManagement", () => {
  const acl = MANAGEMENT_ACL;
  it("allows everything", () => {
    expect(acl.isManagement).toBe(true);
    expect(acl.allowNamespaceOperation("default", "list-jobs")).toBe(true);
    expect(acl.allowNamespaceOperation("default", "submit-job")).toBe(true);
    expect(acl.allowNamespace("default")).toBe(true);
    expect(acl.allowNamespaceOperation("foo", "list-jobs")).toBe(true);
    expect(acl.allowNamespace("foo")).toBe(true);
    expect(acl.allowNodePoolOperation("my-pool", "write")).toBe(true);
    expect(acl.allowNodePool("my-pool")).toBe(true);
    expect(acl.allowNodePoolSearch()).toBe(true);
    expect(acl.allowHostVolumeOperation("v", "mount-readwrite")).toBe(true);
    expect(acl.allowHostVolume("v")).toBe(true);
    expect(acl.allowVariableOperation("ns", "a/b", "destroy")).toBe(true);
    expect(acl.allowVariableSearch("ns")).toBe(true);
    for (const check of [
      acl.allowAgentRead(),
      acl.allowAgentWrite(),
      acl.allowNodeRead(),
      acl.allowNodeWrite(),
      acl.allowOperatorRead(),
      acl.allowOperatorWrite(),
      acl.allowQuotaRead(),
      acl.allowQuotaWrite(),
      acl.allowPluginRead(),
      acl.allowPluginList(),
    ]) {
      expect(check).toBe(true);
    }
  });
});

describe("TestACLMerge", () => {
  it("read + write", async () => {
    const acl = await compile(readAll, writeAll);
    expect(acl.allowNamespaceOperation("default", "list-jobs")).toBe(true);
    expect(acl.allowNamespaceOperation("default", "submit-job")).toBe(true);
    expect(acl.allowNamespace("default")).toBe(true);
    expect(acl.allowNamespaceOperation("foo", "list-jobs")).toBe(false);
    expect(acl.allowNamespace("foo")).toBe(false);
    expect(acl.allowNodePoolOperation("my-pool", "read")).toBe(true);
    expect(acl.allowNodePoolOperation("my-pool", "write")).toBe(true);
    expect(acl.allowNodePool("my-pool")).toBe(true);
    expect(acl.allowNodePoolOperation("other-pool", "read")).toBe(false);
    expect(acl.allowNodePoolOperation("other-pool", "write")).toBe(false);
    expect(acl.allowNodePool("other-pool")).toBe(false);
    expect(acl.isManagement).toBe(false);
    expect([acl.allowAgentRead(), acl.allowAgentWrite(), acl.allowNodeRead(), acl.allowNodeWrite()]).toEqual([
      true,
      true,
      true,
      true,
    ]);
    expect([
      acl.allowOperatorRead(),
      acl.allowOperatorWrite(),
      acl.allowQuotaRead(),
      acl.allowQuotaWrite(),
    ]).toEqual([true, true, true, true]);
  });

  it("read + blank", async () => {
    const acl = await compile(readAll, "");
    expect(acl.allowNamespaceOperation("default", "list-jobs")).toBe(true);
    expect(acl.allowNamespaceOperation("default", "submit-job")).toBe(false);
    expect(acl.allowNamespaceOperation("foo", "list-jobs")).toBe(false);
    expect(acl.allowNodePoolOperation("my-pool", "read")).toBe(true);
    expect(acl.allowNodePoolOperation("my-pool", "write")).toBe(false);
    expect(acl.allowNodePool("my-pool")).toBe(true);
    expect(acl.allowNodePool("other-pool")).toBe(false);
    expect([acl.allowAgentRead(), acl.allowAgentWrite(), acl.allowNodeRead(), acl.allowNodeWrite()]).toEqual([
      true,
      false,
      true,
      false,
    ]);
    expect([
      acl.allowOperatorRead(),
      acl.allowOperatorWrite(),
      acl.allowQuotaRead(),
      acl.allowQuotaWrite(),
    ]).toEqual([true, false, true, false]);
  });

  it("read + deny", async () => {
    const acl = await compile(readAll, denyAll);
    expect(acl.allowNamespaceOperation("default", "list-jobs")).toBe(false);
    expect(acl.allowNamespaceOperation("default", "submit-job")).toBe(false);
    expect(acl.allowNamespaceOperation("foo", "list-jobs")).toBe(false);
    expect(acl.allowNodePoolOperation("my-pool", "read")).toBe(false);
    expect(acl.allowNodePool("my-pool")).toBe(false);
    expect(acl.allowNodePool("other-pool")).toBe(false);
    for (const check of [
      acl.allowAgentRead(),
      acl.allowAgentWrite(),
      acl.allowNodeRead(),
      acl.allowNodeWrite(),
      acl.allowOperatorRead(),
      acl.allowOperatorWrite(),
      acl.allowQuotaRead(),
      acl.allowQuotaWrite(),
    ]) {
      expect(check).toBe(false);
    }
  });
});

describe("TestAllowNamespace", () => {
  const cases: [string, string, boolean, string][] = [
    ["foo namespace - no capabilities", `namespace "foo" {}`, false, "foo"],
    ["foo namespace - deny policy", `namespace "foo" { policy = "deny" }`, false, "foo"],
    ["foo namespace - deny capability", `namespace "foo" { capabilities = ["deny"] }`, false, "foo"],
    ["foo namespace - with capability", `namespace "foo" { capabilities = ["list-jobs"] }`, true, "foo"],
    ["foo namespace - with policy", `namespace "foo" { policy = "read" }`, true, "foo"],
    ["wildcard namespace - no capabilities", `namespace "foo" {}`, false, "*"],
    ["wildcard namespace - deny policy", `namespace "foo" { policy = "deny" }`, false, "*"],
    ["wildcard namespace - deny capability", `namespace "foo" { capabilities = ["deny"] }`, false, "*"],
    ["wildcard namespace - with capability", `namespace "foo" { capabilities = ["list-jobs"] }`, true, "*"],
    ["wildcard namespace - with policy", `namespace "foo" { policy = "read" }`, true, "*"],
    ["wildcard namespace - no namespace rule", `agent { policy = "read" }`, false, "*"],
  ];
  for (const [name, rules, allow, namespace] of cases) {
    it(name, async () => {
      expect((await compile(rules)).allowNamespace(namespace)).toBe(allow);
    });
  }
});

describe("TestWildcardNamespaceMatching", () => {
  const cases: [string, string, boolean, string][] = [
    ["wildcard matches", `namespace "prod-api-*" { policy = "write" }`, true, "prod-api-services"],
    [
      "non globbed namespaces are not wildcards",
      `namespace "prod-api" { policy = "write" }`,
      false,
      "prod-api-services",
    ],
    [
      "concrete matches take precedence",
      `namespace "prod-api-services" { policy = "deny" }\nnamespace "prod-api-*" { policy = "write" }`,
      false,
      "prod-api-services",
    ],
    [
      "glob match",
      `namespace "prod-api-*" { policy = "deny" }\nnamespace "prod-api-services" { policy = "write" }`,
      true,
      "prod-api-services",
    ],
    [
      "closest character match wins - suffix",
      `namespace "*-api-services" { policy = "deny" }\nnamespace "prod-api-*" { policy = "write" }`,
      false,
      "prod-api-services",
    ],
    [
      "closest character match wins - prefix",
      `namespace "prod-api-*" { policy = "write" }\nnamespace "*-api-services" { policy = "deny" }`,
      false,
      "prod-api-services",
    ],
    [
      "wildcard namespace with glob match",
      `namespace "prod-api-*" { policy = "deny" }\nnamespace "prod-api-services" { policy = "write" }`,
      true,
      "*",
    ],
  ];
  for (const [name, rules, allow, namespace] of cases) {
    it(name, async () => {
      expect((await compile(rules)).allowNamespace(namespace)).toBe(allow);
    });
  }
});

describe("TestNodePool", () => {
  const cases: {
    name: string;
    policy: string;
    pool: string;
    allowOps: string[];
    denyOps: string[];
    allow: boolean;
  }[] = [
    {
      name: "policy read",
      policy: `node_pool "my-pool" {\n  policy = "read"\n}`,
      pool: "my-pool",
      allowOps: ["read"],
      denyOps: ["delete", "write"],
      allow: true,
    },
    {
      name: "policy write",
      policy: `node_pool "my-pool" {\n  policy = "write"\n}`,
      pool: "my-pool",
      allowOps: ["delete", "read", "write"],
      denyOps: [],
      allow: true,
    },
    {
      name: "capability write",
      policy: `node_pool "my-pool" {\n  capabilities = ["write"]\n}`,
      pool: "my-pool",
      allowOps: ["write"],
      denyOps: ["delete", "read"],
      allow: true,
    },
    {
      name: "multiple capabilities",
      policy: `node_pool "my-pool" {\n  capabilities = ["read", "delete"]\n}`,
      pool: "my-pool",
      allowOps: ["read", "delete"],
      denyOps: ["write"],
      allow: true,
    },
    {
      name: "policy deny takes precedence",
      policy: `node_pool "my-pool" {\n  policy = "deny"\n  capabilities = ["write", "delete"]\n}`,
      pool: "my-pool",
      allowOps: [],
      denyOps: ["delete", "read", "write"],
      allow: false,
    },
    {
      name: "capability deny takes precedence",
      policy: `node_pool "my-pool" {\n  capabilities = ["write", "delete", "deny"]\n}`,
      pool: "my-pool",
      allowOps: [],
      denyOps: ["delete", "read", "write"],
      allow: false,
    },
    {
      name: "wildcard matches all",
      policy: `node_pool "*" {\n  policy = "read"\n}`,
      pool: "my-pool",
      allowOps: ["read"],
      denyOps: ["delete", "write"],
      allow: true,
    },
    {
      name: "wildcard matches subset",
      policy: `node_pool "my-pool-*" {\n  policy = "read"\n}`,
      pool: "my-pool-1",
      allowOps: ["read"],
      denyOps: ["delete", "write"],
      allow: true,
    },
    {
      name: "wildcard doesn't match subset",
      policy: `node_pool "my-pool-*" {\n  policy = "read"\n}`,
      pool: "your-pool-1",
      allowOps: [],
      denyOps: ["delete", "read", "write"],
      allow: false,
    },
    {
      name: "wildcard matches closest",
      policy: `node_pool "my-pool-dev-*" {\n  policy = "read"\n}\n\nnode_pool "my-pool-*" {\n  policy = "write"\n}\n\nnode_pool "*" {\n  policy = "deny"\n}`,
      pool: "my-pool-dev-1",
      allowOps: ["read"],
      denyOps: ["delete", "write"],
      allow: true,
    },
  ];
  for (const tc of cases) {
    it(tc.name, async () => {
      const acl = await compile(tc.policy);
      for (const op of tc.allowOps) expect(acl.allowNodePoolOperation(tc.pool, op), op).toBe(true);
      for (const op of tc.denyOps) expect(acl.allowNodePoolOperation(tc.pool, op), op).toBe(false);
      expect(acl.allowNodePool(tc.pool)).toBe(tc.allow);
    });
  }

  it("search: any pool rule without deny, an empty one included", async () => {
    expect((await compile(`node_pool "a" {\n  policy = "deny"\n}`)).allowNodePoolSearch()).toBe(false);
    expect((await compile(`node_pool "a" {\n}`)).allowNodePoolSearch()).toBe(true);
    expect((await compile(`agent {\n  policy = "read"\n}`)).allowNodePoolSearch()).toBe(false);
    expect((await compile(`node_pool "a-*" {\n  policy = "read"\n}`)).allowNodePoolSearch()).toBe(true);
  });
});

describe("TestWildcardHostVolumeMatching", () => {
  const cases: [string, boolean][] = [
    [`host_volume "prod-api-*" { policy = "write" }`, true],
    [`host_volume "prod-api" { policy = "write" }`, false],
    [
      `host_volume "prod-api-services" { policy = "deny" }\nhost_volume "prod-api-*" { policy = "write" }`,
      false,
    ],
    [
      `host_volume "prod-api-*" { policy = "deny" }\nhost_volume "prod-api-services" { policy = "write" }`,
      true,
    ],
    [
      `host_volume "*-api-services" { policy = "deny" }\nhost_volume "prod-api-*" { policy = "write" }`,
      false,
    ],
    [
      `host_volume "prod-api-*" { policy = "write" }\nhost_volume "*-api-services" { policy = "deny" }`,
      false,
    ],
  ];
  for (const [rules, allow] of cases) {
    it(rules.replaceAll("\n", " "), async () => {
      expect((await compile(rules)).allowHostVolume("prod-api-services")).toBe(allow);
    });
  }

  it("operations follow the expansion", async () => {
    const acl = await compile(
      `host_volume "ro" {\n  policy = "read"\n}\nhost_volume "rw" {\n  policy = "write"\n}`,
    );
    expect(acl.allowHostVolumeOperation("ro", "mount-readonly")).toBe(true);
    expect(acl.allowHostVolumeOperation("ro", "mount-readwrite")).toBe(false);
    expect(acl.allowHostVolumeOperation("rw", "mount-readwrite")).toBe(true);
    expect(acl.allowHostVolumeOperation("other", "mount-readonly")).toBe(false);
  });
});

describe("TestVariablesMatching", () => {
  const claim: AclClaim = { Namespace: "ns", Job: "example", Group: "foo", Task: "bar" };
  const cases: {
    name: string;
    policy: string;
    ns: string;
    path: string;
    op: string;
    claim?: AclClaim;
    allow: boolean;
  }[] = [
    {
      name: "concrete namespace with concrete path matches",
      policy: `namespace "ns" {\n variables {\n path "foo/bar" { capabilities = ["read"] }\n}\n}`,
      ns: "ns",
      path: "foo/bar",
      op: "read",
      allow: true,
    },
    {
      name: "concrete namespace with concrete path matches for expanded caps",
      policy: `namespace "ns" {\n variables {\n path "foo/bar" { capabilities = ["read"] }\n}\n}`,
      ns: "ns",
      path: "foo/bar",
      op: "list",
      allow: true,
    },
    {
      name: "concrete namespace with wildcard path matches",
      policy: `namespace "ns" {\n variables {\n path "foo/*" { capabilities = ["read"] }\n}\n}`,
      ns: "ns",
      path: "foo/bar",
      op: "read",
      allow: true,
    },
    {
      name: "concrete namespace with non-prefix wildcard path matches",
      policy: `namespace "ns" {\n variables {\n path "*/bar" { capabilities = ["read"] }\n}\n}`,
      ns: "ns",
      path: "foo/bar",
      op: "read",
      allow: true,
    },
    {
      name: "concrete namespace with overlapping wildcard path prefix over suffix matches",
      policy: `namespace "ns" {\n variables {\n path "*/bar" { capabilities = ["list"] }\n path "foo/*" { capabilities = ["write"] }\n}\n}`,
      ns: "ns",
      path: "foo/bar",
      op: "write",
      allow: true,
    },
    {
      name: "concrete namespace with overlapping wildcard path prefix over suffix denied",
      policy: `namespace "ns" {\n variables {\n path "*/bar" { capabilities = ["list"] }\n path "foo/*" { capabilities = ["write"] }\n}\n}`,
      ns: "ns",
      path: "foo/bar",
      op: "list",
      allow: false,
    },
    {
      name: "concrete namespace with wildcard path matches most specific only",
      policy: `namespace "ns" {\n variables {\n path "*" { capabilities = ["read"] }\n path "foo/*" { capabilities = ["read"] }\n path "foo/bar" { capabilities = ["list"] }\n}\n}`,
      ns: "ns",
      path: "foo/bar",
      op: "read",
      allow: false,
    },
    {
      name: "concrete namespace with invalid concrete path fails",
      policy: `namespace "ns" {\n variables {\n path "bar" { capabilities = ["read"] }\n}\n}`,
      ns: "ns",
      path: "foo/bar",
      op: "read",
      allow: false,
    },
    {
      name: "concrete namespace with invalid wildcard path fails",
      policy: `namespace "ns" {\n variables {\n path "*/foo" { capabilities = ["read"] }\n}\n}`,
      ns: "ns",
      path: "foo/bar",
      op: "read",
      allow: false,
    },
    {
      name: "wildcard namespace with concrete path matches",
      policy: `namespace "*" {\n variables {\n path "foo/bar" { capabilities = ["read"] }\n}\n}`,
      ns: "ns",
      path: "foo/bar",
      op: "read",
      allow: true,
    },
    {
      name: "wildcard namespace with invalid concrete path fails",
      policy: `namespace "*" {\n variables {\n path "bar" { capabilities = ["read"] }\n}\n}`,
      ns: "ns",
      path: "foo/bar",
      op: "read",
      allow: false,
    },
    {
      name: "wildcard in user provided path fails",
      policy: `namespace "ns" {\n variables {\n path "foo/bar" { capabilities = ["read"] }\n}\n}`,
      ns: "ns",
      path: "*",
      op: "read",
      allow: false,
    },
    {
      name: "wildcard attempt to bypass delimiter null byte fails",
      policy: `namespace "ns" {\n variables {\n path "foo/bar" { capabilities = ["read"] }\n}\n}`,
      ns: "ns*",
      path: "bar",
      op: "read",
      allow: false,
    },
    {
      name: "wildcard with more specific denied path",
      policy: `namespace "ns" {\n variables {\n path "*" { capabilities = ["list"] }\n path "system/*" { capabilities = ["deny"] }\n}\n}`,
      ns: "ns",
      path: "system/not-allowed",
      op: "list",
      allow: false,
    },
    {
      name: "multiple namespace with overlapping paths",
      policy: `namespace "ns" {\n variables {\n path "*" { capabilities = ["list"] }\n path "system/*" { capabilities = ["deny"] }\n}\n}\nnamespace "prod" {\n variables {\n path "*" { capabilities = ["list"] }\n}\n}`,
      ns: "prod",
      path: "system/is-allowed",
      op: "list",
      allow: true,
    },
    {
      name: "claim with more specific policy",
      policy: `namespace "ns" {\n variables {\n path "nomad/jobs/example" { capabilities = ["deny"] }\n}\n}`,
      ns: "ns",
      path: "nomad/jobs/example",
      op: "read",
      claim,
      allow: false,
    },
    {
      name: "claim with less specific policy",
      policy: `namespace "ns" {\n variables {\n path "nomad/jobs" { capabilities = ["deny"] }\n}\n}`,
      ns: "ns",
      path: "nomad/jobs/example",
      op: "read",
      claim,
      allow: true,
    },
    {
      name: "claim with less specific wildcard policy",
      policy: `namespace "ns" {\n variables {\n path "nomad/jobs/*" { capabilities = ["deny"] }\n}\n}`,
      ns: "ns",
      path: "nomad/jobs/example",
      op: "read",
      claim,
      allow: true,
    },
  ];
  for (const tc of cases) {
    it(tc.name, async () => {
      const acl = await compile(tc.policy);
      expect(acl.allowVariableOperation(tc.ns, tc.path, tc.op, tc.claim)).toBe(tc.allow);
    });
  }

  it("search over namespace", async () => {
    const acl = await compile(
      `namespace "ns" {\n variables {\n path "foo/bar" { capabilities = ["read"] }\n}\n}`,
    );
    expect(acl.allowVariableSearch("ns")).toBe(true);
    expect(acl.allowVariableSearch("no-access")).toBe(false);
    expect(acl.allowVariableSearch("*")).toBe(true);
  });

  it("search is a loose prefix check, and a namespace glob does not count for a named namespace", async () => {
    const acl = await compile(`namespace "*" {\n variables {\n path "a" { capabilities = ["read"] }\n}\n}`);
    expect(acl.allowVariableSearch("*")).toBe(true);
    expect(acl.allowVariableSearch("ns")).toBe(false);
    expect(
      (
        await compile(`namespace "nsx" {\n variables {\n path "a" { capabilities = ["read"] }\n}\n}`)
      ).allowVariableSearch("ns"),
    ).toBe(true);
    expect((await compile(`agent {\n  policy = "read"\n}`)).allowVariableSearch("*")).toBe(false);
  });

  it("workload paths: its job, group and task only, read and list only, in its namespace only", async () => {
    const acl = await compile(`agent {\n  policy = "read"\n}`);
    for (const path of [
      "nomad/jobs",
      "nomad/jobs/example",
      "nomad/jobs/example/foo",
      "nomad/jobs/example/foo/bar",
    ]) {
      expect(acl.allowVariableOperation("ns", path, "read", claim), path).toBe(true);
      expect(acl.allowVariableOperation("ns", path, "list", claim), path).toBe(true);
      expect(acl.allowVariableOperation("ns", path, "write", claim), path).toBe(false);
    }
    expect(acl.allowVariableOperation("ns", "nomad/jobs/other", "read", claim)).toBe(false);
    expect(acl.allowVariableOperation("ns", "nomad/jobs/example/foo/bar/x", "read", claim)).toBe(false);
    expect(acl.allowVariableOperation("other", "nomad/jobs/example", "read", claim)).toBe(false);
    expect(acl.allowVariableOperation("ns", "nomad/jobs/example", "read")).toBe(false);
  });
});

describe("Nomad's merge quirks", () => {
  it("a variables deny in one policy does not beat a read in another (plain union)", async () => {
    const acl = await compile(
      `namespace "ns" {\n  variables {\n    path "secret" {\n      capabilities = ["deny"]\n    }\n  }\n}`,
      `namespace "ns" {\n  variables {\n    path "secret" {\n      capabilities = ["read"]\n    }\n  }\n}`,
    );
    expect(acl.allowVariableOperation("ns", "secret", "read")).toBe(true);
  });

  it("a namespace deny wins whichever policy holds it", async () => {
    const deny = `namespace "ns" {\n  policy = "deny"\n}`;
    const write = `namespace "ns" {\n  policy = "write"\n}`;
    for (const acl of [await compile(deny, write), await compile(write, deny)]) {
      expect(acl.allowNamespaceOperation("ns", "read-job")).toBe(false);
      expect(acl.allowNamespace("ns")).toBe(false);
    }
  });

  it("a namespace's variables still apply when the namespace is denied", async () => {
    const acl = await compile(
      `namespace "ns" {\n  policy = "deny"\n  variables {\n    path "a" {\n      capabilities = ["read"]\n    }\n  }\n}`,
    );
    expect(acl.allowNamespaceOperation("ns", "read-job")).toBe(false);
    expect(acl.allowVariableOperation("ns", "a", "read")).toBe(true);
  });

  it("an empty exact block shadows a glob", async () => {
    const acl = await compile(`namespace "*" {\n  policy = "write"\n}\nnamespace "dev" {\n}`);
    expect(acl.allowNamespaceOperation("prod", "submit-job")).toBe(true);
    expect(acl.allowNamespaceOperation("dev", "submit-job")).toBe(false);
  });

  it("`*` asks whether any namespace set grants the operation", async () => {
    const acl = await compile(
      `namespace "a" {\n  capabilities = ["submit-job"]\n}\nnamespace "b-*" {\n  policy = "read"\n}`,
    );
    expect(acl.allowNamespaceOperation("*", "submit-job")).toBe(true);
    expect(acl.allowNamespaceOperation("*", "read-job")).toBe(true);
    expect(acl.allowNamespaceOperation("*", "alloc-exec")).toBe(false);
    expect(acl.allowNsOpAny("*", "alloc-exec", "read-job")).toBe(true);
    expect(acl.allowNsOpAny("a", "alloc-exec", "read-job")).toBe(false);
    expect(acl.allowNsOpAny("a")).toBe(false);
  });

  it("agent and the like take the most privileged level, deny first; scale grants nothing", async () => {
    expect((await compile(`agent {\n  policy = "scale"\n}`)).allowAgentRead()).toBe(false);
    expect(
      (await compile(`agent {\n  policy = "scale"\n}`, `agent {\n  policy = "read"\n}`)).allowAgentRead(),
    ).toBe(true);
    expect(
      (await compile(`node {\n  policy = "write"\n}`, `node {\n  policy = "deny"\n}`)).allowNodeRead(),
    ).toBe(false);
  });

  it("plugin: read reads and lists, list only lists, deny wins", async () => {
    const read = await compile(`plugin {\n  policy = "read"\n}`);
    expect([read.allowPluginRead(), read.allowPluginList()]).toEqual([true, true]);
    const list = await compile(`plugin {\n  policy = "list"\n}`);
    expect([list.allowPluginRead(), list.allowPluginList()]).toEqual([false, true]);
    const both = await compile(`plugin {\n  policy = "list"\n}`, `plugin {\n  policy = "read"\n}`);
    expect(both.allowPluginRead()).toBe(true);
    const denied = await compile(`plugin {\n  policy = "read"\n}`, `plugin {\n  policy = "deny"\n}`);
    expect([denied.allowPluginRead(), denied.allowPluginList()]).toEqual([false, false]);
  });

  it("no policies allow nothing (never 'ACLs off')", () => {
    const acl = compileAcl([]);
    expect(acl.isManagement).toBe(false);
    expect(acl.allowNamespaceOperation("default", "read-job")).toBe(false);
    expect(acl.allowNamespaceOperation("*", "read-job")).toBe(false);
    expect(acl.allowNodeRead()).toBe(false);
    expect(acl.allowPluginList()).toBe(false);
    expect(acl.allowVariableSearch("*")).toBe(false);
  });

  it("ties between globs at equal distance go to the greatest pattern in byte order", async () => {
    // Both globs lie at distance 4 from "prod-api-x" (10 bytes - 7 + 1 star); Nomad's sort puts the later one first.
    const acl = await compile(
      `namespace "*-api-x" {\n  capabilities = ["list-jobs"]\n}\nnamespace "prod-a*" {\n  capabilities = ["submit-job"]\n}`,
    );
    expect(acl.allowNamespaceOperation("prod-api-x", "submit-job")).toBe(true);
    expect(acl.allowNamespaceOperation("prod-api-x", "list-jobs")).toBe(false);
  });
});

describe("against Nomad's answers to a generated corpus", () => {
  const cases = aclCorpus(CORPUS_SEED, CORPUS_ANSWERS.length);
  it("has the recorded answers", () => {
    expect(cases.map((c) => c.queries.length)).toEqual(CORPUS_ANSWERS.map((a) => a.length));
  });
  const chunk = 50;
  for (let start = 0; start < cases.length; start += chunk) {
    it(`cases ${start}-${Math.min(start + chunk, cases.length) - 1}`, async () => {
      for (let i = start; i < Math.min(start + chunk, cases.length); i++) {
        const c = cases[i]!;
        const acl = await compile(...c.policies);
        const got = c.queries.map((q) => (ask(acl, q) ? "1" : "0")).join("");
        expect(got, `case ${i}:\n${c.policies.join("\n---\n")}`).toBe(CORPUS_ANSWERS[i]);
      }
    });
  }
});
