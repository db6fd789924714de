/** A parsed `#/<view>/<path...>?<query>` route: routing is by hash so the server only serves files. */
export interface Route {
  readonly view: string;
  readonly path: readonly string[];
  readonly query: URLSearchParams;
}

export function parseHash(hash: string): Route {
  const raw = hash.replace(/^#\/?/, "");
  const q = raw.indexOf("?");
  const pathPart = q < 0 ? raw : raw.slice(0, q);
  const query = new URLSearchParams(q < 0 ? "" : raw.slice(q + 1));
  const [view = "", ...path] = pathPart.split("/").map(decodeURIComponent);
  return { view: view === "" ? "home" : view, path: path.filter((p) => p !== ""), query };
}

/** The hash of a route, for links. */
export function routeHash(
  view: string,
  path: readonly string[] = [],
  query: Record<string, string> = {},
): string {
  const q = new URLSearchParams(query).toString();
  const p = path.map(encodeURIComponent).join("/");
  return `#/${view}${p === "" ? "" : `/${p}`}${q === "" ? "" : `?${q}`}`;
}

/** Rewrites the hash without a new history entry or a hashchange (the view already shows it). */
export function replaceHash(hash: string): void {
  if (location.hash !== hash) history.replaceState(null, "", hash);
}

export const timelineHash = (kind: string, id: string) => routeHash("timeline", [kind, id]);
