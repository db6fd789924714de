/**
 * Whether an OIDC login may send the provider's answer to `uri` (hashicorp/cap
 * `Provider.validRedirect`, which Nomad's OIDC endpoints rely on):
 *
 * - an auth method without AllowedRedirectURIs allows any URI (the provider
 *   still checks the URIs registered with it);
 * - otherwise the URI must be in the list, exactly; a loopback URI
 *   (localhost, 127.0.0.1, ::1) matches whatever its port, as RFC 8252 §7.3
 *   asks for native apps such as `nomad login`, whose callback port is
 *   chosen at run time.
 *
 * Answers undefined when allowed, else why not.
 */
export function redirectRefusal(uri: string, allowed: readonly string[]): string | undefined {
  if (allowed.length === 0) return undefined;
  let input: URL;
  try {
    input = new URL(uri);
  } catch {
    return `redirect URI ${uri} is an invalid URI`;
  }
  if (!LOOPBACK.has(input.hostname)) {
    return allowed.includes(uri) ? undefined : `redirect URI ${uri}: unauthorized redirect_uri`;
  }
  const wanted = withoutPort(input);
  for (const a of allowed) {
    let candidate: URL;
    try {
      candidate = new URL(a);
    } catch {
      continue;
    }
    if (withoutPort(candidate) === wanted) return undefined;
  }
  return `redirect URI ${uri}: unauthorized redirect_uri`;
}

const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]"]);

function withoutPort(u: URL): string {
  const copy = new URL(u.href);
  copy.port = "";
  return copy.href;
}
