import type {
  ACLAuthMethodsDeleted,
  ACLAuthMethodsUpserted,
  ACLBindingRulesDeleted,
  ACLBindingRulesUpserted,
  ACLBootstrapped,
  ACLOneTimeTokenCreated,
  ACLOneTimeTokenExchanged,
  ACLPoliciesDeleted,
  ACLPoliciesUpserted,
  ACLRolesDeleted,
  ACLRolesUpserted,
  ACLTokenSpec,
  ACLTokensDeleted,
  ACLTokensUpserted,
} from "../../streams/acl.ts";
import type { Envelope } from "../../streams/event-schema.ts";

const at = 1_763_800_000_000;
const by = { kind: "token", id: "6f1d0c2e-0000-4000-8000-00000000a11c", name: "ops" } as const;
// Not real seals or hashes: the codec only carries the strings.
const sealed = {
  KeyID: "5b3e9a1c-2d4f-4e6a-8b7c-9d0e1f2a3b4c",
  Nonce: "AAECAwQFBgcICQoL",
  Ciphertext: "c2VhbGVk",
  Digest: "ZGlnZXN0",
};

const token: ACLTokenSpec = {
  AccessorID: "a1b2c3d4-0000-4000-8000-000000000001",
  SecretIDHash: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
  Name: "deploys",
  Type: "client",
  Policies: ["deployer"],
  Roles: [{ ID: "c0ffee00-0000-4000-8000-000000000003" }],
  Global: false,
  Hash: "bm90IGEgcmVhbCBoYXNo",
  CreateTime: "2025-11-22T08:26:40.123456789Z",
  ExpirationTime: "2025-11-22T09:26:40.123456789Z",
  ExpirationTTL: 3_600_000_000_000,
};

/** One envelope per ACL event type, for the golden codec test (test/codec/event-samples.ts). */
export const aclSamples: readonly Envelope[] = [
  {
    type: "ACLBootstrapped",
    v: 1,
    at,
    by: { kind: "anonymous", id: "anonymous" },
    data: {
      Token: {
        ...token,
        Name: "Bootstrap Token",
        Type: "management",
        Policies: [],
        Roles: [],
        Global: true,
        ExpirationTime: null,
        ExpirationTTL: 0,
      },
      ResetIndex: 0,
    } satisfies ACLBootstrapped,
  },
  { type: "ACLTokensUpserted", v: 1, at, by, data: { Tokens: [token] } satisfies ACLTokensUpserted },
  {
    type: "ACLTokensDeleted",
    v: 1,
    at,
    by: { kind: "server", id: "server-1", epoch: 7 },
    data: { AccessorIDs: [token.AccessorID], Reason: "expired" } satisfies ACLTokensDeleted,
  },
  {
    type: "ACLOneTimeTokenCreated",
    v: 1,
    at,
    by: { kind: "token", id: token.AccessorID, name: token.Name },
    data: {
      OneTimeToken: {
        OneTimeSecretHash: "60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752",
        AccessorID: token.AccessorID,
        ExpiresAt: "2025-11-22T08:36:40.123Z",
        SealedSecretID: sealed,
      },
    } satisfies ACLOneTimeTokenCreated,
  },
  {
    type: "ACLOneTimeTokenExchanged",
    v: 1,
    at,
    by: { kind: "anonymous", id: "anonymous" },
    data: {
      OneTimeSecretHash: "60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752",
      At: "2025-11-22T08:30:00Z",
    } satisfies ACLOneTimeTokenExchanged,
  },
  {
    type: "ACLPoliciesUpserted",
    v: 1,
    at,
    by,
    data: {
      Policies: [
        {
          Name: "deployer",
          Description: "submit jobs in web",
          Rules: 'namespace "web" { policy = "write" }',
          Parsed: {
            Namespaces: [{ Name: "web", Policy: "write", Capabilities: ["list-jobs", "submit-job"] }],
          },
          JobACL: null,
          Hash: "cG9saWN5IGhhc2g=",
        },
      ],
    } satisfies ACLPoliciesUpserted,
  },
  { type: "ACLPoliciesDeleted", v: 1, at, by, data: { Names: ["deployer"] } satisfies ACLPoliciesDeleted },
  {
    type: "ACLRolesUpserted",
    v: 1,
    at,
    by,
    data: {
      Roles: [
        {
          ID: "c0ffee00-0000-4000-8000-000000000003",
          Name: "web-team",
          Description: "",
          Policies: [{ Name: "deployer" }],
          Hash: "cm9sZSBoYXNo",
        },
      ],
      AllowMissingPolicies: false,
    } satisfies ACLRolesUpserted,
  },
  {
    type: "ACLRolesDeleted",
    v: 1,
    at,
    by,
    data: { IDs: ["c0ffee00-0000-4000-8000-000000000003"] } satisfies ACLRolesDeleted,
  },
  {
    type: "ACLAuthMethodsUpserted",
    v: 1,
    at,
    by,
    data: {
      AuthMethods: [
        {
          Name: "okta",
          Type: "OIDC",
          TokenLocality: "local",
          MaxTokenTTL: 3_600_000_000_000,
          Default: true,
          Config: {
            JWTValidationPubKeys: [],
            JWKSURL: "",
            JWKSCACert: "",
            OIDCDiscoveryURL: "https://example.okta.com",
            OIDCClientID: "nomad",
            OIDCClientSecretSealed: sealed,
            OIDCScopes: ["groups"],
            BoundAudiences: ["nomad"],
            BoundIssuer: [],
            AllowedRedirectURIs: ["http://localhost:4649/oidc/callback"],
            DiscoveryCaPem: [],
            SigningAlgs: ["RS256"],
            ExpirationLeeway: 0,
            NotBeforeLeeway: 0,
            ClockSkewLeeway: 0,
            ClaimMappings: { email: "email" },
            ListClaimMappings: { groups: "groups" },
          },
          Hash: "bWV0aG9kIGhhc2g=",
          CreateTime: "2025-11-22T08:26:40Z",
          ModifyTime: "2025-11-22T08:26:40Z",
        },
      ],
    } satisfies ACLAuthMethodsUpserted,
  },
  { type: "ACLAuthMethodsDeleted", v: 1, at, by, data: { Names: ["okta"] } satisfies ACLAuthMethodsDeleted },
  {
    type: "ACLBindingRulesUpserted",
    v: 1,
    at,
    by,
    data: {
      BindingRules: [
        {
          ID: "b1d10000-0000-4000-8000-000000000004",
          Description: "engineers",
          AuthMethod: "okta",
          Selector: '"engineering" in list.groups',
          BindType: "role",
          BindName: "web-team",
          Hash: "cnVsZSBoYXNo",
          CreateTime: "2025-11-22T08:26:40Z",
          ModifyTime: "2025-11-22T08:26:40Z",
        },
      ],
      AllowMissingAuthMethods: false,
    } satisfies ACLBindingRulesUpserted,
  },
  {
    type: "ACLBindingRulesDeleted",
    v: 1,
    at,
    by,
    data: { IDs: ["b1d10000-0000-4000-8000-000000000004"] } satisfies ACLBindingRulesDeleted,
  },
];
