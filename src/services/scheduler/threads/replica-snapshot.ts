import { readFile } from "node:fs/promises";
import type { Logger } from "pino";
import { unpackPlain } from "../../../codec/envelope-codec.ts";
import { type SnapshotData, SnapshotFile, snapshotFrames } from "../../../store/snapshot-file.ts";

/**
 * The main store's snapshots, read by a replica that keeps only some
 * tables: the file is checked whole (its SHA-256), but the row frames of the
 * other tables are skipped undecoded, so the audit trail and the rest never
 * reach the thread's heap. Same layout as SnapshotFile writes (magic, then
 * length-prefixed msgpack frames: a header, row chunks per table, the
 * digest); a replica test loads what SnapshotFile.save wrote.
 */
export class ReplicaSnapshotFile extends SnapshotFile {
  constructor(
    dir: string,
    private readonly log: Logger,
    private readonly tables: ReadonlySet<string>,
  ) {
    super(dir, log);
  }

  override save(): Promise<void> {
    return Promise.reject(new Error("a scheduler replica never writes snapshots"));
  }

  override async load(atOrBefore = Number.POSITIVE_INFINITY): Promise<SnapshotData | undefined> {
    for (const index of await this.indexes()) {
      if (index > atOrBefore) continue;
      const path = this.pathOf(index);
      try {
        return decodeTables(await readFile(path), this.tables);
      } catch (err) {
        // Pruned by the main store since it was listed, or damaged: an older one, or the log, will do.
        if ((err as NodeJS.ErrnoException).code === "ENOENT") continue;
        this.log.warn({ path, reason: (err as Error).message }, "replica ignoring unusable snapshot");
      }
    }
    return undefined;
  }
}

/** Decodes the rows of `wanted` tables only; the others come back empty (their projections are not replicated). */
export function decodeTables(bytes: Buffer, wanted: ReadonlySet<string>): SnapshotData {
  const { header, rowFrames } = snapshotFrames(bytes);
  let next = 0;
  const jobs = new SharedJobs();
  const projections = header.projections.map((p) => ({
    name: p.name,
    version: p.version,
    tables: p.tables.map((t) => {
      const rows: unknown[] = [];
      const keep = wanted.has(t.name);
      for (let seen = 0; seen < t.count; ) {
        const f = rowFrames[next++];
        if (!f) throw new Error(`table ${t.name}: rows missing`);
        if (keep) {
          const chunk = unpackPlain(f) as unknown[];
          if (t.name === "job_versions") for (const r of chunk) jobs.seed(r as JobLike);
          for (const r of chunk) rows.push(t.name === "allocs" ? jobs.share(r as AllocLike) : r);
          seen += chunk.length;
        } else {
          seen += arrayLength(f);
        }
      }
      return { name: t.name, index: t.index, rows };
    }),
  }));
  return { index: header.index, projections };
}

/** The item count of the msgpack array a row frame holds, from its header alone. */
function arrayLength(body: Buffer): number {
  const b = body[0];
  if (b === undefined) throw new Error("empty row frame");
  if (b >= 0x90 && b <= 0x9f) return b & 0x0f;
  if (b === 0xdc) return body.readUInt16BE(1);
  if (b === 0xdd) return body.readUInt32BE(1);
  throw new Error(`row frame is not an array (0x${b.toString(16)})`);
}

interface JobLike {
  readonly Namespace: string;
  readonly ID: string;
  readonly Version: number;
}

interface AllocLike {
  readonly Job: JobLike | null;
}

/**
 * In the live tables every allocation of a job version holds the version's
 * row itself; a snapshot writes that job out with each allocation, and
 * decoding it gives each its own copy (a 1,000-allocation job, a thousand
 * copies). Allocations get back one shared object per distinct job, only
 * where the contents are the same field for field, in the same key order,
 * so every row encodes (and hashes) exactly as it was written.
 */
class SharedJobs {
  private readonly byVersion = new Map<string, JobLike[]>();

  seed(job: JobLike): void {
    this.candidates(job).push(job);
  }

  share<R extends AllocLike>(alloc: R): R {
    const job = alloc.Job;
    if (!job || typeof job !== "object") return alloc;
    const list = this.candidates(job);
    const same = list.find((c) => sameValue(c, job));
    if (!same) {
      list.push(job);
      return alloc;
    }
    return same === job ? alloc : { ...alloc, Job: same };
  }

  private candidates(job: JobLike): JobLike[] {
    const key = `${job.Namespace}\u0000${job.ID}\u0000${job.Version}`;
    let list = this.byVersion.get(key);
    if (!list) {
      list = [];
      this.byVersion.set(key, list);
    }
    return list;
  }
}

/** Equal as msgpack would write them: same types, same values, same keys in the same order. */
function sameValue(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const y = b as unknown[];
    if (a.length !== y.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameValue(a[i], y[i])) return false;
    return true;
  }
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  const kx = Object.keys(x);
  const ky = Object.keys(y);
  if (kx.length !== ky.length) return false;
  for (let i = 0; i < kx.length; i++) {
    const k = kx[i]!;
    if (k !== ky[i] || !sameValue(x[k], y[k])) return false;
  }
  return true;
}
