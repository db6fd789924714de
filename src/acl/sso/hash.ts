import type { ACLAuthMethodSpec, ACLBindingRuleSpec } from "../../../streams/acl.ts";
import { goDuration } from "../../jobs/go-values.ts";
import { blake2b256 } from "../acl-hash.ts";
import { isSealedSecret } from "./client-secret.ts";

/** Map entries key then value, keys sorted: Go ranges over a map in random order, which no replica could repeat. */
function mapParts(map: Readonly<Record<string, string>>): string[] {
  return Object.keys(map)
    .sort()
    .flatMap((k) => [k, map[k]!]);
}

type HashedMethod = Pick<
  ACLAuthMethodSpec,
  "Name" | "Type" | "TokenLocality" | "MaxTokenTTL" | "Default" | "Config"
>;

/**
 * Nomad's ACLAuthMethod.SetHash: the same fields in the same order, with two
 * deliberate differences. Map entries go in key order (Go's order is
 * random), and the OIDC client secret is represented by its keyed digest
 * (SealedSecret.Digest), never the secret: the hash is published by the
 * unauthenticated list and written to the log. Like Nomad's, it leaves out
 * JWTValidationPubKeys, JWKSURL, JWKSCACert, OIDCScopes, BoundIssuer and the
 * leeways.
 */
export function authMethodHash(method: HashedMethod): string {
  const parts = [
    method.Name,
    method.Type,
    method.TokenLocality,
    goDuration(method.MaxTokenTTL),
    String(method.Default),
  ];
  const c = method.Config;
  if (c) {
    const sealed = c.OIDCClientSecretSealed;
    parts.push(c.OIDCDiscoveryURL, c.OIDCClientID, isSealedSecret(sealed) ? sealed.Digest : "");
    parts.push(...c.BoundAudiences, ...c.AllowedRedirectURIs, ...c.DiscoveryCaPem, ...c.SigningAlgs);
    parts.push(...mapParts(c.ClaimMappings), ...mapParts(c.ListClaimMappings));
  }
  return blake2b256(parts);
}

type HashedRule = Pick<
  ACLBindingRuleSpec,
  "ID" | "Description" | "AuthMethod" | "Selector" | "BindType" | "BindName"
>;

/** Nomad's ACLBindingRule.SetHash, field for field. */
export function bindingRuleHash(rule: HashedRule): string {
  return blake2b256([
    rule.ID,
    rule.Description,
    rule.AuthMethod,
    rule.Selector,
    rule.BindType,
    rule.BindName,
  ]);
}
