/** The ACL token is kept for the tab's session only, as Nomad's UI keeps it. */
const KEY = "nomad.token";

export function getToken(): string {
  return sessionStorage.getItem(KEY) ?? "";
}

export function setToken(token: string): void {
  if (token === "") sessionStorage.removeItem(KEY);
  else sessionStorage.setItem(KEY, token);
}
