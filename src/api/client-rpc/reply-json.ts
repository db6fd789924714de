import { SignedAlloc } from "../../identity/alloc-identities.ts";

/**
 * A client RPC's reply as JSON, each allocation written out field by field
 * so that what several allocations share is serialized once. Alloc.GetAllocs
 * answers with whole allocations, each carrying its job (Nomad's client runs
 * what the job says); the allocations of one job version share one job row,
 * and those of one task group version share their resource objects
 * (projections/resources.ts groupAllocation): at 5,000 nodes a placement
 * burst serialized the same few jobs fifty thousand times, half of every
 * reply's bytes. Rows are never changed once stored, so the text of a shared
 * object stays right for as long as the object lives.
 *
 * The text is byte for byte what JSON.stringify gives for the same
 * allocation with its job moved last (and SignedIdentities, when it has
 * some, just before it).
 */
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

/** Texts of jobs and of resource objects by object: each met again is shared by allocations. */
const sharedTexts = new WeakMap<object, string | typeof SEEN_ONCE>();
const SEEN_ONCE = 0;

/**
 * The fields whose objects are shared by many allocations: a text is kept for
 * those only, and only once an object is met a second time (an allocation
 * that reserved ports has resource objects of its own, which no other
 * allocation will ask for).
 */
const SHARED_FIELDS: ReadonlySet<string> = new Set([
  "Resources",
  "SharedResources",
  "TaskResources",
  "AllocatedResources",
]);

function allocJson(alloc: unknown): string {
  if (alloc instanceof SignedAlloc) return rowJson(alloc.row, alloc.identities);
  if (alloc === null || typeof alloc !== "object" || Array.isArray(alloc)) {
    // Inside an array JSON.stringify writes null for what it leaves out elsewhere.
    return JSON.stringify(alloc) ?? "null";
  }
  return rowJson(alloc, undefined);
}

function rowJson(alloc: object, identities: object | undefined): string {
  const row = alloc as Readonly<Record<string, unknown>>;
  // An object that serializes itself is left to JSON.stringify (rows are plain data and never do).
  if (typeof row.toJSON === "function") {
    return JSON.stringify(identities === undefined ? row : { ...row, SignedIdentities: identities });
  }
  const job = row.Job;
  const jobLast = job !== null && typeof job === "object";
  let out = "{";
  let identitiesOut = identities === undefined;
  for (const field of Object.keys(row)) {
    let text: string | undefined;
    if (field === "Job" && jobLast) continue;
    if (field === "SignedIdentities" && identities !== undefined) {
      text = JSON.stringify(identities);
      identitiesOut = true;
    } else {
      text = valueJson(row[field], SHARED_FIELDS.has(field));
    }
    if (text === undefined) continue;
    out += (out.length === 1 ? "" : ",") + fieldName(field) + text;
  }
  if (!identitiesOut) out += `${out.length === 1 ? "" : ","}"SignedIdentities":${JSON.stringify(identities)}`;
  if (jobLast) out += `${out.length === 1 ? "" : ","}"Job":${sharedText(job, true)}`;
  return `${out}}`;
}

/**
 * A string that JSON.stringify writes as it is between quotes: nothing to
 * escape (quotes, backslashes, control characters) and no surrogate (a lone
 * one is escaped; pairs are left to JSON.stringify too).
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters JSON escapes are what it looks for.
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/** JSON.stringify(value) for one field's value; undefined for what it leaves out. */
function valueJson(value: unknown, shared: boolean): string | undefined {
  switch (typeof value) {
    case "string":
      return NEEDS_ESCAPE.test(value) ? JSON.stringify(value) : `"${value}"`;
    case "number":
      // What JSON.stringify writes: the number's own text, null if not finite.
      return Number.isFinite(value) ? String(value) : "null";
    case "boolean":
      return value ? "true" : "false";
    case "object":
      if (value === null) return "null";
      return shared ? sharedText(value, false) : JSON.stringify(value);
    default:
      return JSON.stringify(value);
  }
}

/**
 * The text of an object other allocations share, kept from the first time
 * it is met when `surely` (a job row: every allocation of its version has
 * it), from the second otherwise.
 */
function sharedText(value: object, surely: boolean): string {
  const kept = sharedTexts.get(value);
  if (typeof kept === "string") return kept;
  const text = JSON.stringify(value);
  sharedTexts.set(value, kept === undefined && !surely ? SEEN_ONCE : text);
  return text;
}

/** `"Field":` for each field name of an allocation (a few dozen, the same in every row). */
const fieldNames = new Map<string, string>();
const FIELD_NAMES_KEPT = 256;

function fieldName(field: string): string {
  let text = fieldNames.get(field);
  if (text === undefined) {
    text = `${JSON.stringify(field)}:`;
    if (fieldNames.size < FIELD_NAMES_KEPT) fieldNames.set(field, text);
  }
  return text;
}
