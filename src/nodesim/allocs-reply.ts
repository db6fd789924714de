/**
 * Alloc.GetAllocs' JSON reply, parsed with each allocation's job parsed
 * once per distinct text: every allocation carries its whole job (a third
 * of the reply's bytes), the same few jobs for the tens of thousands of
 * allocations of a placement burst, and their parse was a large part of the
 * simulator's JSON.parse time and garbage. The server writes each job's
 * text last in its allocation and byte for byte the same for one job
 * version (api/client-rpc/reply-json.ts), so a text seen before is found
 * with one comparison and its parsed object shared. Readers of the result
 * must not change a job (simAllocSpec only reads).
 *
 * An allocation's fields that simAllocSpec never reads and that parse into
 * objects of many fields (its placement's Metrics, the legacy Resources and
 * TaskResources) are not parsed: null in the result. Their objects were
 * garbage the moment the reply was read; skipping their text costs about
 * what parsing it did. SignedIdentities, one long string a task, is parsed
 * (JSON.parse copies a string faster than objectEnd walks it).
 */

/**
 * The keys looked for, `"Job":{` and the like, without their opening quote:
 * Buffer.indexOf finds a needle's first byte with memchr, and in JSON a
 * quote is everywhere (a search for `"Job":{` took 1.9 µs in a 3 KB
 * allocation, one for `Job":{` 0.2 µs). keyAt checks the quote.
 */
const JOB_KEY = Buffer.from('Job":{');
/** In the order the server writes them (api/client-rpc/reply-json.ts), all before the job. */
const UNREAD_FIELDS = ["Resources", "TaskResources", "Metrics"] as const;
const UNREAD_KEYS = UNREAD_FIELDS.map((f) => Buffer.from(`${f}":{`));
/** What an unread field's object is replaced by in the text parsed, checked for after the parse. */
const UNREAD_MARK = "0";
/** Texts kept are looked up by their first bytes (a job's ID is in them). */
const KEY_LENGTH = 64;
const TEXTS_KEPT = 512;

interface KnownJob {
  readonly text: Buffer;
  readonly job: unknown;
}

/** Jobs by text, for one simulator: bounded, emptied when full. */
export class JobTexts {
  private readonly byKey = new Map<string, KnownJob[]>();
  private count = 0;
  private last: KnownJob | undefined;

  /** The known job whose text starts at `at` in `bytes`. */
  match(bytes: Buffer, at: number): KnownJob | undefined {
    const last = this.last;
    if (last && startsWith(bytes, at, last.text)) return last;
    const list = this.byKey.get(bytes.toString("latin1", at, at + KEY_LENGTH));
    if (!list) return undefined;
    for (const known of list) {
      if (startsWith(bytes, at, known.text)) {
        this.last = known;
        return known;
      }
    }
    return undefined;
  }

  add(text: Buffer, job: unknown): void {
    if (this.count >= TEXTS_KEPT) {
      this.byKey.clear();
      this.count = 0;
    }
    const known = { text, job };
    const key = text.toString("latin1", 0, KEY_LENGTH);
    const list = this.byKey.get(key);
    if (list) list.push(known);
    else this.byKey.set(key, [known]);
    this.count++;
    this.last = known;
  }
}

/** Whether `bytes` has `text` at `at` (a memcmp). */
const startsWith = (bytes: Buffer, at: number, text: Buffer) =>
  at + text.length <= bytes.length && bytes.compare(text, 0, text.length, at, at + text.length) === 0;

/**
 * JSON.parse of an Alloc.GetAllocs reply's UTF-8 bytes, but for the unread
 * fields (null). Each job's text is replaced by its allocation's position
 * before the parse and its object set after, each unread field's object by
 * a mark checked after; anything unexpected (a "Job" key elsewhere, a mark
 * that is not an allocation's own field, a text that is not JSON) falls
 * back to a plain parse of the whole.
 */
