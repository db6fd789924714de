import type { Acl, AclClaim } from "../../../src/acl/policy/compile-acl.ts";

/**
 * A deterministic corpus of token policies (HCL rules) and ACL questions,
 * drawn from a seeded generator so that the same cases can be replayed here
 * and, once, against Nomad's acl package (acl-corpus-answers.ts holds its
 * answers). Names come from a tiny alphabet so that globs collide: ties in
 * the closest-glob rule, more than 20 matching globs (Go's merge passes),
 * deny against grants, workload claims against explicit paths.
 */

export interface AclQuestion {
  readonly k: string;
  readonly a: readonly string[];
  readonly claim?: AclClaim;
}

export interface AclCase {
  readonly policies: readonly string[];
  readonly queries: readonly AclQuestion[];
}

export function aclCorpus(seed: number, count: number): AclCase[] {
  let state = seed;
  const rnd = () => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state / 2147483648;
  };
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const int = (n: number) => Math.floor(rnd() * n);
  const q = (s: string) => JSON.stringify(s);

  const TARGETS = ["abba-ab", "ab-ab-ab", "aabbaabb"];
  const name = (glob: boolean) => {
    const len = 1 + int(5);
    let s = "";
    for (let i = 0; i < len; i++) s += pick(glob ? ["a", "b", "-", "*", "a", "b"] : ["a", "b", "-"]);
    return s;
  };
  const qname = () => (rnd() < 0.1 ? "*" : rnd() < 0.3 ? pick(TARGETS) : name(false));
  const NS_CAPS = [
    "deny",
    "list-jobs",
    "read-job",
    "submit-job",
    "alloc-node-exec",
    "read-logs",
    "scale-job",
    "csi-register-plugin",
  ];
  const VAR_CAPS = ["read", "list", "write", "destroy", "deny"];
  const path = () => {
    const len = 1 + int(4);
    let s = "";
    for (let i = 0; i < len; i++) s += pick(["a", "b", "/", "*", "a"]);
    return s;
  };
  const caps = (all: readonly string[]) => {
    const out: string[] = [];
    for (let i = int(4); i > 0; i--) out.push(pick(all));
    return out;
  };

  const policy = (): string => {
    const lines: string[] = [];
    for (let i = int(5); i > 0; i--) {
      lines.push(`namespace ${q(name(rnd() < 0.6))} {`);
      const pol = pick(["", "", "deny", "read", "write", "scale"]);
      if (pol) lines.push(`  policy = ${q(pol)}`);
      if (rnd() < 0.6) lines.push(`  capabilities = ${JSON.stringify(caps(NS_CAPS))}`);
      if (rnd() < 0.5) {
        lines.push("  variables {");
        for (let j = 1 + int(3); j > 0; j--) {
          lines.push(
            `    path ${q(path())} {\n      capabilities = ${JSON.stringify(caps(VAR_CAPS))}\n    }`,
          );
        }
        lines.push("  }");
      }
      lines.push("}");
    }
    for (let i = int(3); i > 0; i--) {
      lines.push(`node_pool ${q(name(rnd() < 0.5))} {`);
      const pol = pick(["", "deny", "read", "write"]);
      if (pol) lines.push(`  policy = ${q(pol)}`);
      if (rnd() < 0.5)
        lines.push(`  capabilities = ${JSON.stringify(caps(["read", "write", "delete", "deny"]))}`);
      lines.push("}");
    }
    for (let i = int(3); i > 0; i--) {
      lines.push(`host_volume ${q(name(rnd() < 0.5))} {`);
      const pol = pick(["", "deny", "read", "write"]);
      if (pol) lines.push(`  policy = ${q(pol)}`);
      if (rnd() < 0.5)
        lines.push(`  capabilities = ${JSON.stringify(caps(["mount-readonly", "mount-readwrite", "deny"]))}`);
      lines.push("}");
    }
    for (const b of ["agent", "node", "operator", "quota"]) {
      if (rnd() < 0.3) lines.push(`${b} {\n  policy = ${q(pick(["deny", "read", "write", "scale"]))}\n}`);
    }
    if (rnd() < 0.3) lines.push(`plugin {\n  policy = ${q(pick(["deny", "read", "list"]))}\n}`);
    if (lines.length === 0) lines.push(`agent {\n  policy = "read"\n}`);
    return `${lines.join("\n")}\n`;
  };

  /** Many globs matching one target name, to draw ties and long sorts. */
  const manyGlobs = (): string => {
    const t = pick(TARGETS);
    const lines: string[] = [];
    for (let i = 20 + int(50); i > 0; i--) {
      let g = "";
      for (const ch of t) {
        const r = rnd();
        if (r < 0.35) {
          if (!g.endsWith("*")) g += "*";
        } else if (r < 0.4) g += `*${ch}`;
        else g += ch;
      }
      if (!g.includes("*")) g += "*";
      lines.push(`namespace ${q(g)} {\n  capabilities = [${q(pick(NS_CAPS.slice(1)))}]\n}`);
    }
    return `${lines.join("\n")}\n`;
  };

  const KINDS = [
    "ns",
    "ns",
    "ns",
    "nsAllow",
    "np",
    "npAllow",
    "npSearch",
    "hv",
    "hvAllow",
    "var",
    "var",
    "var",
    "varSearch",
    "agentR",
    "agentW",
    "nodeR",
    "nodeW",
    "opR",
    "opW",
    "quotaR",
    "quotaW",
    "pluginR",
    "pluginL",
  ];

  const cases: AclCase[] = [];
  for (let c = 0; c < count; c++) {
    const policies: string[] = [];
    for (let i = 1 + int(3); i > 0; i--) policies.push(rnd() < 0.15 ? manyGlobs() : policy());
    const queries: AclQuestion[] = [];
    for (let i = 20 + int(20); i > 0; i--) {
      const k = pick(KINDS);
      switch (k) {
        case "ns":
          queries.push({ k, a: [qname(), pick(NS_CAPS)] });
          break;
        case "nsAllow":
        case "npAllow":
        case "hvAllow":
        case "varSearch":
          queries.push({ k, a: [qname()] });
          break;
        case "np":
          queries.push({ k, a: [qname(), pick(["read", "write", "delete", "deny"])] });
          break;
        case "hv":
          queries.push({ k, a: [qname(), pick(["mount-readonly", "mount-readwrite", "deny"])] });
          break;
        case "var": {
          const ns = qname();
          const claim =
            rnd() < 0.3 ? { Namespace: pick([ns, "a"]), Job: "a", Group: "b", Task: "ab" } : undefined;
          const p =
            claim && rnd() < 0.5
              ? pick(["nomad/jobs", "nomad/jobs/a", "nomad/jobs/a/b", "nomad/jobs/a/b/ab", "nomad/jobs/b"])
              : path();
          const op = pick(VAR_CAPS);
          queries.push(claim ? { k, a: [ns, p, op], claim } : { k, a: [ns, p, op] });
          break;
        }
        default:
          queries.push({ k, a: [] });
      }
    }
    cases.push({ policies, queries });
  }
  return cases;
}

