/*
 * This server's own profiles in pprof's format, as Nomad's agent serves Go's
 * (command/agent/pprof): V8's sampling CPU and heap profilers, converted and
 * encoded by Datadog's @datadog/pprof, so `go tool pprof` reads them as it
 * reads a Nomad agent's. Go's other runtime profiles have no V8 counterpart.
 */

/** Go's runtime/pprof samples the CPU 100 times a second: so does V8's profiler here. */
const CPU_SAMPLE_INTERVAL_US = 10_000;
/** Go's runtime.MemProfileRate: one heap sample per 512 KiB allocated, on average. */
const HEAP_SAMPLE_BYTES = 512 * 1024;
const HEAP_STACK_DEPTH = 64;
/** The longest delay Node's timers take; a longer one fires at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Loaded on first use: a native addon (about 40 ms to load) that a server never profiled does without. */
let library: Promise<typeof import("@datadog/pprof")> | undefined;
const pprof = () => {
  library ??= import("@datadog/pprof");
  return library;
};

/** Go's pprof.Lookup names without a V8 counterpart: refused as such, not as unknown. */
const GO_ONLY_PROFILES = new Set(["goroutine", "threadcreate", "allocs", "block", "mutex"]);

/** Nomad's ErrProfileNotFound text, which its HTTP layer answers with 404. */
export class ProfileNotFound extends Error {
  constructor(profile: string) {
    super(`Pprof profile not found profile: ${profile}`);
  }
}

/** A profile Go has and V8 does not (501). */
export class ProfileNotServed extends Error {}

/** A profile's bytes and the headers Nomad's agent sends with it. */
export interface RuntimeProfile {
  readonly payload: Buffer;
  readonly headers: Record<string, string>;
}

const attachment = (name: string) => ({
  "X-Content-Type-Options": "nosniff",
  "Content-Type": "application/octet-stream",
  "Content-Disposition": `attachment; filename="${name}"`,
});

let heapSamplers = 0;

/**
 * Samples the heap from now on, as Go's runtime always does, so that a heap
 * profile shows what was allocated before it was asked for; the function it
 * returns ends this caller's share (servers in one process share the sampler).
 */
export async function sampleHeap(): Promise<() => void> {
  const { heap } = await pprof();
  if (heapSamplers++ === 0) heap.start(HEAP_SAMPLE_BYTES, HEAP_STACK_DEPTH);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    if (--heapSamplers === 0) heap.stop();
  };
}

let cpuProfiling = false;

/** A CPU profile of `seconds` (Go's pprof.StartCPUProfile: one at a time in a process). */
export async function cpuProfile(seconds: number): Promise<RuntimeProfile> {
  if (cpuProfiling) throw new Error("cpu profiling already in use");
  cpuProfiling = true;
  try {
    const { encode, time } = await pprof();
    const profile = await time.profile({
      // At least a second, as Go's; at most what a timer can wait (about 24.8 days).
      durationMillis: Math.min(Math.max(1, seconds) * 1000, MAX_TIMER_MS),
      intervalMicros: CPU_SAMPLE_INTERVAL_US,
    });
    return { payload: await encode(profile), headers: attachment("profile") };
  } finally {
    cpuProfiling = false;
  }
}

/** pprof.Lookup(name): only "heap" has a V8 counterpart (the live objects sampled since sampleHeap). */
export async function lookupProfile(name: string): Promise<RuntimeProfile> {
  if (GO_ONLY_PROFILES.has(name)) {
    throw new ProfileNotServed(
      `chronomad runs on Node.js, which has no ${name} profile: it serves heap, profile (CPU) and cmdline`,
    );
  }
  if (name !== "heap") throw new ProfileNotFound(name);
  if (heapSamplers === 0) throw new ProfileNotServed("this server does not sample its heap");
  const { encode, heap } = await pprof();
  return { payload: await encode(heap.profile()), headers: attachment("heap") };
}

/** Go's pprof.Cmdline: the command line, its arguments separated by NUL bytes. */
export function cmdline(): RuntimeProfile {
  return {
    // node's own flags too: they are part of how the server was started (--max-semi-space-size).
    payload: Buffer.from([process.argv[0], ...process.execArgv, ...process.argv.slice(1)].join("\0")),
    headers: { "X-Content-Type-Options": "nosniff", "Content-Type": "text/plain; charset=utf-8" },
  };
}
