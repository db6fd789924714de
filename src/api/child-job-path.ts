/** A child job's own segment of an ID: `periodic-<unix>` or `dispatch-[<prefix>-]<unix>-<hex>`. */
const CHILD_SEGMENT = /\/((?:periodic-\d+|dispatch-[A-Za-z0-9_.-]+)(?=\/|$))/g;

const JOB_PREFIX = "/v1/job/";

/**
 * Nomad routes `/v1/job/<id>/...` by suffix, so a periodic or dispatched
 * child's ID (`<parent>/periodic-<unix>`) works in a path without its slash
 * escaped, as python-nomad sends it; fastify's `:id` stops at a slash. The
 * slash before a child's segment is escaped before routing (`%2F`, as Go's
 * api client sends it), which leaves every other path as it was.
 */
export function childJobPath(url: string): string {
  if (!url.startsWith(JOB_PREFIX)) return url;
  const query = url.indexOf("?");
  const path = query < 0 ? url : url.slice(0, query);
  const rest = path.slice(JOB_PREFIX.length);
  const rewritten = rest.replace(CHILD_SEGMENT, "%2F$1");
  if (rewritten === rest) return url;
  return JOB_PREFIX + rewritten + (query < 0 ? "" : url.slice(query));
}
