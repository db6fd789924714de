/**
 * A client RPC's reply as JSON, with each job inside its allocations
 * serialized once. Alloc.GetAllocs answers with whole allocations, each
 * carrying its job (Nomad's client runs what the job says), and the
 * allocations of one job version share one job row: at 5,000 nodes a
 * placement burst serialized the same few jobs fifty thousand times, half
 * of every reply's bytes. Rows are never changed once stored, so the text of
 * a job row stays right for as long as the row lives.
 */
const jobTexts = new WeakMap<object, string>();

export function clientReplyJson(body: Readonly<Record<string, unknown>>): string {
  const allocs = body.Allocs;
  if (!Array.isArray(allocs)) return JSON.stringify(body);
  let out = '{"Allocs":[';
  for (let i = 0; i < allocs.length; i++) out += (i === 0 ? "" : ",") + allocJson(allocs[i]);
  out += "]";
  for (const [field, value] of Object.entries(body))
    if (field !== "Allocs" && value !== undefined)
      out += `,${JSON.stringify(field)}:${JSON.stringify(value)}`;
  return `${out}}`;
}

function allocJson(alloc: unknown): string {
  const job = (alloc as { Job?: unknown } | null)?.Job;
  if (job === null || typeof job !== "object") return JSON.stringify(alloc);
  let text = jobTexts.get(job);
  if (text === undefined) {
    text = JSON.stringify(job);
    jobTexts.set(job, text);
  }
  const { Job: _job, ...fields } = alloc as Record<string, unknown>;
  const rest = JSON.stringify(fields);
  return rest === "{}" ? `{"Job":${text}}` : `${rest.slice(0, -1)},"Job":${text}}`;
}
