// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the recorded rules hold HCL templates literally
/**
 * What Nomad v1.6.1's acl.Parse gives for these rules texts: the RulesJSON
 * (without Raw, which is the text itself) or the error text, recorded with a
 * small Go program on Nomad's acl package, built beside the project from a
 * copy of Nomad's source at that tag and not kept here. The texts are
 * Nomad's own test inputs, hand-written edge cases, and random mutations of
 * both. Left out: HCL texts where HCL v1 and HCL2 disagree on syntax (see
 * parse-policy.ts), which the tests name separately.
 */
export interface NomadParseResult {
  readonly ok?: Record<string, unknown>;
  readonly err?: string;
}

export const NOMAD_PARSE_FIXTURES: readonly { readonly rules: string; readonly nomad: NomadParseResult }[] = [
  {
    rules: '\n\t\t\tnamespace "default" {\n\t\t\t\tpolicy = "read"\n\t\t\t}\n\t\t\t',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "default",
            Policy: "read",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
            ],
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules:
      '\n\t\t\tnamespace "default" {\n\t\t\t\tpolicy = "read"\n\t\t\t}\n\t\t\tnamespace "other" {\n\t\t\t\tpolicy = "write"\n\t\t\t}\n\t\t\tnamespace "secret" {\n\t\t\t\tcapabilities = ["deny", "read-logs"]\n\t\t\t}\n\t\t\tnamespace "apps" {\n\t\t\t\tvariables {\n\t\t\t\t\tpath "jobs/write-does-not-imply-read-or-delete" {\n\t\t\t\t\t\tcapabilities = ["write"]\n\t\t\t\t\t}\n\t\t\t\t\tpath "project/read-implies-list" {\n\t\t\t\t\t\tcapabilities = ["read"]\n\t\t\t\t\t}\n\t\t\t\t\tpath "project/explicit" {\n\t\t\t\t\t\tcapabilities = ["read", "list", "destroy"]\n\t\t\t\t\t}\n\t\t\t\t}\n\t\t\t}\n\t\t\tnamespace "autoscaler" {\n\t\t\t\tpolicy = "scale"\n\t\t\t}\n\t\t\thost_volume "production-tls-*" {\n\t\t\t\tcapabilities = ["mount-readonly"]\n\t\t\t}\n\t\t\thost_volume "staging-tls-*" {\n\t\t\t\tpolicy = "write"\n\t\t\t}\n\t\t\tnode_pool "prod" {\n\t\t\t\tcapabilities = ["read"]\n\t\t\t}\n\t\t\tnode_pool "dev" {\n\t\t\t\tpolicy = "write"\n\t\t\t}\n\t\t\tagent {\n\t\t\t\tpolicy = "read"\n\t\t\t}\n\t\t\tnode {\n\t\t\t\tpolicy = "write"\n\t\t\t}\n\t\t\toperator {\n\t\t\t\tpolicy = "deny"\n\t\t\t}\n\t\t\tquota {\n\t\t\t\tpolicy = "read"\n\t\t\t}\n\t\t\tplugin {\n\t\t\t\tpolicy = "read"\n\t\t\t}\n\t\t\t',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "default",
            Policy: "read",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
            ],
            Variables: null,
          },
          {
            Name: "other",
            Policy: "write",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
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
            ],
            Variables: null,
          },
          {
            Name: "secret",
            Policy: "",
            Capabilities: ["deny", "read-logs"],
            Variables: null,
          },
          {
            Name: "apps",
            Policy: "",
            Capabilities: null,
            Variables: {
              Paths: [
                {
                  PathSpec: "jobs/write-does-not-imply-read-or-delete",
                  Capabilities: ["write"],
                },
                {
                  PathSpec: "project/read-implies-list",
                  Capabilities: ["read", "list"],
                },
                {
                  PathSpec: "project/explicit",
                  Capabilities: ["read", "list", "destroy"],
                },
              ],
            },
          },
          {
            Name: "autoscaler",
            Policy: "scale",
            Capabilities: ["list-scaling-policies", "read-scaling-policy", "read-job-scaling", "scale-job"],
            Variables: null,
          },
        ],
        NodePools: [
          {
            Name: "prod",
            Policy: "",
            Capabilities: ["read"],
          },
          {
            Name: "dev",
            Policy: "write",
            Capabilities: ["delete", "read", "write"],
          },
        ],
        HostVolumes: [
          {
            Name: "production-tls-*",
            Policy: "",
            Capabilities: ["mount-readonly"],
          },
          {
            Name: "staging-tls-*",
            Policy: "write",
            Capabilities: ["mount-readonly", "mount-readwrite"],
          },
        ],
        Agent: {
          Policy: "read",
        },
        Node: {
          Policy: "write",
        },
        Operator: {
          Policy: "deny",
        },
        Quota: {
          Policy: "read",
        },
        Plugin: {
          Policy: "read",
        },
      },
    },
  },
  {
    rules:
      '\n\t\t\t{\n\t\t\t\t"namespace": [\n\t\t\t\t\t{\n\t\t\t\t\t\t"default": {\n\t\t\t\t\t\t\t"policy": "read"\n\t\t\t\t\t\t},\n\t\t\t\t\t},\n\t\t\t\t\t{\n\t\t\t\t\t\t"other": {\n\t\t\t\t\t\t\t"policy": "write"\n\t\t\t\t\t\t},\n\t\t\t\t\t},\n\t\t\t\t\t{\n\t\t\t\t\t\t"secret": {\n\t\t\t\t\t\t\t"capabilities": [\n\t\t\t\t\t\t\t\t"deny",\n\t\t\t\t\t\t\t\t"read-logs"\n\t\t\t\t\t\t\t]\n\t\t\t\t\t\t}\n\t\t\t\t\t},\n\t\t\t\t\t{\n\t\t\t\t\t\t"apps": {\n\t\t\t\t\t\t\t"variables": [\n\t\t\t\t\t\t\t\t{\n\t\t\t\t\t\t\t\t\t"path": [\n\t\t\t\t\t\t\t\t\t\t{\n\t\t\t\t\t\t\t\t\t\t\t"jobs/write-does-not-imply-read-or-delete": {\n\t\t\t\t\t\t\t\t\t\t\t\t"capabilities": ["write"],\n\t\t\t\t\t\t\t\t\t\t\t},\n\t\t\t\t\t\t\t\t\t\t},\n\t\t\t\t\t\t\t\t\t\t{\n\t\t\t\t\t\t\t\t\t\t\t"project/read-implies-list": {\n\t\t\t\t\t\t\t\t\t\t\t\t"capabilities": ["read"],\n\t\t\t\t\t\t\t\t\t\t\t},\n\t\t\t\t\t\t\t\t\t\t},\n\t\t\t\t\t\t\t\t\t\t{\n\t\t\t\t\t\t\t\t\t\t\t"project/explicit": {\n\t\t\t\t\t\t\t\t\t\t\t\t"capabilities": ["read", "list", "destroy"],\n\t\t\t\t\t\t\t\t\t\t\t},\n\t\t\t\t\t\t\t\t\t\t},\n\t\t\t\t\t\t\t\t\t],\n\t\t\t\t\t\t\t\t},\n\t\t\t\t\t\t\t],\n\t\t\t\t\t\t},\n\t\t\t\t\t},\n\t\t\t\t\t{\n\t\t\t\t\t\t"autoscaler": {\n\t\t\t\t\t\t\t"policy": "scale"\n\t\t\t\t\t\t},\n\t\t\t\t\t},\n\t\t\t\t],\n\t\t\t\t"host_volume": [\n\t\t\t\t\t{\n\t\t\t\t\t\t"production-tls-*": {\n\t\t\t\t\t\t\t"capabilities": ["mount-readonly"]\n\t\t\t\t\t\t}\n\t\t\t\t\t},\n\t\t\t\t\t{\n\t\t\t\t\t\t"staging-tls-*": {\n\t\t\t\t\t\t\t"policy": "write"\n\t\t\t\t\t\t}\n\t\t\t\t\t}\n\t\t\t\t],\n\t\t\t\t"node_pool": [\n\t\t\t\t\t{\n\t\t\t\t\t\t"prod": {\n\t\t\t\t\t\t\t"capabilities": ["read"]\n\t\t\t\t\t\t}\n\t\t\t\t\t},\n\t\t\t\t\t{\n\t\t\t\t\t\t"dev": {\n\t\t\t\t\t\t\t"policy": "write"\n\t\t\t\t\t\t}\n\t\t\t\t\t}\n\t\t\t\t],\n\t\t\t\t"agent": {\n\t\t\t\t\t"policy": "read"\n\t\t\t\t},\n\t\t\t\t"node": {\n\t\t\t\t\t"policy": "write"\n\t\t\t\t},\n\t\t\t\t"operator": {\n\t\t\t\t\t"policy": "deny"\n\t\t\t\t},\n\t\t\t\t"quota": {\n\t\t\t\t\t"policy": "read"\n\t\t\t\t},\n\t\t\t\t"plugin": {\n\t\t\t\t\t"policy": "read"\n\t\t\t\t}\n\t\t\t}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "default",
            Policy: "read",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
            ],
            Variables: null,
          },
          {
            Name: "other",
            Policy: "write",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
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
            ],
            Variables: null,
          },
          {
            Name: "secret",
            Policy: "",
            Capabilities: ["deny", "read-logs"],
            Variables: null,
          },
          {
            Name: "apps",
            Policy: "",
            Capabilities: null,
            Variables: {
              Paths: [
                {
                  PathSpec: "jobs/write-does-not-imply-read-or-delete",
                  Capabilities: ["write"],
                },
                {
                  PathSpec: "project/read-implies-list",
                  Capabilities: ["read", "list"],
                },
                {
                  PathSpec: "project/explicit",
                  Capabilities: ["read", "list", "destroy"],
                },
              ],
            },
          },
          {
            Name: "autoscaler",
            Policy: "scale",
            Capabilities: ["list-scaling-policies", "read-scaling-policy", "read-job-scaling", "scale-job"],
            Variables: null,
          },
        ],
        NodePools: [
          {
            Name: "prod",
            Policy: "",
            Capabilities: ["read"],
          },
          {
            Name: "dev",
            Policy: "write",
            Capabilities: ["delete", "read", "write"],
          },
        ],
        HostVolumes: [
          {
            Name: "production-tls-*",
            Policy: "",
            Capabilities: ["mount-readonly"],
          },
          {
            Name: "staging-tls-*",
            Policy: "write",
            Capabilities: ["mount-readonly", "mount-readwrite"],
          },
        ],
        Agent: {
          Policy: "read",
        },
        Node: {
          Policy: "write",
        },
        Operator: {
          Policy: "deny",
        },
        Quota: {
          Policy: "read",
        },
        Plugin: {
          Policy: "read",
        },
      },
    },
  },
  {
    rules: '\n\t\t\tnamespace "default" {\n\t\t\t\tpolicy = "foo"\n\t\t\t}\n\t\t\t',
    nomad: {
      err: 'Invalid namespace policy: &acl.NamespacePolicy{Name:"default", Policy:"foo", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules: '\n\t\t\tnamespace {\n\t\t\t\tpolicy = "read"\n\t\t\t}\n\t\t\t',
    nomad: {
      err: 'Invalid namespace name: &acl.NamespacePolicy{Name:"", Policy:"read", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules:
      '\n\t\t\t{\n\t\t\t\t"namespace": [\n\t\t\t\t\t{\n\t\t\t\t\t\t"": {\n\t\t\t\t\t\t\t"policy": "read"\n\t\t\t\t\t\t}\n\t\t\t\t\t}\n\t\t\t\t]\n\t\t\t}\n\t\t\t',
    nomad: {
      err: 'Invalid namespace name: &acl.NamespacePolicy{Name:"", Policy:"read", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules:
      '\n\t\t\tnamespace "dev" {\n\t\t\t  variables "*" {\n\t\t\t      capabilities = ["read", "write"]\n\t\t\t  }\n\t\t\t}\n\t\t\t',
    nomad: {
      err: "Invalid variable policy: no variable paths in namespace dev",
    },
  },
  {
    rules:
      '\n\t\t\tnamespace "dev" {\n\t\t\t\tpolicy = "read"\n\n\t\t\t\tvariables {\n\t\t\t\t\tpath {}\n\t\t\t\t\tpath "nomad/jobs/example" {\n\t\t\t\t\t\tcapabilities = ["read"]\n\t\t\t\t\t}\n\t\t\t\t}\n\t\t\t}\n\t\t\t',
    nomad: {
      err: "Invalid missing variable path in namespace dev",
    },
  },
  {
    rules:
      '\n\t\t\t{\n\t\t\t\t"namespace": [\n\t\t\t\t\t{\n\t\t\t\t\t\t"dev": {\n\t\t\t\t\t\t\t"policy": "read",\n\t\t\t\t\t\t\t"variables": [\n\t\t\t\t\t\t\t\t{\n\t\t\t\t\t\t\t\t\t"paths": [\n\t\t\t\t\t\t\t\t\t\t{\n\t\t\t\t\t\t\t\t\t\t\t"": {\n\t\t\t\t\t\t\t\t\t\t\t\t"capabilities": ["read"]\n\t\t\t\t\t\t\t\t\t\t\t}\n\t\t\t\t\t\t\t\t\t\t}\n\t\t\t\t\t\t\t\t\t]\n\t\t\t\t\t\t\t\t]\n\t\t\t\t\t\t\t]\n\t\t\t\t\t\t}\n\t\t\t\t\t}\n\t\t\t\t]\n\t\t\t}\n\t\t\t',
    nomad: {
      err: "Invalid variable policy: no variable paths in namespace dev",
    },
  },
  {
    rules: '\n\t\t\tnamespace "default" {\n\t\t\t\tcapabilities = ["deny", "foo"]\n\t\t\t}\n\t\t\t',
    nomad: {
      err: 'Invalid namespace capability \'foo\': &acl.NamespacePolicy{Name:"default", Policy:"", Capabilities:[]string{"deny", "foo"}, Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules: "namespace {}",
    nomad: {
      err: "Failed to parse ACL Policy: invalid acl policy: runtime error: index out of range [0] with length 0",
    },
  },
  {
    rules: '\n\t\t\tagent {\n\t\t\t\tpolicy = "foo"\n\t\t\t}\n\t\t\t',
    nomad: {
      err: 'Invalid agent policy: &acl.AgentPolicy{Policy:"foo"}',
    },
  },
  {
    rules: '\n\t\t\tnode {\n\t\t\t\tpolicy = "foo"\n\t\t\t}\n\t\t\t',
    nomad: {
      err: 'Invalid node policy: &acl.NodePolicy{Policy:"foo"}',
    },
  },
  {
    rules: '\n\t\t\toperator {\n\t\t\t\tpolicy = "foo"\n\t\t\t}\n\t\t\t',
    nomad: {
      err: 'Invalid operator policy: &acl.OperatorPolicy{Policy:"foo"}',
    },
  },
  {
    rules: '\n\t\t\tquota {\n\t\t\t\tpolicy = "foo"\n\t\t\t}\n\t\t\t',
    nomad: {
      err: 'Invalid quota policy: &acl.QuotaPolicy{Policy:"foo"}',
    },
  },
  {
    rules:
      '\n\t\t\t{\n\t\t\t\t"Name": "my-policy",\n\t\t\t\t"Description": "This is a great policy",\n\t\t\t\t"Rules": "anything"\n\t\t\t}\n\t\t\t',
    nomad: {
      err: 'Invalid policy: \n\t\t\t{\n\t\t\t\t"Name": "my-policy",\n\t\t\t\t"Description": "This is a great policy",\n\t\t\t\t"Rules": "anything"\n\t\t\t}\n\t\t\t',
    },
  },
  {
    rules: '\n\t\t\tnamespace "has a space"{\n\t\t\t\tpolicy = "read"\n\t\t\t}\n\t\t\t',
    nomad: {
      err: 'Invalid namespace name: &acl.NamespacePolicy{Name:"has a space", Policy:"read", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules: '\n\t\t\tnamespace "default" {\n\t\t\t\tcapabilities = ["sentinel-override"]\n\t\t\t}\n\t\t\t',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "default",
            Policy: "",
            Capabilities: ["sentinel-override"],
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules:
      '\n\t\t\tnode_pool "pool-read-only" {\n\t\t\t\tpolicy = "read"\n\t\t\t}\n\n\t\t\tnode_pool "pool-read-write" {\n\t\t\t\tpolicy = "write"\n\t\t\t}\n\n\t\t\tnode_pool "pool-read-upsert" {\n\t\t\t\tpolicy = "read"\n\t\t\t\tcapabilities = ["write"]\n\t\t\t}\n\n\t\t\tnode_pool "pool-multiple-capabilities" {\n\t\t\t\tpolicy = "read"\n\t\t\t\tcapabilities = ["write", "delete"]\n\t\t\t}\n\n\t\t\tnode_pool "pool-deny-policy" {\n\t\t\t\tpolicy = "deny"\n\t\t\t\tcapabilities = ["write"]\n\t\t\t}\n\n\t\t\tnode_pool "pool-deny-capability" {\n\t\t\t\tcapabilities = ["deny", "read"]\n\t\t\t}\n\n\t\t\tnode_pool "pool-*" {\n\t\t\t\tpolicy = "read"\n\t\t\t}\n\t\t\t',
    nomad: {
      ok: {
        Namespaces: null,
        NodePools: [
          {
            Name: "pool-read-only",
            Policy: "read",
            Capabilities: ["read"],
          },
          {
            Name: "pool-read-write",
            Policy: "write",
            Capabilities: ["delete", "read", "write"],
          },
          {
            Name: "pool-read-upsert",
            Policy: "read",
            Capabilities: ["write", "read"],
          },
          {
            Name: "pool-multiple-capabilities",
            Policy: "read",
            Capabilities: ["write", "delete", "read"],
          },
          {
            Name: "pool-deny-policy",
            Policy: "deny",
            Capabilities: ["write", "deny"],
          },
          {
            Name: "pool-deny-capability",
            Policy: "",
            Capabilities: ["deny", "read"],
          },
          {
            Name: "pool-*",
            Policy: "read",
            Capabilities: ["read"],
          },
        ],
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '\n\t\t\tnode_pool "" {\n\t\t\t}\n\t\t\t',
    nomad: {
      err: "Invalid node pool name ''",
    },
  },
  {
    rules: '\n\t\t\tnode_pool "pool%" {\n\t\t\t}\n\t\t\t',
    nomad: {
      err: "Invalid node pool name 'pool%'",
    },
  },
  {
    rules: '\n\t\t\tnode_pool "my-pool" {\n\t\t\t\tcapabilities = ["read", "invalid"]\n\t\t\t}\n\t\t\t',
    nomad: {
      err: "Invalid node pool capability 'invalid' for 'my-pool'",
    },
  },
  {
    rules: '\n\t\t\tnode_pool {\n\t\t\t\tpolicy = "read"\n\t\t\t}\n\t\t\t',
    nomad: {
      err: "Invalid node pool name ''",
    },
  },
  {
    rules:
      '\n\t\t\t{\n\t\t\t\t"node_pool": [\n\t\t\t\t\t{\n\t\t\t\t\t\t"": {\n\t\t\t\t\t\t\t"policy": "read"\n\t\t\t\t\t\t}\n\t\t\t\t\t}\n\t\t\t\t]\n\t\t\t}\n\t\t\t',
    nomad: {
      err: "Invalid node pool name ''",
    },
  },
  {
    rules:
      '\n\t\t\thost_volume "production-tls-*" {\n\t\t\t\tcapabilities = ["mount-readonly"]\n\t\t\t}\n\t\t\t',
    nomad: {
      ok: {
        Namespaces: null,
        NodePools: null,
        HostVolumes: [
          {
            Name: "production-tls-*",
            Policy: "",
            Capabilities: ["mount-readonly"],
          },
        ],
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules:
      '\n\t\t\thost_volume "production-tls-*" {\n\t\t\t\tcapabilities = ["mount-readwrite"]\n\t\t\t}\n\t\t\t',
    nomad: {
      ok: {
        Namespaces: null,
        NodePools: null,
        HostVolumes: [
          {
            Name: "production-tls-*",
            Policy: "",
            Capabilities: ["mount-readwrite"],
          },
        ],
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules:
      '\n\t\t\thost_volume "volume has a space" {\n\t\t\t\tcapabilities = ["mount-readwrite"]\n\t\t\t}\n\t\t\t',
    nomad: {
      err: 'Invalid host volume name: &acl.HostVolumePolicy{Name:"volume has a space", Policy:"", Capabilities:[]string{"mount-readwrite"}}',
    },
  },
  {
    rules: '\n\t\t\thost_volume {\n\t\t\t\tpolicy = "read"\n\t\t\t}\n\t\t\t',
    nomad: {
      err: 'Invalid host volume name: &acl.HostVolumePolicy{Name:"", Policy:"read", Capabilities:[]string(nil)}',
    },
  },
  {
    rules:
      '\n\t\t\t{\n\t\t\t\t"host_volume": [\n\t\t\t\t\t{\n\t\t\t\t\t\t"": {\n\t\t\t\t\t\t\t"policy": "read"\n\t\t\t\t\t\t}\n\t\t\t\t\t}\n\t\t\t\t]\n\t\t\t}\n\t\t\t',
    nomad: {
      err: 'Invalid host volume name: &acl.HostVolumePolicy{Name:"", Policy:"read", Capabilities:[]string(nil)}',
    },
  },
  {
    rules: '\n\t\t\tplugin {\n\t\t\t\tpolicy = "list"\n\t\t\t}\n\t\t\t',
    nomad: {
      ok: {
        Namespaces: null,
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: {
          Policy: "list",
        },
      },
    },
  },
  {
    rules: '\n\t\t\tplugin {\n\t\t\t\tpolicy = "reader"\n\t\t\t}\n\t\t\t',
    nomad: {
      err: 'Invalid plugin policy: &acl.PluginPolicy{Policy:"reader"}',
    },
  },
  {
    rules: 'namespace "default" { policy = "read" }',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "default",
            Policy: "read",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
            ],
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules:
      'namespace "default" {\n policy = "read"\n}\nnamespace "other" {\n policy = "write"\n}\nnamespace "secret" {\n capabilities = ["deny", "read-logs"]\n}\nnamespace "apps" {\n variables {\n  path "jobs/write-does-not-imply-read-or-delete" {\n   capabilities = ["write"]\n  }\n  path "project/read-implies-list" {\n   capabilities = ["read"]\n  }\n  path "project/explicit" {\n   capabilities = ["read", "list", "destroy"]\n  }\n }\n}\nnamespace "autoscaler" {\n policy = "scale"\n}\nhost_volume "production-tls-*" {\n capabilities = ["mount-readonly"]\n}\nhost_volume "staging-tls-*" {\n policy = "write"\n}\nnode_pool "prod" {\n capabilities = ["read"]\n}\nnode_pool "dev" {\n policy = "write"\n}\nagent {\n policy = "read"\n}\nnode {\n policy = "write"\n}\noperator {\n policy = "deny"\n}\nquota {\n policy = "read"\n}\nplugin {\n policy = "read"\n}\n',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "default",
            Policy: "read",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
            ],
            Variables: null,
          },
          {
            Name: "other",
            Policy: "write",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
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
            ],
            Variables: null,
          },
          {
            Name: "secret",
            Policy: "",
            Capabilities: ["deny", "read-logs"],
            Variables: null,
          },
          {
            Name: "apps",
            Policy: "",
            Capabilities: null,
            Variables: {
              Paths: [
                {
                  PathSpec: "jobs/write-does-not-imply-read-or-delete",
                  Capabilities: ["write"],
                },
                {
                  PathSpec: "project/read-implies-list",
                  Capabilities: ["read", "list"],
                },
                {
                  PathSpec: "project/explicit",
                  Capabilities: ["read", "list", "destroy"],
                },
              ],
            },
          },
          {
            Name: "autoscaler",
            Policy: "scale",
            Capabilities: ["list-scaling-policies", "read-scaling-policy", "read-job-scaling", "scale-job"],
            Variables: null,
          },
        ],
        NodePools: [
          {
            Name: "prod",
            Policy: "",
            Capabilities: ["read"],
          },
          {
            Name: "dev",
            Policy: "write",
            Capabilities: ["delete", "read", "write"],
          },
        ],
        HostVolumes: [
          {
            Name: "production-tls-*",
            Policy: "",
            Capabilities: ["mount-readonly"],
          },
          {
            Name: "staging-tls-*",
            Policy: "write",
            Capabilities: ["mount-readonly", "mount-readwrite"],
          },
        ],
        Agent: {
          Policy: "read",
        },
        Node: {
          Policy: "write",
        },
        Operator: {
          Policy: "deny",
        },
        Quota: {
          Policy: "read",
        },
        Plugin: {
          Policy: "read",
        },
      },
    },
  },
  {
    rules: 'namespace { policy = "read" }',
    nomad: {
      err: 'Invalid namespace name: &acl.NamespacePolicy{Name:"", Policy:"read", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules: 'namespace "x" {}\nnamespace "b" {}\nnamespace "10" {}\nnamespace "9" {}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "x",
            Policy: "",
            Capabilities: null,
            Variables: null,
          },
          {
            Name: "b",
            Policy: "",
            Capabilities: null,
            Variables: null,
          },
          {
            Name: "10",
            Policy: "",
            Capabilities: null,
            Variables: null,
          },
          {
            Name: "9",
            Policy: "",
            Capabilities: null,
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: 'namespace "has a space" { policy = "read" }',
    nomad: {
      err: 'Invalid namespace name: &acl.NamespacePolicy{Name:"has a space", Policy:"read", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules: 'namespace "x" { policy = "foo" }',
    nomad: {
      err: 'Invalid namespace policy: &acl.NamespacePolicy{Name:"x", Policy:"foo", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules:
      'namespace "x" {\ncapabilities = ["deny","foo"]\nvariables {\npath "a" { capabilities = ["read"] }\n}\n}',
    nomad: {
      err: 'Invalid namespace capability \'foo\': &acl.NamespacePolicy{Name:"x", Policy:"", Capabilities:[]string{"deny", "foo"}, Variables:(*acl.VariablesPolicy)(0x3e43d7720e10)}',
    },
  },
  {
    rules: 'namespace "x" {\ncapabilities = []\npolicy = "bad"\n}',
    nomad: {
      err: 'Invalid namespace policy: &acl.NamespacePolicy{Name:"x", Policy:"bad", Capabilities:[]string{}, Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules: 'agent { policy = "foo" }',
    nomad: {
      err: 'Invalid agent policy: &acl.AgentPolicy{Policy:"foo"}',
    },
  },
  {
    rules: 'plugin { policy = "write" }',
    nomad: {
      err: 'Invalid plugin policy: &acl.PluginPolicy{Policy:"write"}',
    },
  },
  {
    rules: 'host_volume "a b" { policy = "read" }',
    nomad: {
      err: 'Invalid host volume name: &acl.HostVolumePolicy{Name:"a b", Policy:"read", Capabilities:[]string(nil)}',
    },
  },
  {
    rules: 'host_volume "a" { capabilities = ["x"] }',
    nomad: {
      err: 'Invalid host volume capability \'x\': &acl.HostVolumePolicy{Name:"a", Policy:"", Capabilities:[]string{"x"}}',
    },
  },
  {
    rules: 'node_pool "a" { policy = "scale" }',
    nomad: {
      ok: {
        Namespaces: null,
        NodePools: [
          {
            Name: "a",
            Policy: "scale",
            Capabilities: null,
          },
        ],
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: 'node_pool "a" { policy = "list" }',
    nomad: {
      err: "Invalid node pool policy 'list' for 'a'",
    },
  },
  {
    rules: '{"Name":"x"}',
    nomad: {
      err: 'Invalid policy: {"Name":"x"}',
    },
  },
  {
    rules: 'namespace "x" { policy = "read" }\nnamespace "x" { policy = "deny" }',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "x",
            Policy: "read",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
            ],
            Variables: null,
          },
          {
            Name: "x",
            Policy: "deny",
            Capabilities: ["deny"],
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: 'namespace "dev" {\nvariables "*" { capabilities = ["read"] }\n}',
    nomad: {
      err: "Invalid variable policy: no variable paths in namespace dev",
    },
  },
  {
    rules: 'namespace "dev" {\nvariables {}\n}',
    nomad: {
      err: "Invalid variable policy: no variable paths in namespace dev",
    },
  },
  {
    rules: 'namespace "dev" {\nvariables {\npath {}\npath "x" { capabilities = ["read"] }\n}\n}',
    nomad: {
      err: "Invalid missing variable path in namespace dev",
    },
  },
  {
    rules: 'namespace "dev" {\nvariables {\npath "" { capabilities = ["read"] }\n}\n}',
    nomad: {
      err: "Invalid missing variable path in namespace dev",
    },
  },
  {
    rules: "   ",
    nomad: {
      err: "Invalid policy:    ",
    },
  },
  {
    rules: "# comment",
    nomad: {
      err: "Invalid policy: # comment",
    },
  },
  {
    rules: "x = 1",
    nomad: {
      err: "Invalid policy: x = 1",
    },
  },
  {
    rules: 'agent "x" { policy = "read" }',
    nomad: {
      err: 'Invalid agent policy: &acl.AgentPolicy{Policy:""}',
    },
  },
  {
    rules: 'agent { policy = "read" }\nagent { policy = "write" }',
    nomad: {
      ok: {
        Namespaces: null,
        NodePools: null,
        HostVolumes: null,
        Agent: {
          Policy: "write",
        },
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: 'namespace "a" "b" { policy = "read" }',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "a",
            Policy: "",
            Capabilities: null,
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules:
      'namespace "a" {\npolicy = "read"\nvariables {\npath "x" { capabilities = ["read"] }\n}\nvariables {\npath "y" { capabilities = ["write"] }\n}\n}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "a",
            Policy: "read",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
            ],
            Variables: {
              Paths: [
                {
                  PathSpec: "x",
                  Capabilities: ["read", "list"],
                },
                {
                  PathSpec: "y",
                  Capabilities: ["write"],
                },
              ],
            },
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: 'Namespace "a" { Policy = "read" }',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "a",
            Policy: "read",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
            ],
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: 'NAMESPACE "a" { CAPABILITIES = ["read-job"] }',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "a",
            Policy: "",
            Capabilities: ["read-job"],
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: 'namespace "a" { policy = 1 }',
    nomad: {
      err: 'Invalid namespace policy: &acl.NamespacePolicy{Name:"a", Policy:"1", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules: 'namespace "a" { policy = true }',
    nomad: {
      err: 'Invalid namespace policy: &acl.NamespacePolicy{Name:"a", Policy:"true", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules: 'namespace "a" { capabilities = "read-job" }',
    nomad: {
      err: "Failed to parse ACL Policy: At 1:32: unknown slice type: *ast.LiteralType",
    },
  },
  {
    rules: 'namespace "a" { capabilities = ["read-job", 1] }',
    nomad: {
      err: 'Invalid namespace capability \'1\': &acl.NamespacePolicy{Name:"a", Policy:"", Capabilities:[]string{"read-job", "1"}, Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules: 'agent { policy = ["read"] }',
    nomad: {
      err: "Failed to parse ACL Policy: At 1:18: root.agent.Policy: unknown type for string *ast.ListType",
    },
  },
  {
    rules: "agent {}",
    nomad: {
      err: 'Invalid agent policy: &acl.AgentPolicy{Policy:""}',
    },
  },
  {
    rules: 'namespace "a" {\nvariables {\npath "x" "y" { capabilities = ["read"] }\n}\n}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "a",
            Policy: "",
            Capabilities: null,
            Variables: {
              Paths: [
                {
                  PathSpec: "x",
                  Capabilities: null,
                },
              ],
            },
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules:
      'namespace "a" {\nvariables {\npath "x" { capabilities = ["read"] }\npath "x" { capabilities = ["deny"] }\n}\n}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "a",
            Policy: "",
            Capabilities: null,
            Variables: {
              Paths: [
                {
                  PathSpec: "x",
                  Capabilities: ["read", "list"],
                },
                {
                  PathSpec: "x",
                  Capabilities: ["deny"],
                },
              ],
            },
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"namespace": {"x": {"policy": "read"}}}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "x",
            Policy: "read",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
            ],
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"namespace": {"x": {"policy": "read"}, "y": {"policy":"deny"}}}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "x",
            Policy: "read",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
            ],
            Variables: null,
          },
          {
            Name: "y",
            Policy: "deny",
            Capabilities: ["deny"],
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"namespace": {"x": [{"policy": "read"}]}}',
    nomad: {
      err: 'Invalid namespace name: &acl.NamespacePolicy{Name:"", Policy:"read", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules: '{"namespace": [{"x": {"policy": "read"}, "y": {"policy":"write"}}]}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "x",
            Policy: "read",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
            ],
            Variables: null,
          },
          {
            Name: "y",
            Policy: "write",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
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
            ],
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"agent": [{"policy":"read"}]}',
    nomad: {
      ok: {
        Namespaces: null,
        NodePools: null,
        HostVolumes: null,
        Agent: {
          Policy: "read",
        },
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"agent": {"policy":"read"},}',
    nomad: {
      ok: {
        Namespaces: null,
        NodePools: null,
        HostVolumes: null,
        Agent: {
          Policy: "read",
        },
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"agent": [{"policy":"read"},{"policy":"write"}]}',
    nomad: {
      ok: {
        Namespaces: null,
        NodePools: null,
        HostVolumes: null,
        Agent: {
          Policy: "write",
        },
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules:
      '{"namespace": {"x": {"variables": {"path": {"a": {"capabilities": ["read"]}, "b": {"capabilities":["write"]}}}}}}',
    nomad: {
      err: 'Invalid namespace capability \'read\': &acl.NamespacePolicy{Name:"x", Policy:"", Capabilities:[]string{"read"}, Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules: '{"namespace": {"x": {"variables": [{"path": [{"a": {"capabilities": ["read"]}}]}]}}}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "x",
            Policy: "",
            Capabilities: null,
            Variables: {
              Paths: [
                {
                  PathSpec: "a",
                  Capabilities: ["read", "list"],
                },
              ],
            },
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"namespace": {"x": {"capabilities": "read-job"}}}',
    nomad: {
      err: "Failed to parse ACL Policy: At -: unknown slice type: *ast.LiteralType",
    },
  },
  {
    rules: '{"namespace": {"x": {"policy": 1}}}',
    nomad: {
      err: 'Invalid namespace policy: &acl.NamespacePolicy{Name:"x", Policy:"1", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules: '{"namespace": {"x": {"policy": null}}}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "x",
            Policy: "",
            Capabilities: null,
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"namespace": {"x": {"policy": "read", "policy": "write"}}}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "x",
            Policy: "write",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
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
            ],
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"namespace": {"x": {"policy": "read"}, "x": {"policy": "write"}}}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "x",
            Policy: "read",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
            ],
            Variables: null,
          },
          {
            Name: "x",
            Policy: "write",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
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
            ],
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"namespace": "x"}',
    nomad: {
      err: "Failed to parse ACL Policy: At -: unknown slice type: *ast.LiteralType",
    },
  },
  {
    rules: '{"namespace": {"x": {"policy": "read"}}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "x",
            Policy: "read",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
            ],
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"agent": }',
    nomad: {
      err: 'Invalid policy: {"agent": }',
    },
  },
  {
    rules: '{"agent": [null]}',
    nomad: {
      err: "Failed to parse ACL Policy: unexpected token while parsing list: NULL",
    },
  },
  {
    rules: '{"agent": {"policy": "re\\/ad"}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:26: illegal char escape",
    },
  },
  {
    rules: '{"agent": {"policy": "re\\qad"}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:26: illegal char escape",
    },
  },
  {
    rules: '{"agent": {"policy": "r\\u00e9ad"}}',
    nomad: {
      err: 'Invalid agent policy: &acl.AgentPolicy{Policy:"réad"}',
    },
  },
  {
    rules: '{"agent": {"policy": 01}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:23: numbers cannot start with 0",
    },
  },
  {
    rules: '{"agent": {"policy": x}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:22: illegal char",
    },
  },
  {
    rules: '{"agent": {"policy"}}',
    nomad: {
      err: 'Invalid agent policy: &acl.AgentPolicy{Policy:""}',
    },
  },
  {
    rules: '{"agent" "x": {"policy": "read"}}',
    nomad: {
      err: 'Invalid agent policy: &acl.AgentPolicy{Policy:""}',
    },
  },
  {
    rules: "{:}",
    nomad: {
      err: "Failed to parse ACL Policy: expected: STRING got: COLON",
    },
  },
  {
    rules: '{"agent": {"policy": "${"a"}"}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:26: illegal char",
    },
  },
  {
    rules: '{"namespace": []}',
    nomad: {
      err: "Failed to parse ACL Policy: invalid acl policy: runtime error: index out of range [0] with length 0",
    },
  },
  {
    rules: '{"agent": {"policy": "read"}} trailing',
    nomad: {
      ok: {
        Namespaces: null,
        NodePools: null,
        HostVolumes: null,
        Agent: {
          Policy: "read",
        },
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"agent": {"policy": 1.50}}',
    nomad: {
      err: 'Invalid agent policy: &acl.AgentPolicy{Policy:"1.50"}',
    },
  },
  {
    rules: '{"agent": {"policy": -2e3}}',
    nomad: {
      err: 'Invalid agent policy: &acl.AgentPolicy{Policy:"-2e3"}',
    },
  },
  {
    rules: '{"agent": {"policy": true}}',
    nomad: {
      err: 'Invalid agent policy: &acl.AgentPolicy{Policy:"true"}',
    },
  },
  {
    rules: '{"agent": {"policy": ["read", true, [1], "x"]}}',
    nomad: {
      err: "Failed to parse ACL Policy: expected: STRING got: RBRACK",
    },
  },
  {
    rules: '{"agent": {"policy": "r\\ud83dx"}}',
    nomad: {
      err: 'Failed to parse ACL Policy: invalid acl policy: unquote "r\\ud83dx" err: invalid syntax',
    },
  },
  {
    rules: '{"agent": {"policy": "r\\x41\\101"}}',
    nomad: {
      err: 'Invalid agent policy: &acl.AgentPolicy{Policy:"rAA"}',
    },
  },
  {
    rules: '{"agent": {"policy": "\\x4',
    nomad: {
      err: "Failed to parse ACL Policy: invalid acl policy: bytes.Buffer: UnreadRune: previous operation was not a successful ReadRune",
    },
  },
  {
    rules: '{"ag\\u0065nt": {"policy": "read"}}',
    nomad: {
      ok: {
        Namespaces: null,
        NodePools: null,
        HostVolumes: null,
        Agent: {
          Policy: "read",
        },
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"namespace": [{"": {"policy": "read"}}]}',
    nomad: {
      err: 'Invalid namespace name: &acl.NamespacePolicy{Name:"", Policy:"read", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules: '{"node_pool": [{"": {"policy": "read"}}]}',
    nomad: {
      err: "Invalid node pool name ''",
    },
  },
  {
    rules: '{"host_volume": [{"": {"policy": "read"}}]}',
    nomad: {
      err: 'Invalid host volume name: &acl.HostVolumePolicy{Name:"", Policy:"read", Capabilities:[]string(nil)}',
    },
  },
  {
    rules:
      '{\n"namespace": [\n{\n"dev": {\n"policy": "read",\n"variables": [\n{\n"paths": [\n{\n"": {\n"capabilities": ["read"]\n}\n}\n]\n]\n]\n}\n}\n]\n}',
    nomad: {
      err: "Invalid variable policy: no variable paths in namespace dev",
    },
  },
  {
    rules: 'node_pool "" {\n}',
    nomad: {
      err: "Invalid node pool name ''",
    },
  },
  {
    rules: 'node_pool "pool%" {\n}',
    nomad: {
      err: "Invalid node pool name 'pool%'",
    },
  },
  {
    rules: 'node_pool {\npolicy = "read"\n}',
    nomad: {
      err: "Invalid node pool name ''",
    },
  },
  {
    rules: 'host_volume {\npolicy = "read"\n}',
    nomad: {
      err: 'Invalid host volume name: &acl.HostVolumePolicy{Name:"", Policy:"read", Capabilities:[]string(nil)}',
    },
  },
  {
    rules: 'plugin { policy = "list" }',
    nomad: {
      ok: {
        Namespaces: null,
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: {
          Policy: "list",
        },
      },
    },
  },
  {
    rules: 'plugin { policy = "reader" }',
    nomad: {
      err: 'Invalid plugin policy: &acl.PluginPolicy{Policy:"reader"}',
    },
  },
  {
    rules: 'namespace "default" { capabilities = ["sentinel-override"] }',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "default",
            Policy: "",
            Capabilities: ["sentinel-override"],
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: 'namespace "\\u00e9" { policy = "read" }',
    nomad: {
      err: 'Invalid namespace name: &acl.NamespacePolicy{Name:"é", Policy:"read", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules: 'namespace "x" { policy = "re\\tad" }',
    nomad: {
      err: 'Invalid namespace policy: &acl.NamespacePolicy{Name:"x", Policy:"re\\tad", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules: 'namespace {\nfoo "bar" {}\n}',
    nomad: {
      err: 'Invalid namespace name: &acl.NamespacePolicy{Name:"", Policy:"", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules: 'namespace "x" {\nvariables {\npath {}\n}\n}',
    nomad: {
      err: "Failed to parse ACL Policy: invalid acl policy: runtime error: index out of range [0] with length 0",
    },
  },
  {
    rules: 'namespace "x" {\nvariables = { path = { a = { capabilities = ["read"] } } }\n}',
    nomad: {
      err: "Invalid missing variable path in namespace x",
    },
  },
  {
    rules: 'namespace = { x = { policy = "read" } }',
    nomad: {
      err: 'Invalid namespace name: &acl.NamespacePolicy{Name:"", Policy:"read", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules: 'agent = { policy = "read" }',
    nomad: {
      ok: {
        Namespaces: null,
        NodePools: null,
        HostVolumes: null,
        Agent: {
          Policy: "read",
        },
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: 'namespace "x" { capabilities = [["a"]] }',
    nomad: {
      err: "Failed to parse ACL Policy: At 1:33: root.namespace[0].Capabilities[0]: unknown type for string *ast.ListType",
    },
  },
  {
    rules: 'namespace "x" { capabilities = [{a = 1}] }',
    nomad: {
      err: "Failed to parse ACL Policy: At 1:33: root.namespace[0].Capabilities[0]: unknown type for string *ast.ObjectType",
    },
  },
  {
    rules:
      'namespace "x" {\npolicy = "read"\n}\nnamespace "*" {\npolicy = "write"\n}\nnamespace "prod-*" {\ncapabilities = ["deny"]\n}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "x",
            Policy: "read",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
            ],
            Variables: null,
          },
          {
            Name: "*",
            Policy: "write",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
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
            ],
            Variables: null,
          },
          {
            Name: "prod-*",
            Policy: "",
            Capabilities: ["deny"],
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: 'namespace "x" {\npolicy = "read"\n}\nnamespace {\npolicy = "write"\n}',
    nomad: {
      err: 'Invalid namespace name: &acl.NamespacePolicy{Name:"", Policy:"write", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules: 'node_pool "x" {\npolicy = "read"\n}\nnode_pool {\npolicy = "write"\n}',
    nomad: {
      err: "Invalid node pool name ''",
    },
  },
  {
    rules: 'host_volume "x" {\npolicy = "read"\n}\nhost_volume {\npolicy = "write"\n}',
    nomad: {
      err: 'Invalid host volume name: &acl.HostVolumePolicy{Name:"", Policy:"write", Capabilities:[]string(nil)}',
    },
  },
  {
    rules:
      '# a comment\nnamespace "default" { # trailing\n  policy = "read" // another\n  /* block\n comment */\n}\n',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "default",
            Policy: "read",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
            ],
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: 'namespace "default" {\n  policy = <<EOF\nread\nEOF\n}\n',
    nomad: {
      err: 'Invalid namespace policy: &acl.NamespacePolicy{Name:"default", Policy:"read\\n", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules: 'namespace "default" {\n  policy = <<-EOF\n    read\n    EOF\n}\n',
    nomad: {
      err: 'Invalid namespace policy: &acl.NamespacePolicy{Name:"default", Policy:"read\\n", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules: 'namespace "default" {\n  capabilities = [\n    "read-job",\n    "list-jobs",\n  ]\n}\n',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "default",
            Policy: "",
            Capabilities: ["read-job", "list-jobs"],
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: 'namespace "dév" {\n  policy = "read"\n}\n',
    nomad: {
      err: 'Invalid namespace name: &acl.NamespacePolicy{Name:"dév", Policy:"read", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules:
      'namespace "x" {\n  variables {\n    path "nomad/jobs/é*" {\n      capabilities = ["read"]\n    }\n  }\n}\n',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "x",
            Policy: "",
            Capabilities: null,
            Variables: {
              Paths: [
                {
                  PathSpec: "nomad/jobs/é*",
                  Capabilities: ["read", "list"],
                },
              ],
            },
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: 'namespace "x" {\n  variables {\n    path "a" {\n      capabilities = ["bogus"]\n    }\n  }\n}\n',
    nomad: {
      err: "Invalid variable capability 'bogus' in namespace x",
    },
  },
  {
    rules:
      'namespace "x" {\n  variables {\n    path "a" {\n      capabilities = ["deny", "read"]\n    }\n    path "b" {\n      capabilities = ["list", "read"]\n    }\n    path "c" {\n    }\n  }\n}\n',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "x",
            Policy: "",
            Capabilities: null,
            Variables: {
              Paths: [
                {
                  PathSpec: "a",
                  Capabilities: ["deny"],
                },
                {
                  PathSpec: "b",
                  Capabilities: ["list", "read"],
                },
                {
                  PathSpec: "c",
                  Capabilities: null,
                },
              ],
            },
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules:
      'namespace "*" {\n  policy = "write"\n  capabilities = ["alloc-node-exec", "csi-register-plugin"]\n}\n',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "*",
            Policy: "write",
            Capabilities: [
              "alloc-node-exec",
              "csi-register-plugin",
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
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
            ],
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: 'namespace "a" {\n  policy = "deny"\n  capabilities = ["read-job"]\n}\n',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "a",
            Policy: "deny",
            Capabilities: ["read-job", "deny"],
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules:
      'namespace "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" {\n  policy = "read"\n}\n',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            Policy: "read",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
            ],
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules:
      'namespace "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" {\n  policy = "read"\n}\n',
    nomad: {
      err: 'Invalid namespace name: &acl.NamespacePolicy{Name:"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", Policy:"read", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules: 'node_pool "a_b*" {\n  policy = "read"\n}\n',
    nomad: {
      ok: {
        Namespaces: null,
        NodePools: [
          {
            Name: "a_b*",
            Policy: "read",
            Capabilities: ["read"],
          },
        ],
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: 'host_volume "a_b" {\n  policy = "read"\n}\n',
    nomad: {
      err: 'Invalid host volume name: &acl.HostVolumePolicy{Name:"a_b", Policy:"read", Capabilities:[]string(nil)}',
    },
  },
  {
    rules: 'host_volume "a" {\n  policy = "scale"\n}\n',
    nomad: {
      ok: {
        Namespaces: null,
        NodePools: null,
        HostVolumes: [
          {
            Name: "a",
            Policy: "scale",
            Capabilities: null,
          },
        ],
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: 'host_volume "a" {\n  policy = "list"\n}\n',
    nomad: {
      err: 'Invalid host volume policy: &acl.HostVolumePolicy{Name:"a", Policy:"list", Capabilities:[]string(nil)}',
    },
  },
  {
    rules: 'agent {\n  policy = "scale"\n}\n',
    nomad: {
      ok: {
        Namespaces: null,
        NodePools: null,
        HostVolumes: null,
        Agent: {
          Policy: "scale",
        },
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: 'agent {\n  policy = "list"\n}\n',
    nomad: {
      err: 'Invalid agent policy: &acl.AgentPolicy{Policy:"list"}',
    },
  },
  {
    rules: 'quota {\n  policy = "write"\n}\n',
    nomad: {
      ok: {
        Namespaces: null,
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: {
          Policy: "write",
        },
        Plugin: null,
      },
    },
  },
  {
    rules: 'operator {\n  policy = ""\n}\n',
    nomad: {
      err: 'Invalid operator policy: &acl.OperatorPolicy{Policy:""}',
    },
  },
  {
    rules: 'plugin {\n  policy = ""\n}\n',
    nomad: {
      err: 'Invalid plugin policy: &acl.PluginPolicy{Policy:""}',
    },
  },
  {
    rules: 'namespace "x" {\n  policy = ""\n}\n',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "x",
            Policy: "",
            Capabilities: null,
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: 'namespace "x" {\n  variables {\n    path "a" {\n      capabilities = []\n    }\n  }\n}\n',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "x",
            Policy: "",
            Capabilities: null,
            Variables: {
              Paths: [
                {
                  PathSpec: "a",
                  Capabilities: [],
                },
              ],
            },
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: 'namespace "x" {\n  variables {\n  }\n  policy = "read"\n}\n',
    nomad: {
      err: "Invalid variable policy: no variable paths in namespace x",
    },
  },
  {
    rules:
      'namespace "x" {\n  variables {\n    path "a" {\n      capabilities = ["read"]\n    }\n  }\n}\nnamespace "y" {\n  variables {\n    path {}\n  }\n}\n',
    nomad: {
      err: "Failed to parse ACL Policy: invalid acl policy: runtime error: index out of range [0] with length 0",
    },
  },
  {
    rules: 'namespace "x" {\n  variables {\n    path {\n      capabilities = ["read"]\n    }\n  }\n}\n',
    nomad: {
      err: "Failed to parse ACL Policy: At 4:22: root.namespace[0].variables.path[0]: not an object type for struct (*ast.ListType)",
    },
  },
  {
    rules:
      'namespace "x" {\n  policy = "read"\n}\nagent {\n  policy = "write"\n}\nnamespace "a" {\n  policy = "write"\n}\n',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "x",
            Policy: "read",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
            ],
            Variables: null,
          },
          {
            Name: "a",
            Policy: "write",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
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
            ],
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: {
          Policy: "write",
        },
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: 'namespace "b" {\n}\nnode_pool "b" {\n}\nnamespace "a" {\n}\nnode_pool "a" {\n}\n',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "b",
            Policy: "",
            Capabilities: null,
            Variables: null,
          },
          {
            Name: "a",
            Policy: "",
            Capabilities: null,
            Variables: null,
          },
        ],
        NodePools: [
          {
            Name: "b",
            Policy: "",
            Capabilities: null,
          },
          {
            Name: "a",
            Policy: "",
            Capabilities: null,
          },
        ],
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: 'namespace "x" {\n  policy = "${foo}"\n}\n',
    nomad: {
      err: 'Invalid namespace policy: &acl.NamespacePolicy{Name:"x", Policy:"${foo}", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules: 'namespace "x" {\n  policy = "a\\"b"\n}\n',
    nomad: {
      err: 'Invalid namespace policy: &acl.NamespacePolicy{Name:"x", Policy:"a\\"b", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules: 'namespace "x" {\n  policy = "tab\\there"\n}\n',
    nomad: {
      err: 'Invalid namespace policy: &acl.NamespacePolicy{Name:"x", Policy:"tab\\there", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules: 'namespace "x" {\n  policy = "nul\\u0000x"\n}\n',
    nomad: {
      err: 'Invalid namespace policy: &acl.NamespacePolicy{Name:"x", Policy:"nul\\x00x", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules: 'namespace "x" {\n  policy = "emoji😀"\n}\n',
    nomad: {
      err: 'Invalid namespace policy: &acl.NamespacePolicy{Name:"x", Policy:"emoji😀", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules: 'namespace "x" {\n  policy = "nbsp x"\n}\n',
    nomad: {
      err: 'Invalid namespace policy: &acl.NamespacePolicy{Name:"x", Policy:"nbsp\\u00a0x", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules: '{"namespace": {"x": {"policy": "r\\u0000"}}}',
    nomad: {
      err: 'Invalid namespace policy: &acl.NamespacePolicy{Name:"x", Policy:"r\\x00", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules: '{"namespace": {"x": {"policy": "tab\\there"}}}',
    nomad: {
      err: 'Invalid namespace policy: &acl.NamespacePolicy{Name:"x", Policy:"tab\\there", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules:
      '{\n  "namespace": {\n    "default": {\n      "policy": "write",\n      "capabilities": ["alloc-node-exec"]\n    }\n  },\n  "agent": {"policy": "read"}\n}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "default",
            Policy: "write",
            Capabilities: [
              "alloc-node-exec",
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
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
            ],
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: {
          Policy: "read",
        },
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"namespace": {"x": {"variables": {"path": {"a": {"capabilities": ["read"]}}}}}}',
    nomad: {
      err: 'Invalid namespace capability \'read\': &acl.NamespacePolicy{Name:"x", Policy:"", Capabilities:[]string{"read"}, Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules:
      '{"namespace": {"x": {"policy": "read", "variables": {"path": {"a": {"capabilities": ["read"]}}}}}}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "x",
            Policy: "read",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
            ],
            Variables: {
              Paths: [
                {
                  PathSpec: "a",
                  Capabilities: ["read", "list"],
                },
              ],
            },
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules:
      '{"namespace": {"x": {"policy": "read", "variables": {"path": [{"a": {"capabilities": ["read"]}}]}}}}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "x",
            Policy: "read",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
            ],
            Variables: {
              Paths: [
                {
                  PathSpec: "a",
                  Capabilities: ["read", "list"],
                },
              ],
            },
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules:
      '{"namespace": {"x": {"policy": "read", "variables": [{"path": {"a": {"capabilities": ["read"]}, "b": {"capabilities": ["write"]}}}]}}}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "x",
            Policy: "read",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
            ],
            Variables: {
              Paths: [
                {
                  PathSpec: "a",
                  Capabilities: ["read", "list"],
                },
                {
                  PathSpec: "b",
                  Capabilities: ["write"],
                },
              ],
            },
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules:
      '{"namespace": {"x": {"variables": [{"path": {"a": {"capabilities": ["read"]}}}]}, "y": {"policy": "write"}}}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "x",
            Policy: "",
            Capabilities: null,
            Variables: {
              Paths: [
                {
                  PathSpec: "a",
                  Capabilities: ["read", "list"],
                },
              ],
            },
          },
          {
            Name: "y",
            Policy: "write",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
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
            ],
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"node_pool": {"a": {"policy": "read"}}, "host_volume": {"b": {"policy": "write"}}}',
    nomad: {
      ok: {
        Namespaces: null,
        NodePools: [
          {
            Name: "a",
            Policy: "read",
            Capabilities: ["read"],
          },
        ],
        HostVolumes: [
          {
            Name: "b",
            Policy: "write",
            Capabilities: ["mount-readonly", "mount-readwrite"],
          },
        ],
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"namespace": {"a": {"b": {"policy": "read"}}}}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "a",
            Policy: "",
            Capabilities: null,
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"namespace": {"a": {}}}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "a",
            Policy: "",
            Capabilities: null,
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"namespace": {}}',
    nomad: {
      err: "Failed to parse ACL Policy: invalid acl policy: runtime error: index out of range [0] with length 0",
    },
  },
  {
    rules: '{"agent": {}}',
    nomad: {
      err: 'Invalid agent policy: &acl.AgentPolicy{Policy:""}',
    },
  },
  {
    rules: '{"agent": []}',
    nomad: {
      err: "Failed to parse ACL Policy: At -: root.agent: not an object type for struct (*ast.ListType)",
    },
  },
  {
    rules: '{"agent": "read"}',
    nomad: {
      err: "Failed to parse ACL Policy: At -: root.agent: not an object type for struct (*ast.LiteralType)",
    },
  },
  {
    rules: '{"agent": {"policy": "read"}, "agent": {"policy": "deny"}}',
    nomad: {
      ok: {
        Namespaces: null,
        NodePools: null,
        HostVolumes: null,
        Agent: {
          Policy: "deny",
        },
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"Agent": {"Policy": "read"}}',
    nomad: {
      ok: {
        Namespaces: null,
        NodePools: null,
        HostVolumes: null,
        Agent: {
          Policy: "read",
        },
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"namespace": [{"a": {"policy": "read"}}, {"b": {"policy": "write"}}]}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "a",
            Policy: "read",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
            ],
            Variables: null,
          },
          {
            Name: "b",
            Policy: "write",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
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
            ],
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"namespace": {"a": {"policy": "read"}}, "namespace": {"b": {"policy": "deny"}}}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "a",
            Policy: "read",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
            ],
            Variables: null,
          },
          {
            Name: "b",
            Policy: "deny",
            Capabilities: ["deny"],
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"namespace": {"a": {"capabilities": ["read-job"], "policy": "read"}}}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "a",
            Policy: "read",
            Capabilities: [
              "read-job",
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
            ],
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"namespace": {"a": {"capabilities": [], "policy": "read"}}}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "a",
            Policy: "read",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
            ],
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"namespace": {"a": {"capabilities": []}}}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "a",
            Policy: "",
            Capabilities: [],
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"namespace": {"a": {"capabilities": [{"x": 1}]}}}',
    nomad: {
      err: "Failed to parse ACL Policy: At -: root.namespace[0].Capabilities[0]: unknown type for string *ast.ObjectItem",
    },
  },
  {
    rules: '{"namespace": {"a": {"capabilities": {"x": "y"}}}}',
    nomad: {
      err: "Failed to parse ACL Policy: At -: root.namespace[0].Capabilities[0]: unknown type for string *ast.ObjectItem",
    },
  },
  {
    rules: '{"namespace": {"a": {"policy": {"x": "y"}}}}',
    nomad: {
      err: "Failed to parse ACL Policy: At -: root.namespace[0].Policy: unknown type for string *ast.ObjectList",
    },
  },
  {
    rules: '{"namespace": {"a": {"policy": ["read"]}}}',
    nomad: {
      err: "Failed to parse ACL Policy: At -: root.namespace[0].Policy: unknown type for string *ast.ListType",
    },
  },
  {
    rules: '{"namespace": {"a": {"policy": 1e}}}',
    nomad: {
      err: 'Invalid namespace policy: &acl.NamespacePolicy{Name:"a", Policy:"1e}", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules: '{"namespace": {"a": {"policy": .5}}}',
    nomad: {
      err: 'Invalid namespace policy: &acl.NamespacePolicy{Name:"a", Policy:".5", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules: '{"namespace": {"a": {"policy": -}}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:32: illegal char",
    },
  },
  {
    rules: '{"namespace": {"a": {"policy": "read"}}}}}}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "a",
            Policy: "read",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
            ],
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"namespace": {"a": {"policy": "read"}} ] ]',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "a",
            Policy: "read",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
            ],
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"namespace": {"a": {"policy": "read"',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "a",
            Policy: "read",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
            ],
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"namespace": {"a": {"policy": "read\n"}}}',
    nomad: {
      err: "Failed to parse ACL Policy: 2:5: literal not terminated",
    },
  },
  {
    rules: '{"namespace": {"a": {"policy": "read\\\\"}}}',
    nomad: {
      err: 'Invalid namespace policy: &acl.NamespacePolicy{Name:"a", Policy:"read\\\\", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules: '   \n\t{"agent": {"policy": "read"}}',
    nomad: {
      ok: {
        Namespaces: null,
        NodePools: null,
        HostVolumes: null,
        Agent: {
          Policy: "read",
        },
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"agent": {"policy": "read"}}\n{"node": {"policy": "read"}}',
    nomad: {
      ok: {
        Namespaces: null,
        NodePools: null,
        HostVolumes: null,
        Agent: {
          Policy: "read",
        },
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules:
      '{"agent":{"policy":"read"},"node":{"policy":"write"},"operator":{"policy":"read"},"quota":{"policy":"deny"},"plugin":{"policy":"list"}}',
    nomad: {
      ok: {
        Namespaces: null,
        NodePools: null,
        HostVolumes: null,
        Agent: {
          Policy: "read",
        },
        Node: {
          Policy: "write",
        },
        Operator: {
          Policy: "read",
        },
        Quota: {
          Policy: "deny",
        },
        Plugin: {
          Policy: "list",
        },
      },
    },
  },
  {
    rules: '{"namespace": {"x": {"policy": "read"}}, "Namespace": {"y": {"policy": "read"}}}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "x",
            Policy: "read",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
            ],
            Variables: null,
          },
          {
            Name: "y",
            Policy: "read",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
            ],
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"namespace": {"x": {"variables": {"path": {"a": {"capailities": ["read"]}}}}}}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "x",
            Policy: "",
            Capabilities: null,
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"nmespace"x: {"a": {"policy": "read["}} ] ]',
    nomad: {
      err: "Failed to parse ACL Policy: 1:12: illegal char",
    },
  },
  {
    rules: '{"agagentent": {"p "denolicy": "read"\\}, "agent": {"policy": "deny"}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:28: illegal char",
    },
  },
  {
    rules: '{"agent": {"policy": "re\\-qad"}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:26: illegal char escape",
    },
  },
  {
    rules: '{"namespace"pax": {ce": {"x": {"policy": "read"}}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:15: illegal char",
    },
  },
  {
    rules: '{"namesace": [{"": {\\ "rea"policy": "read"}}]}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:21: illegal char: \\",
    },
  },
  {
    rules: '{"aespace": {"a":n {"policy": "read\\\\"}": "r}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:18: illegal char",
    },
  },
  {
    rules: '{"agent" "x":{"policy": "read"}}',
    nomad: {
      err: 'Invalid agent policy: &acl.AgentPolicy{Policy:""}',
    },
  },
  {
    rules: '{"namespace": {"a": {"policy: .5}}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:36: literal not terminated",
    },
  },
  {
    rules: '{"nmespac": {"a": {"capabilities": {"x": "y"}}}}',
    nomad: {
      err: 'Invalid policy: {"nmespac": {"a": {"capabilities": {"x": "y"}}}}',
    },
  },
  {
    rules: '{"agent": {"poluicy"}}',
    nomad: {
      err: 'Invalid agent policy: &acl.AgentPolicy{Policy:""}',
    },
  },
  {
    rules: '{"namespac": {"x": {"policy": \t"read", "policy": "write"}}',
    nomad: {
      err: 'Invalid policy: {"namespac": {"x": {"policy": \t"read", "policy": "write"}}',
    },
  },
  {
    rules: '{"agent": {"policy"]: : {"p-2cy": 3}}',
    nomad: {
      err: "Failed to parse ACL Policy: expected: STRING got: RBRACK",
    },
  },
  {
    rules: '{"namespace": {"a {"a"": {"policy": .5}}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:21: illegal char",
    },
  },
  {
    rules: '{"agen": {"polic": "re\\qad"}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:24: illegal char escape",
    },
  },
  {
    rules: '{namespace": [{"x": {"policy": "read"}, "y": {"policy":"write"}}]}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:10: illegal char",
    },
  },
  {
    rules: '{"namespaolicyce": {"x": {"policy":: read", "policy":. "write"}}}',
    nomad: {
      err: "Failed to parse ACL Policy: Expected object value, got unknown token: 1:36 COLON :",
    },
  },
  {
    rules: '{"\nagent":" {"polricy: "r\\x41\\101"}}',
    nomad: {
      err: "Failed to parse ACL Policy: 2:5: illegal char",
    },
  },
  {
    rules: '{"na1mespace": {"x": {"variables: {"path": {"a": {"capabilities":["read"]}}}}0}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:40: illegal char",
    },
  },
  {
    rules: '{"namspace": [x{"x": {"policy": "read"}, "y": {"policy":"wite"}}]}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:15: illegal char",
    },
  },
  {
    rules:
      '{\n"namespace": [\n{\n"dev": {\n"policy": "read",\n"varab]les": [\n{\n"paths": [\n{\n"": {\n"capabilities": ["read"]\n}\n}\n]\n]1\n]\n}\n}\n]\n}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "dev",
            Policy: "read",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
            ],
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"nmespace": {"x": {"policy": "read"}, "y": {r"policy":"deny"}}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:46: illegal char",
    },
  },
  {
    rules: '{"namespace": [{"nam]}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:23: literal not terminated",
    },
  },
  {
    rules: '{"agenty":"r": {"policy""read"}, .}',
    nomad: {
      err: 'Invalid policy: {"agenty":"r": {"policy""read"}, .}',
    },
  },
  {
    rules: '{"namespce": {}}',
    nomad: {
      err: 'Invalid policy: {"namespce": {}}',
    },
  },
  {
    rules: '{"agent": {"poicy": "re\\"agen\\qd"}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:31: illegal char escape",
    },
  },
  {
    rules:
      '{"gent":{"policy":"read"},"node":{"policy":"write"},"operator":{"policy":"read"},"quota":{"policy":"deny"},"plugin ":{"policy":"list"}}',
    nomad: {
      ok: {
        Namespaces: null,
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: {
          Policy: "write",
        },
        Operator: {
          Policy: "read",
        },
        Quota: {
          Policy: "deny",
        },
        Plugin: null,
      },
    },
  },
  {
    rules: '{"agent": {"policy": "read"}}\n{"node": {"policy": "ed\\"}}',
    nomad: {
      ok: {
        Namespaces: null,
        NodePools: null,
        HostVolumes: null,
        Agent: {
          Policy: "read",
        },
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"naget": {"policy"}}',
    nomad: {
      err: 'Invalid policy: {"naget": {"policy"}}',
    },
  },
  {
    rules: '{"nmespace": {"a": {"cilitiapab": []ilities": [], "policy": "read"}}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:57: illegal char",
    },
  },
  {
    rules: '{"agent": "policy": ["read", turue, [1], "x"]}}',
    nomad: {
      err: "Failed to parse ACL Policy: At -: root.agent: not an object type for struct (*ast.LiteralType)",
    },
  },
  {
    rules: '{"namespae": {"a": {"policy": "read"}}, "namespace": {"b": {t"policy": "deny"}}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:61: illegal char",
    },
  },
  {
    rules: '{"namespace": {"a": {"policy": "read"}} "nmespace": {"b": {"poicy": "deny"}}}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "a",
            Policy: "read",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
            ],
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"agent": "rel"\\ad"}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:16: illegal char: \\",
    },
  },
  {
    rules: '{"agent": "r}a"d"a}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:16: illegal char",
    },
  },
  {
    rules: '{"agent": {"poliy": 1.50}}',
    nomad: {
      err: 'Invalid agent policy: &acl.AgentPolicy{Policy:""}',
    },
  },
  {
    rules: '{"agetnt": {"olicy": "read"}, "agent": {"policy": "deny"}}',
    nomad: {
      ok: {
        Namespaces: null,
        NodePools: null,
        HostVolumes: null,
        Agent: {
          Policy: "deny",
        },
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"agen": "{}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:14: literal not terminated",
    },
  },
  {
    rules: '{"nam-espace": {"x": {"policy": "read"}, "y": {"policy":"deny"}}',
    nomad: {
      err: 'Invalid policy: {"nam-espace": {"x": {"policy": "read"}, "y": {"policy":"deny"}}',
    },
  },
  {
    rules: '{"namespace": {"x":{"polic"y"n: "re: {"xad"}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:28: illegal char",
    },
  },
  {
    rules:
      '{"namespace": {"x": {"polic": {"y": "read", "variables": [{"plath": {"a": {"capabilities": ["read"]}, "b": {"capabilities": ["write"]}}}]}}}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "x",
            Policy: "",
            Capabilities: null,
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"namsp}}acee}}}": {"a": "policy": 1e}}}',
    nomad: {
      err: 'Invalid policy: {"namsp}}acee}}}": {"a": "policy": 1e}}}',
    },
  },
  {
    rules: '{"agent":{}}',
    nomad: {
      err: 'Invalid agent policy: &acl.AgentPolicy{Policy:""}',
    },
  },
  {
    rules: '{"namespace": {a": "{"capabilities": [ {a":], "policy": "read"}}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:16: illegal char",
    },
  },
  {
    rules: '{"namespace":$ {"a": {"capabilities": [], "policy": "read"}}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:14: illegal char: $",
    },
  },
  {
    rules: '{"ag{ent[r": {"policy": "\\x4',
    nomad: {
      err: "Failed to parse ACL Policy: invalid acl policy: bytes.Buffer: UnreadRune: previous operation was not a successful ReadRune",
    },
  },
  {
    rules: '{"namespace":{"x":r {"capabilities": "read-job"}}ad-jo}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:19: illegal char",
    },
  },
  {
    rules: '{"nam{"p}}espace": {"a": {"p0olicy": "read"}}}}: {"p}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:8: illegal char",
    },
  },
  {
    rules: '{"n\tamespace": "x"}',
    nomad: {
      err: 'Invalid policy: {"n\tamespace": "x"}',
    },
  },
  {
    rules:
      '{"namespace": {"x": {"variables": [{"path": {"a": {"capabiities": ["read"]}}}]}, "y": {"policy": "write"}}}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "x",
            Policy: "",
            Capabilities: null,
            Variables: {
              Paths: [
                {
                  PathSpec: "a",
                  Capabilities: null,
                },
              ],
            },
          },
          {
            Name: "y",
            Policy: "write",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
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
            ],
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules:
      '{\n"namxespace": [\n{\n"dev": {\n"policy": "read",\n"variables": [\n{\n"paths": [\n{\n"": {\n"capabilities": [:"read"]\n}\n0}\n]\n]\n]\n}\n}\n]\n}',
    nomad: {
      err: "Failed to parse ACL Policy: unexpected token while parsing list: COLON",
    },
  },
  {
    rules: '{naesace": {"a" {"policy": -}}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:8: illegal char",
    },
  },
  {
    rules: '{"namesppaceracer"}}}: {"a": {}}}',
    nomad: {
      err: 'Invalid policy: {"namesppaceracer"}}}: {"a": {}}}',
    },
  },
  {
    rules: '{"nam{"x":espace": {"x": {"policy": "read"}}, "Namespace": {"y": {"policy": "read}}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:8: illegal char",
    },
  },
  {
    rules: '{"namespace": {"a": {"capabilitie": [], "policy": "read"}}}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "a",
            Policy: "read",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
            ],
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '   \n\t{"agent"2: {"pol{icy":y": " "read"}}',
    nomad: {
      err: "Failed to parse ACL Policy: expected: STRING got: NUMBER",
    },
  },
  {
    rules: '{"host_voleume":0 [{""read": {"policy": "read"}}]}',
    nomad: {
      err: 'Invalid policy: {"host_voleume":0 [{""read": {"policy": "read"}}]}',
    },
  },
  {
    rules: '{"namespace": {"a": {policy":["read"]}}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:27: illegal char",
    },
  },
  {
    rules: '{"agent": {"policy": "read"}}\n{"nod e": polic{"policy": "read"}}',
    nomad: {
      ok: {
        Namespaces: null,
        NodePools: null,
        HostVolumes: null,
        Agent: {
          Policy: "read",
        },
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules:
      '{"agent":a{"policy":"read"},"node":{"policy":"write"},"operator":{"policy":"read"},"quota":{"policy":"denuota"y"},"plugin":{"policy":"list"}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:10: illegal char",
    },
  },
  {
    rules: '{."aent": {"policy"ent":: true}',
    nomad: {
      err: "Failed to parse ACL Policy: expected: STRING got: PERIOD",
    },
  },
  {
    rules: '{"namespace": {"a": {capabilities" ["read-job"], "policy" "read"}}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:33: illegal char",
    },
  },
  {
    rules: '{"agent":\\ {"policy": 1.50}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:10: illegal char: \\",
    },
  },
  {
    rules:
      '{"namespace": {"x": {"policly": "read", "variables": {"path": {"a": {"capabiliies": ["read"]}}}}}}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "x",
            Policy: "",
            Capabilities: null,
            Variables: {
              Paths: [
                {
                  PathSpec: "a",
                  Capabilities: null,
                },
              ],
            },
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '   \n\t{"agent":{"poliy": "rea{d}}',
    nomad: {
      err: "Failed to parse ACL Policy: 2:29: literal not terminated",
    },
  },
  {
    rules: '{"namespuace": {"a": {"policy": "read"}}, "namespace": {"3b": {"policy": "deny"}}}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "3b",
            Policy: "deny",
            Capabilities: ["deny"],
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"namespace": {"a":u {"poliy": 1e}}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:20: illegal char",
    },
  },
  {
    rules: '{"agetnt": {"3policy": ""}}re\\l/ad"}}',
    nomad: {
      err: 'Invalid policy: {"agetnt": {"3policy": ""}}re\\l/ad"}}',
    },
  },
  {
    rules: '{"agent": {"po"polilic.y": true}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:22: illegal char",
    },
  },
  {
    rules: '{"gent":t [null]}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:9: illegal char",
    },
  },
  {
    rules: '{"agent" {"policy": "r\\x4\\01"}}',
    nomad: {
      err: "Failed to parse ACL Policy: expected: STRING got: LBRACE",
    },
  },
  {
    rules: '{"Eagent": {"polige: "rent"cy": "read"}} trailling',
    nomad: {
      err: "Failed to parse ACL Policy: 1:26: illegal char",
    },
  },
  {
    rules: '{"ag\\u0065ntu0065":{"ag\\u"policy": "read"}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:32: illegal char",
    },
  },
  {
    rules: '{"host_vol: {"pume":[{"}": {"policy":"read"}}]}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:18: illegal char",
    },
  },
  {
    rules: '{"namespace":n"a": {"capabilities": [{"x": 1}]}}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:14: illegal char",
    },
  },
  {
    rules: '{amesp"namespace": {"x": {"policy": null}}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:6: illegal char",
    },
  },
  {
    rules:
      '{"namespace": {"x": {"variablesu": [{"pathn": {"a": {"capabilities": ["read""]}}}]}, "y": {"policy":1 "write"}}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:87: illegal char",
    },
  },
  {
    rules: '{"nod_pool":{"a":{"policy": "read"l}}, "host_volume": {"b": {"policy": "write"}}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:35: illegal char",
    },
  },
  {
    rules: '{"namespace": {-"a": ": "r{"capabilities": [], "policy": "read"}}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:16: illegal char",
    },
  },
  {
    rules: '{"namespacer" {"x": {"poliacy": "read"}, "y": {"poliamespcy":"deny"}}}',
    nomad: {
      err: "Failed to parse ACL Policy: expected: STRING got: LBRACE",
    },
  },
  {
    rules: '{"namespace": {"a": {"capabiliti1es": [], "polcy": "read"}}}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "a",
            Policy: "",
            Capabilities: null,
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"namexsp}}ace": {"x": {policy": 1}}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:30: illegal char",
    },
  },
  {
    rules: '{"t": {agent": {"policy"}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:12: illegal char",
    },
  },
  {
    rules: '{namespace": {"a": {"policy": "read"}}, "namespace": {"b": {"poli-cy": "deny"}}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:10: illegal char",
    },
  },
  {
    rules: '{agent": {"po"}}licy": "read"}}\n{"node": {"polc1y": "read"}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:6: illegal char",
    },
  },
  {
    rules: '{"namespa,ce": {"a": {}}}',
    nomad: {
      err: 'Invalid policy: {"namespa,ce": {"a": {}}}',
    },
  },
  {
    rules: '{"agent": {"pont": licy": "read"}} trailing',
    nomad: {
      err: "Failed to parse ACL Policy: 1:23: illegal char",
    },
  },
  {
    rules: '{"age$nt": {"policy": "read"}}r\n{"node": {"policy": "read"}}',
    nomad: {
      err: 'Invalid policy: {"age$nt": {"policy": "read"}}r\n{"node": {"policy": "read"}}',
    },
  },
  {
    rules: '{"na0mespace": {]}\t\\}',
    nomad: {
      err: "Failed to parse ACL Policy: expected: STRING got: RBRACK",
    },
  },
  {
    rules: '{"namespace": {"x": c"y": {"poicy": "read"}}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:21: illegal char",
    },
  },
  {
    rules: '{"agent": {"policy": 01}n}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:25: illegal char",
    },
  },
  {
    rules: '{"namespace": {"x": {"policy": "read"}}, "Namespace": t{"y": {"policy": \\"read"}}"x": }',
    nomad: {
      err: "Failed to parse ACL Policy: 1:55: illegal char",
    },
  },
  {
    rules: '{"namespac,e": []}',
    nomad: {
      err: 'Invalid policy: {"namespac,e": []}',
    },
  },
  {
    rules: '{"namespace": {"a": {"capabilities": ["read-policjob"], "policy": "read"}}}',
    nomad: {
      err: 'Invalid namespace capability \'read-policjob\': &acl.NamespacePolicy{Name:"a", Policy:"read", Capabilities:[]string{"read-policjob"}, Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules: '{"nmespace": {"a: {"p:olicy:": 1e}}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:21: illegal char",
    },
  },
  {
    rules:
      '{"namespace": {"x": {"variables": [{"ath": {"a": {"capabilities": 2["read"]}}}]}, "y": {"policy: ""capawrite"}}}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "x",
            Policy: "",
            Capabilities: null,
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"namuespace": \n[{"a": {"policy": "read"}}, {b": {"policy": "write"}}]}',
    nomad: {
      err: "Failed to parse ACL Policy: 2:30: illegal char",
    },
  },
  {
    rules: '{d"}u}e"namespace": {"a": {"policy": "read"}}ead"} ] ]',
    nomad: {
      err: "Failed to parse ACL Policy: 1:2: illegal char",
    },
  },
  {
    rules: '{"namespace": {"a": {"puolicy": ["read": {""]}}-}',
    nomad: {
      err: "Failed to parse ACL Policy: unexpected token while parsing list: COLON",
    },
  },
  {
    rules: '{"namespace": {"a": {"ctxapabilities": [],u "policy"licy": "read"}}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:43: illegal char",
    },
  },
  {
    rules: '{"agent": {"policy": "re\\lqad"}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:26: illegal char escape",
    },
  },
  {
    rules: '{"nte"}}amespace": {"x": {"poe"}}}icy": "read", "policy"2: "write"}}}',
    nomad: {
      err: 'Invalid policy: {"nte"}}amespace": {"x": {"poe"}}}icy": "read", "policy"2: "write"}}}',
    },
  },
  {
    rules: '{ace"0"nmespace"0: {"a": {"capabilities": []}}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:4: illegal char",
    },
  },
  {
    rules: '{"naespap": {ce": {"x": {"policy": "read"}, "y": {"p": {"olicy":"deny"}}[}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:15: illegal char",
    },
  },
  {
    rules: '{"namespace: {"a" {"poicy": -}}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:16: illegal char",
    },
  },
  {
    rules: '{"namespce": {"a": {"policy":3 .5}}}',
    nomad: {
      err: 'Invalid policy: {"namespce": {"a": {"policy":3 .5}}}',
    },
  },
  {
    rules: '{"node_pool": {"a": {"pol2icy": "read"}},."host_Evolume": {"b": {"policy": "write"}}}',
    nomad: {
      err: "Failed to parse ACL Policy: expected: STRING got: PERIOD",
    },
  },
  {
    rules: '{"namespace": {"x": {spacevariables": [{"p3ath": [{"a":{"capabilities": ["read"]}}]}]}}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:35: illegal char",
    },
  },
  {
    rules: '{"namespace3": {"a" {"capabilities": [{"x": 1}]}}}',
    nomad: {
      err: "Failed to parse ACL Policy: expected: STRING got: LBRACE",
    },
  },
  {
    rules: '{"naespace": {"x": {"poliy": nll}}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:32: illegal char",
    },
  },
  {
    rules: '{"ame1space": {"ace": ": {"capabilities":: []}}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:49: literal not terminated",
    },
  },
  {
    rules: '{"namespace": {"x": {"policy": "tab\\therenames"}}}',
    nomad: {
      err: 'Invalid namespace policy: &acl.NamespacePolicy{Name:"x", Policy:"tab\\therenames", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules:
      '{"namelitiespace": {"x": {"variables": {"path": {"a" {"capabilities": ["read"]}, "b": {"capabilities":["write"]}}}}}}',
    nomad: {
      err: "Failed to parse ACL Policy: expected: STRING got: LBRACE",
    },
  },
  {
    rules: '{"namespace":{",x": {"policy": "r\\u0000"}}}',
    nomad: {
      err: 'Invalid namespace name: &acl.NamespacePolicy{Name:",x", Policy:"r\\x00", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules: '{"namespac}e": {"xn": {"policy": "read"}, "x:": {"policy": "}, ""write"}}}',
    nomad: {
      err: 'Invalid policy: {"namespac}e": {"xn": {"policy": "read"}, "x:": {"policy": "}, ""write"}}}',
    },
  },
  {
    rules: '{"namespace"\n: {"a": {"policy": -}}}',
    nomad: {
      err: "Failed to parse ACL Policy: 2:20: illegal char",
    },
  },
  {
    rules: '{"agent": "policy": "\\x4',
    nomad: {
      err: "Failed to parse ACL Policy: At -: root.agent: not an object type for struct (*ast.LiteralType)",
    },
  },
  {
    rules: '{"node_pool": {"a": {"policy": "read"}}, "host_volume": {"b": {"po_poollicy": "write"}}}',
    nomad: {
      ok: {
        Namespaces: null,
        NodePools: [
          {
            Name: "a",
            Policy: "read",
            Capabilities: ["read"],
          },
        ],
        HostVolumes: [
          {
            Name: "b",
            Policy: "",
            Capabilities: null,
          },
        ],
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"namespace": {"x": "policy": null}}}',
    nomad: {
      err: 'Invalid namespace name: &acl.NamespacePolicy{Name:"", Policy:"", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules:
      '{\n"namespace": [\n{\n"dev": {\n"policy": "read"n,\n"variables": [\n{\n"paths": [\n{\n"": {\n"capabilities]": ["read"]\n}\n}\n]\n]\n]\n}\n}\n]\n}',
    nomad: {
      err: "Failed to parse ACL Policy: 5:17: illegal char",
    },
  },
  {
    rules: '{"agent": {"polic": "red"}, "agent": {"polic"0: "deny"}}',
    nomad: {
      err: "Failed to parse ACL Policy: expected: STRING got: NUMBER",
    },
  },
  {
    rules: '{"namespace": {"x": {"variabls": [{"path: [{"a":1 {"capabilities": ["ead"]}}]}]}}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:46: illegal char",
    },
  },
  {
    rules: '{t"agent": {"apolicy": "read"}}\n{"node": {"policy": "read"}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:2: illegal char",
    },
  },
  {
    rules: '{"agent": {}',
    nomad: {
      err: 'Invalid agent policy: &acl.AgentPolicy{Policy:""}',
    },
  },
  {
    rules: '{"name}space": {"a": {"capabilitie": [], "policy": "read"}}}',
    nomad: {
      err: 'Invalid policy: {"name}space": {"a": {"capabilitie": [], "policy": "read"}}}',
    },
  },
  {
    rules: '{"agent": {"policy}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:21: literal not terminated",
    },
  },
  {
    rules: '{"namespacex": {": {"x": {"poliy": "read"}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:22: illegal char",
    },
  },
  {
    rules: '{"ode_pool": r[{"": {"policy": "reaolicyd"}}]}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:14: illegal char",
    },
  },
  {
    rules: '{"node_pool": {"a": {"politcy": "read"}}, "hostvolume": {"b": {"policy": "write"}}}',
    nomad: {
      ok: {
        Namespaces: null,
        NodePools: [
          {
            Name: "a",
            Policy: "",
            Capabilities: null,
          },
        ],
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules:
      '{"namespace": {"x": {"polcy": "read", "v\triables": [{"path": {"a": {"capabilities": ["read"]}, "": {"capabilities": ["write"]}}}]}}}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "x",
            Policy: "",
            Capabilities: null,
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"namespace": ${"a" {"capabilities "rea": [], "poicy": "read"}}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:15: illegal char: $",
    },
  },
  {
    rules:
      '{"namespace": {"x": {"variables": [{"path": {"a[": {"capabilities": ["read"]}}}]}, "y": {"policy": "write"}}}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "x",
            Policy: "",
            Capabilities: null,
            Variables: {
              Paths: [
                {
                  PathSpec: "a[",
                  Capabilities: ["read", "list"],
                },
              ],
            },
          },
          {
            Name: "y",
            Policy: "write",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
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
            ],
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"namespace": {"x: {"olicy": "r\\u0000"}}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:26: illegal char",
    },
  },
  {
    rules: '{"agent": [{"policy":"read"}]]}',
    nomad: {
      ok: {
        Namespaces: null,
        NodePools: null,
        HostVolumes: null,
        Agent: {
          Policy: "read",
        },
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"namespace":{"a": {"a": {"capabilities":{"x": "y"}}}}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "a",
            Policy: "",
            Capabilities: null,
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"namenspace": {"a": {ca"pabilities0": {"x": "y"}}}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:24: illegal char",
    },
  },
  {
    rules: '{"agent" {"policyagent":"read"},}',
    nomad: {
      err: "Failed to parse ACL Policy: expected: STRING got: LBRACE",
    },
  },
  {
    rules: '{"agent": {n"policy": "r\\41\\101"}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:12: illegal char",
    },
  },
  {
    rules: '{"agent": {"policy": "read"}} t"polirai3ling',
    nomad: {
      ok: {
        Namespaces: null,
        NodePools: null,
        HostVolumes: null,
        Agent: {
          Policy: "read",
        },
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"algent": }',
    nomad: {
      err: 'Invalid policy: {"algent": }',
    },
  },
  {
    rules: '{"namespace": {"a": {"rolicy": "read"}}}}}}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "a",
            Policy: "",
            Capabilities: null,
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '{"}Aget": {"Pol": {"icy": read"}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:30: illegal char",
    },
  },
  {
    rules: '{"ag\\u0065nt": {"policy":$ "read"}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:26: illegal char: $",
    },
  },
  {
    rules:
      '{"namespace": {"x": {"variables": {"pte"] }ath": {"h": {a": {"capabilities": ["read"]}, "b": {"capabilities":["write"]}}}}}}',
    nomad: {
      err: "Failed to parse ACL Policy: expected: STRING got: RBRACK",
    },
  },
  {
    rules:
      '{"namespace":"x":  {"x": {"policy": "read", "variables": {"path": {"a": {"capabilities": ["read"]}}}}}}',
    nomad: {
      err: "Failed to parse ACL Policy: At -: unknown slice type: *ast.LiteralType",
    },
  },
  {
    rules: '{"agnt": {"policy": "re\\qad"}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:25: illegal char escape",
    },
  },
  {
    rules: '{"agent":- {"policy": \t"r\\ud83d{"agex"}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:10: illegal char",
    },
  },
  {
    rules: '{"agent": "rent":"}ead"}',
    nomad: {
      err: "Failed to parse ACL Policy: At -: root.agent: not an object type for struct (*ast.LiteralType)",
    },
  },
  {
    rules: '{"namespace": {"a": "{}}}',
    nomad: {
      err: "Failed to parse ACL Policy: 1:26: literal not terminated",
    },
  },
  {
    rules: '{"namespace": {"x": {"policy}": "read"}}}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "x",
            Policy: "",
            Capabilities: null,
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules:
      '{\n"namespace": [\n{\n"dev": {\n"policy": "radables",\n"variables": [\n{\n"paths": [\n{\n"": {\n"capa$bilities": ["read"]\n}\n}\n]u\n]\n]\n}\n}\n]\n}',
    nomad: {
      err: "Failed to parse ACL Policy: 14:2: illegal char",
    },
  },
  {
    rules: '{"agent": {"policy": read"}} railing',
    nomad: {
      err: "Failed to parse ACL Policy: 1:25: illegal char",
    },
  },
  {
    rules:
      '{\n"namespace": [\n{\n"dev": {\n"policy": "read",\n"variables": [\n{\n"paths": [\n\n"": {\n"capabilities": ["read"]\n}\n}\n]\n]\n]\n}\n}\n]\n}',
    nomad: {
      err: "Failed to parse ACL Policy: unexpected token while parsing list: COLON",
    },
  },
  {
    rules: 'plug policy in { policy = "write }" }',
    nomad: {
      err: 'Invalid policy: plug policy in { policy = "write }" }',
    },
  },
  {
    rules: 'node_pool "a" node_pool{ policy = "scale" }',
    nomad: {
      ok: {
        Namespaces: null,
        NodePools: [
          {
            Name: "a",
            Policy: "",
            Capabilities: null,
          },
        ],
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: 'agent { policy = ["red"] }',
    nomad: {
      err: "Failed to parse ACL Policy: At 1:18: root.agent.Policy: unknown type for string *ast.ListType",
    },
  },
  {
    rules:
      'namespace "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" {\n  policy = "read"\n}\n',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            Policy: "read",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
            ],
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: 'namespce "a" { capabilities= ["read-job", 1] }',
    nomad: {
      err: 'Invalid policy: namespce "a" { capabilities= ["read-job", 1] }',
    },
  },
  {
    rules: 'names ace "dev"{\nvariables {}\n}',
    nomad: {
      err: 'Invalid policy: names ace "dev"{\nvariables {}\n}',
    },
  },
  {
    rules: 'naespace "a" {\nvariables {\npath "x" "y" { capabilities = ["read"] }\n}\n}',
    nomad: {
      err: 'Invalid policy: naespace "a" {\nvariables {\npath "x" "y" { capabilities = ["read"] }\n}\n}',
    },
  },
  {
    rules: '\n\t\t\thost_volume {\n\t\t\tpolicy = "read"\n\t\t\t}\n\t\t',
    nomad: {
      err: 'Invalid host volume name: &acl.HostVolumePolicy{Name:"", Policy:"read", Capabilities:[]string(nil)}',
    },
  },
  {
    rules:
      '\n\t\t\tnode_pool "my\tnode_po-pool" {\n\t\t\t\tcapabilities = ["rad", "invalid"]\n\t\t\t}\n\t\t\t',
    nomad: {
      err: "Invalid node pool name 'my\tnode_po-pool'",
    },
  },
  {
    rules: "#comment",
    nomad: {
      err: "Invalid policy: #comment",
    },
  },
  {
    rules: 'host_volume "ast_volum" {\n  policy = "list"\n}\n',
    nomad: {
      err: 'Invalid host volume name: &acl.HostVolumePolicy{Name:"ast_volum", Policy:"list", Capabilities:[]string(nil)}',
    },
  },
  {
    rules: '\n\t\t\tagent {\n\t\t\t\tpoicy = "oo"\n\t\t\t}\n\t\t\t',
    nomad: {
      err: 'Invalid agent policy: &acl.AgentPolicy{Policy:""}',
    },
  },
  {
    rules:
      '\n\t\t\thost_vo\tlume "production-tls-*" {\n\t\t\t\tcapabiltis = ["mount-readwrite"]\n\t\t\t}\n\t\t\t',
    nomad: {
      err: 'Invalid policy: \n\t\t\thost_vo\tlume "production-tls-*" {\n\t\t\t\tcapabiltis = ["mount-readwrite"]\n\t\t\t}\n\t\t\t',
    },
  },
  {
    rules: 'NAnamespaceMESPACE "a" { CAPABILITIES = ["read-job"] }',
    nomad: {
      err: 'Invalid policy: NAnamespaceMESPACE "a" { CAPABILITIES = ["read-job"] }',
    },
  },
  {
    rules: 'agent { policy = "ead" }\nagent { policy = "write" }',
    nomad: {
      ok: {
        Namespaces: null,
        NodePools: null,
        HostVolumes: null,
        Agent: {
          Policy: "write",
        },
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: 'namespace "x" {\nvariabls = { path = { a = { capabilities = ["read"] } } }\n}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "x",
            Policy: "",
            Capabilities: null,
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: 'namespace "default" { poicy = "read" }',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "default",
            Policy: "",
            Capabilities: null,
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: "# commet",
    nomad: {
      err: "Invalid policy: # commet",
    },
  },
  {
    rules: 'namesace "x" {\npolicy = "read"\n}\nnamespace {\npolhost_volumeicy = "write"\n}',
    nomad: {
      err: 'Invalid namespace name: &acl.NamespacePolicy{Name:"", Policy:"", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules: 'host_volst_volumume {\npolicy = "read"\n}',
    nomad: {
      err: 'Invalid policy: host_volst_volumume {\npolicy = "read"\n}',
    },
  },
  {
    rules:
      '\n\t\t\tnode_pool "pool-read-only" {\n\t\t\t\tpolicy = "read"\n\t\t\t}\n\n\t\t\tnode_pool "pool-read-write" {\n\t\t\t\tpolicy = "write"\n\t\t\t}\n\n\t\t\tnode_pool "pool-read-upsert" {\n\t\t\t\tpolcy = "read"\n\t\t\t\tcapabilities = ["Nwrite"]\n\t\t\t}\n\n\t\t\tnode_pool "pool-multiple-capabilities" {\n\t\t\t\tpolicy = "read"\n\t\t\t\tcapabilities = ["write", "delete"]\n\t\t\t}\n\n\t\t\tnode_pnode_pooool "pool-deny-policy" {\n\t\t\t\tpolicy = "deny"\n\t\t\t\tcapabilities = ["write"]\n\t\t\t}\n\n\t\t\tnode_pool "pool-deny-capability" {\n\t\t\t\tcapabilities = ["deny", "read"]\n\t\t\t}\n\n\t\t\tnode_pool "pool-*" {\n\t\t\t\tpolicy = "read"\n\t\t\t}\n\t\t\t',
    nomad: {
      err: "Invalid node pool capability 'Nwrite' for 'pool-read-upsert'",
    },
  },
  {
    rules: 'nod_pol "" {\n}',
    nomad: {
      err: 'Invalid policy: nod_pol "" {\n}',
    },
  },
  {
    rules: "    ",
    nomad: {
      err: "Invalid policy:     ",
    },
  },
  {
    rules: 'namespace "x" {\n\n  polcy= "nbsp x"\n}\n',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "x",
            Policy: "",
            Capabilities: null,
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '\n\t\t\tnamespac "default" {\n\t\t\t\tpolicy = "foo"\n\t\t\t}\n\t\t\t',
    nomad: {
      err: 'Invalid policy: \n\t\t\tnamespac "default" {\n\t\t\t\tpolicy = "foo"\n\t\t\t}\n\t\t\t',
    },
  },
  {
    rules: 'agen { polic = ["red"] }',
    nomad: {
      err: 'Invalid policy: agen { polic = ["red"] }',
    },
  },
  {
    rules: 'plugin { policy = "eader" }',
    nomad: {
      err: 'Invalid plugin policy: &acl.PluginPolicy{Policy:"eader"}',
    },
  },
  {
    rules: 'namespace "b" {\n}\nnod_pool "b" {\n}\nnamespace "a" {\n}\nnode_pool "a" {\n}\n',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "b",
            Policy: "",
            Capabilities: null,
            Variables: null,
          },
          {
            Name: "a",
            Policy: "",
            Capabilities: null,
            Variables: null,
          },
        ],
        NodePools: [
          {
            Name: "a",
            Policy: "",
            Capabilities: null,
          },
        ],
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules:
      '\n\t\t\thost_volume "production-tls-*" {\n\t\t\t\tcapabilities = ["mapabilitount-readonly"]\n\t\t\t}\n\t\t\t',
    nomad: {
      err: 'Invalid host volume capability \'mapabilitount-readonly\': &acl.HostVolumePolicy{Name:"production-tls-*", Policy:"", Capabilities:[]string{"mapabilitount-readonly"}}',
    },
  },
  {
    rules:
      'namespace "x" {\npolicy = "read"\n}\nnamespace "*" {\npolicy = "write"\n}\nnamespace "prod-*" {\ncapabilitiesamespace= ["deny"]\n}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "x",
            Policy: "read",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
            ],
            Variables: null,
          },
          {
            Name: "*",
            Policy: "write",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
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
            ],
            Variables: null,
          },
          {
            Name: "prod-*",
            Policy: "",
            Capabilities: null,
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '\t\t\tnamespace "default"path {\n\t\t\t\tpolicy = "foo"\n\t\t\t}\n\t\t\t',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "default",
            Policy: "",
            Capabilities: null,
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: 'namespace "b" {\n}\nnode-_pool "b" {\n}\nnamespace "a" {\n}\nnode_mespace pool "a" {\n}\n',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "b",
            Policy: "",
            Capabilities: null,
            Variables: null,
          },
          {
            Name: "a",
            Policy: "",
            Capabilities: null,
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: 'namespace = { x = { pathpolicy = "read" } }',
    nomad: {
      err: 'Invalid namespace name: &acl.NamespacePolicy{Name:"", Policy:"", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules: 'namespace {\nfoo "barnmespce" {}\n}',
    nomad: {
      err: 'Invalid namespace name: &acl.NamespacePolicy{Name:"", Policy:"", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules: 'agen"x"t {}',
    nomad: {
      err: 'Invalid policy: agen"x"t {}',
    },
  },
  {
    rules:
      'namespace "aaaaaaaaaaaa.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" {\n  policy = "read"\n}\n',
    nomad: {
      err: 'Invalid namespace name: &acl.NamespacePolicy{Name:"aaaaaaaaaaaa.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", Policy:"read", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules: 'NAMESPACE "a" { CAPABILITIES = ["rea*d-job"] }',
    nomad: {
      err: 'Invalid namespace capability \'rea*d-job\': &acl.NamespacePolicy{Name:"a", Policy:"", Capabilities:[]string{"rea*d-job"}, Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules:
      'namespace "a" {\npolicy = "red"\nvariables {\npath "x" { capabilities = ["rad"] }\n}\nvariables {\npath "y" { capablities = ["write"] }\n}\n}',
    nomad: {
      err: 'Invalid namespace policy: &acl.NamespacePolicy{Name:"a", Policy:"red", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(0x3e43d754cf48)}',
    },
  },
  {
    rules: 'nmespace "a" "b" { policy = "read" }',
    nomad: {
      err: 'Invalid policy: nmespace "a" "b" { policy = "read" }',
    },
  },
  {
    rules:
      'namespace "x" {\n  \npolicy = "read"\n}\nagent {\n  policy = "write"\n}\nnamespace "a" {\n  policy ="write"\n}\n',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "x",
            Policy: "read",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
            ],
            Variables: null,
          },
          {
            Name: "a",
            Policy: "write",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
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
            ],
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: {
          Policy: "write",
        },
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules:
      '\n\t\t\thost_volume "production-tls-*" {\n\t\t\t\tcapab_ilities = ["mount-rction-tleadonly"]\n\t\t\t}\n\t\t\t',
    nomad: {
      ok: {
        Namespaces: null,
        NodePools: null,
        HostVolumes: [
          {
            Name: "production-tls-*",
            Policy: "",
            Capabilities: null,
          },
        ],
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: 'plugin { policy = "reade" }',
    nomad: {
      err: 'Invalid plugin policy: &acl.PluginPolicy{Policy:"reade"}',
    },
  },
  {
    rules: 'namespace { policy = " { policread" }',
    nomad: {
      err: 'Invalid namespace name: &acl.NamespacePolicy{Name:"", Policy:" { policread", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules: 'host_volume "a" {\n  ppolicyolicy = "scale"\n}\n',
    nomad: {
      ok: {
        Namespaces: null,
        NodePools: null,
        HostVolumes: [
          {
            Name: "a",
            Policy: "",
            Capabilities: null,
          },
        ],
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: 'namespace "a" {\nvariables {\npath "x""y" { capabilities = ["read"] }\n}\n}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "a",
            Policy: "",
            Capabilities: null,
            Variables: {
              Paths: [
                {
                  PathSpec: "x",
                  Capabilities: null,
                },
              ],
            },
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules:
      'namespace "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaahost_volumeaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" {\n  policy = "read"\n}\n',
    nomad: {
      err: 'Invalid namespace name: &acl.NamespacePolicy{Name:"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaahost_volumeaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", Policy:"read", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules: 'namespace "dévamespace" {\n  poicy = "red"\n}\n',
    nomad: {
      err: 'Invalid namespace name: &acl.NamespacePolicy{Name:"dévamespace", Policy:"", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules:
      '# a comment\nnamespace "defaulat" { # trailing\n  policy = "read" // another\n  /* block\n comment */\n}\n',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "defaulat",
            Policy: "read",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
            ],
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: 'namespace "x" {\npolicy = "read"\n}\nnamevariablesspce {\npolicy = "write"\n}',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "x",
            Policy: "read",
            Capabilities: [
              "list-jobs",
              "parse-job",
              "read-job",
              "csi-list-volume",
              "csi-read-volume",
              "read-job-scaling",
              "list-scaling-policies",
              "read-scaling-policy",
            ],
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: '\n\t\t\tnamespace "efault" {\n\t\t\t\tcapabiliti3es = ["sentinel-override"]\n\t\t\t}\n\t\t\t',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "efault",
            Policy: "",
            Capabilities: null,
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: 'namespace "a" "b" { plicy = "read" }',
    nomad: {
      ok: {
        Namespaces: [
          {
            Name: "a",
            Policy: "",
            Capabilities: null,
            Variables: null,
          },
        ],
        NodePools: null,
        HostVolumes: null,
        Agent: null,
        Node: null,
        Operator: null,
        Quota: null,
        Plugin: null,
      },
    },
  },
  {
    rules: 'namespace "defpoli "read" cyault" { policnamespacey = "read" }',
    nomad: {
      err: 'Invalid namespace name: &acl.NamespacePolicy{Name:"defpoli ", Policy:"", Capabilities:[]string(nil), Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules: 'namespace policy"x" {\n  variables {\n    path {\n      capabilities =["read"]\n    }\n  }\n}\n',
    nomad: {
      err: "Failed to parse ACL Policy: invalid acl policy: runtime error: invalid memory address or nil pointer dereference",
    },
  },
  {
    rules: 'nod_pool "" {\n}',
    nomad: {
      err: 'Invalid policy: nod_pool "" {\n}',
    },
  },
  {
    rules: 'namevariablesspace "x" {\n  policy = ""\n}\n',
    nomad: {
      err: 'Invalid policy: namevariablesspace "x" {\n  policy = ""\n}\n',
    },
  },
  {
    rules: 'amespace = { x = { policy = "read" } }',
    nomad: {
      err: 'Invalid policy: amespace = { x = { policy = "read" } }',
    },
  },
  {
    rules:
      'namespace "default" {\n policy = "read"\n}\nnamespace "other" {\n policy = "write"\n}\nnamespace "secret" {\n capabilities = ["dny", "read-logs"]\n}\nnamespace "apps" {\n variables {\n  path "jobs/write-does-not-imply-read-or-delete" {\n   capabilities = ["write"]\n  }\n  path "project/read-implies-list" {\n   capabilities = ["read"]\n  }\n  path "project/explicit" {\n   capabilities = ["read", "list", "destroy"]\n  }\n }\n}\nnamespace "autoscaler" {\n policy = "scale"\n}\nhost_volume "production-tls-*" {\n capabilities = ["mount-readonly"]\n}\nhost_volume "staging-tls-*" {\n policy = "write"\n}\nnode_pool "prod" {\n capabilities = ["read"]\n}\nnode_pool "dev" {\n policy = "write"\n}\nagent {\n policy= "read"\n}\nnode {\n policy = "write"\n}\noperator {\n policy = "deny"\n}\nquota {\n policy = "read"\n}\nplugin {\n policy = "read"\n}\n',
    nomad: {
      err: 'Invalid namespace capability \'dny\': &acl.NamespacePolicy{Name:"secret", Policy:"", Capabilities:[]string{"dny", "read-logs"}, Variables:(*acl.VariablesPolicy)(nil)}',
    },
  },
  {
    rules: 'node_pooriablesl "poovariablesl%" {\n}',
    nomad: {
      err: 'Invalid policy: node_pooriablesl "poovariablesl%" {\n}',
    },
  },
];