/** The question, asked of a compiled ACL (the names are those of the Go harness). */
export function ask(acl: Acl, q: AclQuestion): boolean {
  const [a0 = "", a1 = "", a2 = ""] = q.a;
  switch (q.k) {
    case "ns":
      return acl.allowNamespaceOperation(a0, a1);
    case "nsAllow":
      return acl.allowNamespace(a0);
    case "np":
      return acl.allowNodePoolOperation(a0, a1);
    case "npAllow":
      return acl.allowNodePool(a0);
    case "npSearch":
      return acl.allowNodePoolSearch();
    case "hv":
      return acl.allowHostVolumeOperation(a0, a1);
    case "hvAllow":
      return acl.allowHostVolume(a0);
    case "var":
      return acl.allowVariableOperation(a0, a1, a2, q.claim);
    case "varSearch":
      return acl.allowVariableSearch(a0);
    case "agentR":
      return acl.allowAgentRead();
    case "agentW":
      return acl.allowAgentWrite();
    case "nodeR":
      return acl.allowNodeRead();
    case "nodeW":
      return acl.allowNodeWrite();
    case "opR":
      return acl.allowOperatorRead();
    case "opW":
      return acl.allowOperatorWrite();
    case "quotaR":
      return acl.allowQuotaRead();
    case "quotaW":
      return acl.allowQuotaWrite();
    case "pluginR":
      return acl.allowPluginRead();
    case "pluginL":
      return acl.allowPluginList();
  }
  throw new Error(`unknown question ${q.k}`);
}