export function parseAllocsReply(bytes: Buffer, jobs: JobTexts): unknown {
  const found: unknown[] = [];
  /** For each allocation, a bit for each unread field left out. */
  const left: number[] = [];
  /** Where each unread field's key is next at or after `from`; -1: nowhere further. */
  const next = UNREAD_KEYS.map(() => -2);
  let out = "";
  let from = 0;
  let at = keyAt(bytes, JOB_KEY, 0);
  while (at >= 0) {
    // The allocation's own fields, before its job: its unread objects left out.
    let bits = 0;
    for (let k = 0; k < UNREAD_KEYS.length; k++) {
      const key = UNREAD_KEYS[k]!;
      if (next[k]! !== -1 && next[k]! < from) next[k] = keyAt(bytes, key, from);
      const keyPos = next[k]!;
      if (keyPos < from || keyPos >= at) continue;
      const open = keyPos + key.length;
      const close = objectEnd(bytes, open);
      if (close < 0 || close > at) return plain(bytes);
      out += bytes.toString("utf8", from, open) + UNREAD_MARK;
      from = close;
      bits |= 1 << k;
    }
    left.push(bits);
    const start = at + JOB_KEY.length;
    let end: number;
    const known = jobs.match(bytes, start);
    if (known) {
      end = start + known.text.length;
      found.push(known.job);
    } else {
      end = objectEnd(bytes, start);
      if (end < 0) return plain(bytes);
      // A copy: the reply's buffer is not kept alive by what is kept of it.
      const jobText = Buffer.from(bytes.subarray(start, end));
      let job: unknown;
      try {
        job = JSON.parse(jobText.toString("utf8"));
      } catch {
        return plain(bytes);
      }
      jobs.add(jobText, job);
      found.push(job);
    }
    out += bytes.toString("utf8", from, start) + String(found.length - 1);
    from = end;
    at = keyAt(bytes, JOB_KEY, end);
  }
  if (found.length === 0) return plain(bytes);
  out += bytes.toString("utf8", from);
  let reply: unknown;
  try {
    reply = JSON.parse(out);
  } catch {
    return plain(bytes);
  }
  const allocs = (reply as { Allocs?: unknown } | null)?.Allocs;
  if (!Array.isArray(allocs) || allocs.length !== found.length) return plain(bytes);
  for (let i = 0; i < allocs.length; i++) {
    const alloc = allocs[i] as Record<string, unknown> | null;
    if (alloc === null || typeof alloc !== "object" || alloc.Job !== i) return plain(bytes);
    const bits = left[i]!;
    for (let k = 0; k < UNREAD_FIELDS.length; k++) {
      if (bits & (1 << k) && alloc[UNREAD_FIELDS[k]!] !== 0) return plain(bytes);
    }
  }
  for (let i = 0; i < allocs.length; i++) {
    const alloc = allocs[i] as Record<string, unknown>;
    alloc.Job = found[i];
    dropUnread(alloc);
  }
  return reply;
}

/** The reply as JSON.parse gives it, its unread fields null as the fast path's are. */
function plain(bytes: Buffer): unknown {
  const reply = JSON.parse(bytes.toString("utf8")) as { Allocs?: unknown } | null;
  const allocs = reply?.Allocs;
  if (Array.isArray(allocs)) {
    for (const alloc of allocs) {
      if (alloc !== null && typeof alloc === "object") dropUnread(alloc as Record<string, unknown>);
    }
  }
  return reply;
}

/** Its unread fields' objects (or marks) null, however they were read. */
function dropUnread(alloc: Record<string, unknown>): void {
  for (const f of UNREAD_FIELDS) {
    const v = alloc[f];
    if (v === 0 || (v !== null && typeof v === "object")) alloc[f] = null;
  }
}

const QUOTE = 0x22;

const OPEN_BRACE = 0x7b;
const BACKSLASH = 0x5c;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/** Where the JSON object opening at `start` ends (the index after its brace); -1 if it does not. */
function objectEnd(bytes: Buffer, start: number): number {
  let depth = 0;
  for (let i = start; i < bytes.length; i++) {
    const c = bytes[i];
    if (c === QUOTE) {
      for (i++; i < bytes.length; i++) {
        const d = bytes[i];
        if (d === BACKSLASH) i++;
        else if (d === QUOTE) break;
      }
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) depth++;
    else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return -1;
}

/** Where `"` and then `key` (a key's text without its opening quote) are, at or after `from`; -1: nowhere. */
function keyAt(bytes: Buffer, key: Buffer, from: number): number {
  let i = bytes.indexOf(key, from + 1);
  while (i > 0 && bytes[i - 1] !== QUOTE) i = bytes.indexOf(key, i + 1);
  return i < 0 ? -1 : i - 1;
}
