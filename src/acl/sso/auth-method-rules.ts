import { goDuration } from "../../jobs/go-values.ts";
import { formatErrors } from "../../jobs/multierror.ts";

/** Nomad's ValidACLAuthMethod. */
export const AUTH_METHOD_NAME = /^[a-zA-Z0-9-]{1,128}$/;
export const AUTH_METHOD_TYPES: readonly string[] = ["OIDC", "JWT"];
export const TOKEN_LOCALITIES: readonly string[] = ["local", "global"];

/** The token TTL range a method's MaxTokenTTL must lie in (Nomad's acl token_{min,max}_expiration_ttl), ns. */
export interface TokenTtlRange {
  readonly min: number;
  readonly max: number;
}

/** Strings where the spec has unions: the handler checks what a caller sent. */
interface Checked {
  readonly Name: string;
  readonly Type: string;
  readonly TokenLocality: string;
  readonly MaxTokenTTL: number;
}

/**
 * Nomad's ACLAuthMethod.Validate, its messages in its order. Without
 * `ttl` the range is not checked: apply cannot know the server's
 * configuration, and the handler checked it already.
 */
export function authMethodErrors(method: Checked, ttl?: TokenTtlRange): string[] {
  const errors: string[] = [];
  if (!AUTH_METHOD_NAME.test(method.Name)) errors.push(`invalid name '${method.Name}'`);
  if (!TOKEN_LOCALITIES.includes(method.TokenLocality)) {
    errors.push(`invalid token locality '${method.TokenLocality}'`);
  }
  if (!AUTH_METHOD_TYPES.includes(method.Type)) errors.push(`invalid token type '${method.Type}'`);
  if (ttl && (ttl.min > method.MaxTokenTTL || method.MaxTokenTTL > ttl.max)) {
    errors.push(
      `invalid MaxTokenTTL value '${goDuration(method.MaxTokenTTL)}' ` +
        `(should be between ${goDuration(ttl.min)} and ${goDuration(ttl.max)})`,
    );
  }
  return errors;
}

/** Nomad's UpsertAuthMethods wording for the `index`th method of a request. */
export function authMethodInvalid(index: number, errors: readonly string[]): string {
  return `auth method ${index} invalid: ${formatErrors(errors)}`;
}
