import type { ACLAuthMethodConfigSpec } from "../../../streams/acl.ts";
import { ApiError } from "../../api/api-error.ts";
import { durationFromJson, GoDurationError } from "../go-duration.ts";

const strings = { type: ["array", "null"], items: { type: "string" } } as const;
const stringMap = { type: ["object", "null"], additionalProperties: { type: "string" } } as const;
// A string or nanoseconds: durationFromJson checks the type (an Ajv union of
// string and number would warn at every compile under strictTypes).
const duration = {} as const;
// Echoed back by clients that send a method they read; the server sets them.
const serverSet = { Hash: {}, CreateTime: {}, ModifyTime: {}, CreateIndex: {}, ModifyIndex: {} } as const;

/** Nomad's ACLAuthMethod as a request body (fields newer clients add are dropped). */
export const authMethodBodySchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    Name: { type: "string" },
    Type: { type: "string" },
    TokenLocality: { type: "string" },
    MaxTokenTTL: duration,
    Default: { type: ["boolean", "null"] },
    Config: {
      type: ["object", "null"],
      additionalProperties: false,
      properties: {
        JWTValidationPubKeys: strings,
        JWKSURL: { type: "string" },
        JWKSCACert: { type: "string" },
        OIDCDiscoveryURL: { type: "string" },
        OIDCClientID: { type: "string" },
        OIDCClientSecret: { type: "string" },
        OIDCScopes: strings,
        BoundAudiences: strings,
        BoundIssuer: strings,
        AllowedRedirectURIs: strings,
        DiscoveryCaPem: strings,
        SigningAlgs: strings,
        ExpirationLeeway: duration,
        NotBeforeLeeway: duration,
        ClockSkewLeeway: duration,
        ClaimMappings: stringMap,
        ListClaimMappings: stringMap,
      },
    },
    ...serverSet,
  },
} as const;

interface ConfigBody {
  JWTValidationPubKeys?: string[] | null;
  JWKSURL?: string;
  JWKSCACert?: string;
  OIDCDiscoveryURL?: string;
  OIDCClientID?: string;
  OIDCClientSecret?: string;
  OIDCScopes?: string[] | null;
  BoundAudiences?: string[] | null;
  BoundIssuer?: string[] | null;
  AllowedRedirectURIs?: string[] | null;
  DiscoveryCaPem?: string[] | null;
  SigningAlgs?: string[] | null;
  ExpirationLeeway?: unknown;
  NotBeforeLeeway?: unknown;
  ClockSkewLeeway?: unknown;
  ClaimMappings?: Record<string, string> | null;
  ListClaimMappings?: Record<string, string> | null;
}

export interface AuthMethodBody {
  Name?: string;
  Type?: string;
  TokenLocality?: string;
  MaxTokenTTL?: unknown;
  Default?: boolean | null;
  Config?: ConfigBody | null;
}

/** A method's config as sent: the client secret in clear, until the handler seals it. */
export type AuthMethodConfigInput = Omit<ACLAuthMethodConfigSpec, "OIDCClientSecretSealed"> & {
  readonly OIDCClientSecret: string;
};

/** What the caller asked for, before the merge with the stored method. Zero values mean "not given". */
export interface AuthMethodInput {
  readonly Name: string;
  readonly Type: string;
  readonly TokenLocality: string;
  /** Nanoseconds. */
  readonly MaxTokenTTL: number;
  readonly Default: boolean;
  readonly Config: AuthMethodConfigInput | null;
}

/** Reads a body as Nomad's ACLAuthMethod.UnmarshalJSON does; a bad duration is a 400 naming the field. */
export function authMethodFromBody(body: AuthMethodBody): AuthMethodInput {
  try {
    return {
      Name: body.Name ?? "",
      Type: body.Type ?? "",
      TokenLocality: body.TokenLocality ?? "",
      // Lenient where Nomad 1.6.1 is strict: its own api client sends "" for
      // zero, which its server then refuses to parse; here it means "not given".
      MaxTokenTTL: durationFromJson(body.MaxTokenTTL, "MaxTokenTTL", true),
      Default: body.Default ?? false,
      Config: body.Config ? configFromBody(body.Config) : null,
    };
  } catch (err) {
    if (err instanceof GoDurationError) throw ApiError.badRequest(err.message);
    throw err;
  }
}

function configFromBody(c: ConfigBody): AuthMethodConfigInput {
  return {
    JWTValidationPubKeys: c.JWTValidationPubKeys ?? [],
    JWKSURL: c.JWKSURL ?? "",
    JWKSCACert: c.JWKSCACert ?? "",
    OIDCDiscoveryURL: c.OIDCDiscoveryURL ?? "",
    OIDCClientID: c.OIDCClientID ?? "",
    OIDCClientSecret: c.OIDCClientSecret ?? "",
    OIDCScopes: c.OIDCScopes ?? [],
    BoundAudiences: c.BoundAudiences ?? [],
    BoundIssuer: c.BoundIssuer ?? [],
    AllowedRedirectURIs: c.AllowedRedirectURIs ?? [],
    DiscoveryCaPem: c.DiscoveryCaPem ?? [],
    SigningAlgs: c.SigningAlgs ?? [],
    ExpirationLeeway: durationFromJson(c.ExpirationLeeway, "Config.ExpirationLeeway", true),
    NotBeforeLeeway: durationFromJson(c.NotBeforeLeeway, "Config.NotBeforeLeeway", true),
    ClockSkewLeeway: durationFromJson(c.ClockSkewLeeway, "Config.ClockSkewLeeway", true),
    ClaimMappings: c.ClaimMappings ?? {},
    ListClaimMappings: c.ListClaimMappings ?? {},
  };
}
