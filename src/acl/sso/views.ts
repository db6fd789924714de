import type { ACLAuthMethodRow, ACLBindingRuleRow } from "../../../projections/acl-sso.ts";
import type { ACLAuthMethodConfigSpec } from "../../../streams/acl.ts";
import type { Keyring } from "../../keyring/keyring.ts";
import { durationToJson } from "../go-duration.ts";
import { ClientSecretError, isSealedSecret, openClientSecret } from "./client-secret.ts";

/**
 * The JSON shapes of Nomad 1.6.1's ACLAuthMethod, ACLAuthMethodStub,
 * ACLBindingRule and ACLBindingRuleListStub, keys in the order Go writes
 * them (a MarshalJSON alias puts the duration fields first).
 */

// Go writes a nil slice or map as null; a field the caller never set is nil.
const list = (values: readonly string[]) => (values.length === 0 ? null : values);
const map = (values: Readonly<Record<string, string>>) => (Object.keys(values).length === 0 ? null : values);

/** The client secret in clear ("" when the method has none). */
export function openAuthMethodSecret(keyring: Keyring, config: ACLAuthMethodConfigSpec): string {
  const sealed = config.OIDCClientSecretSealed;
  if (sealed === null || sealed === undefined) return "";
  if (!isSealedSecret(sealed))
    throw new ClientSecretError("cannot open the OIDC client secret: the sealed form is malformed");
  return openClientSecret(keyring, sealed);
}

export function authMethodConfigView(config: ACLAuthMethodConfigSpec, clientSecret: string) {
  return {
    ExpirationLeeway: durationToJson(config.ExpirationLeeway),
    NotBeforeLeeway: durationToJson(config.NotBeforeLeeway),
    ClockSkewLeeway: durationToJson(config.ClockSkewLeeway),
    JWTValidationPubKeys: list(config.JWTValidationPubKeys),
    JWKSURL: config.JWKSURL,
    OIDCDiscoveryURL: config.OIDCDiscoveryURL,
    OIDCClientID: config.OIDCClientID,
    OIDCClientSecret: clientSecret,
    OIDCScopes: list(config.OIDCScopes),
    BoundAudiences: list(config.BoundAudiences),
    BoundIssuer: list(config.BoundIssuer),
    AllowedRedirectURIs: list(config.AllowedRedirectURIs),
    DiscoveryCaPem: list(config.DiscoveryCaPem),
    JWKSCACert: config.JWKSCACert,
    SigningAlgs: list(config.SigningAlgs),
    ClaimMappings: map(config.ClaimMappings),
    ListClaimMappings: map(config.ListClaimMappings),
  };
}

/**
 * The full method, as ACL.GetAuthMethod returns it to a management token:
 * Nomad 1.6.1 does not redact the client secret, so neither does this; the
 * keyring opens it (ClientSecretError if this server lacks the key).
 */
export function authMethodView(row: ACLAuthMethodRow, keyring: Keyring) {
  return {
    MaxTokenTTL: durationToJson(row.MaxTokenTTL),
    Name: row.Name,
    Type: row.Type,
    TokenLocality: row.TokenLocality,
    Default: row.Default,
    Config: row.Config ? authMethodConfigView(row.Config, openAuthMethodSecret(keyring, row.Config)) : null,
    Hash: row.Hash,
    CreateTime: row.CreateTime,
    ModifyTime: row.ModifyTime,
    CreateIndex: row.CreateIndex,
    ModifyIndex: row.ModifyIndex,
  };
}

export function authMethodStub(row: ACLAuthMethodRow) {
  return {
    Name: row.Name,
    Type: row.Type,
    Default: row.Default,
    Hash: row.Hash,
    CreateIndex: row.CreateIndex,
    ModifyIndex: row.ModifyIndex,
  };
}

export function bindingRuleView(row: ACLBindingRuleRow) {
  return {
    ID: row.ID,
    Description: row.Description,
    AuthMethod: row.AuthMethod,
    Selector: row.Selector,
    BindType: row.BindType,
    BindName: row.BindName,
    Hash: row.Hash,
    CreateTime: row.CreateTime,
    ModifyTime: row.ModifyTime,
    CreateIndex: row.CreateIndex,
    ModifyIndex: row.ModifyIndex,
  };
}

export function bindingRuleStub(row: ACLBindingRuleRow) {
  return {
    ID: row.ID,
    Description: row.Description,
    AuthMethod: row.AuthMethod,
    Hash: row.Hash,
    CreateIndex: row.CreateIndex,
    ModifyIndex: row.ModifyIndex,
  };
}
