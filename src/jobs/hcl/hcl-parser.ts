import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

/**
 * HCL2 text to its JSON form, by HashiCorp's own HCL parser compiled to
 * WebAssembly (@cdktf/hcl2json). The WebAssembly module parses synchronously
 * and takes tens of milliseconds even for a small job (its first call, the
 * module's start, close to a second), so it runs in a worker thread of its
 * own: the event loop that serves heartbeats never waits on it. One worker,
 * started on first use, parses one text at a time; a parse that runs past
 * its deadline has its worker terminated (the next parse starts a fresh one).
 */

/** A syntax error, in HCL's words (`input.hcl:2,6-3,1: Invalid expression; ...`). */
export class HclSyntaxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "HclSyntaxError";
  }
}

export interface HclParserOptions {
  /** How long one parse may take, worker start included. */
  readonly timeoutMs?: number;
}

// The worker is plain CommonJS: it needs nothing of chronomad, only the package.
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const { parse } = require(workerData.hcl2json);
parentPort.on("message", ({ id, filename, text }) => {
  parse(filename, text).then(
    // As text: JSON.parse on the other side costs less than a structured clone of the object.
    (json) => parentPort.postMessage({ id, json: JSON.stringify(json) }),
    (err) => parentPort.postMessage({ id, error: String(err && err.message ? err.message : err) }),
  );
});
`;

interface Pending {
  readonly resolve: (json: unknown) => void;
  readonly reject: (err: Error) => void;
  readonly timer: NodeJS.Timeout;
}

interface Reply {
  readonly id: number;
  readonly json?: unknown;
  readonly error?: string;
}

export class HclParser {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextID = 1;
  /** Parses run one after the other: the worker is single-threaded anyway, and a deadline then times one parse. */
  private queue: Promise<unknown> = Promise.resolve();
  private readonly timeoutMs: number;

  constructor(options: HclParserOptions = {}) {
    this.timeoutMs = options.timeoutMs ?? 30_000;
  }

  /** The JSON form of `text`, or an HclSyntaxError. */
  parse(text: string, filename = "input.hcl"): Promise<unknown> {
    const run = this.queue.then(
      () => this.send(filename, text),
      () => this.send(filename, text),
    );
    this.queue = run.catch(() => undefined);
    return run;
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    this.failAll(new Error("HCL parser closed"));
    if (worker) await worker.terminate();
  }

  private send(filename: string, text: string): Promise<unknown> {
    const worker = this.ensureWorker();
    const id = this.nextID++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        // A parse that does not end holds the worker: it goes, the next parse starts another.
        if (this.worker === worker) this.worker = undefined;
        void worker.terminate();
        reject(new HclSyntaxError(`parsing took longer than ${this.timeoutMs / 1000}s`));
      }, this.timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      worker.postMessage({ id, filename, text });
    });
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    const require = createRequire(import.meta.url);
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { hcl2json: require.resolve("@cdktf/hcl2json") },
    });
    // An idle worker does not keep the process alive.
    worker.unref();
    worker.on("message", (reply: Reply) => {
      const p = this.pending.get(reply.id);
      if (!p) return;
      this.pending.delete(reply.id);
      clearTimeout(p.timer);
      if (reply.error !== undefined) p.reject(new HclSyntaxError(syntaxMessage(reply.error)));
      else p.resolve(JSON.parse(reply.json as string));
    });
    worker.on("error", (err) => {
      if (this.worker === worker) this.worker = undefined;
      this.failAll(err);
    });
    worker.on("exit", () => {
      if (this.worker === worker) this.worker = undefined;
    });
    this.worker = worker;
    return worker;
  }

  private failAll(err: Error): void {
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(err);
      this.pending.delete(id);
    }
  }
}

/** hcl2json wraps HCL's diagnostics: `parse config: [d1 d2]`; Nomad shows them one per line. */
function syntaxMessage(raw: string): string {
  const m = /^parse config: \[(.*)\]$/s.exec(raw);
  if (m) return m[1]!.replace(/\.\s+(?=input\.hcl:)/g, ".\n");
  // hcl2json's own limit: one JSON shape per block type.
  const convert = /^convert to HCL: (?:convert \w+: )*(.*)$/s.exec(raw);
  if (convert) {
    return `unsupported block layout: ${convert[1]} (chronomad's HCL parser cannot hold blocks of one type with different numbers of labels)`;
  }
  return raw;
}
