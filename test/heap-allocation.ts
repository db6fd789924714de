import { GCProfiler, getHeapStatistics } from "node:v8";

interface HeapSide {
  readonly heapStatistics: { readonly usedHeapSize: number };
}

/**
 * Counts what the V8 heap allocates from now until `stop`: what each
 * collection found in use, less what the one before it left, plus the
 * growth since the last. Collections free what they find dead, so the heap's
 * size alone would undercount.
 */
export function countHeapAllocation(): { stop(): { bytes: number; collections: number } } {
  const profiler = new GCProfiler();
  profiler.start();
  const used0 = getHeapStatistics().used_heap_size;
  return {
    stop() {
      const used1 = getHeapStatistics().used_heap_size;
      const stats = (profiler.stop()?.statistics ?? []) as { beforeGC: HeapSide; afterGC: HeapSide }[];
      let bytes = 0;
      let previous = used0;
      for (const s of stats) {
        bytes += s.beforeGC.heapStatistics.usedHeapSize - previous;
        previous = s.afterGC.heapStatistics.usedHeapSize;
      }
      bytes += used1 - previous;
      return { bytes, collections: stats.length };
    },
  };
}

/** Heap bytes allocated, collections and process CPU (µs) while `f` ran. */
export function allocatedDuring(f: () => void): { bytes: number; scavenges: number; cpuUs: number } {
  const counting = countHeapAllocation();
  const cpu0 = process.cpuUsage();
  f();
  const cpu = process.cpuUsage(cpu0);
  const { bytes, collections } = counting.stop();
  return { bytes, scavenges: collections, cpuUs: cpu.user + cpu.system };
}
