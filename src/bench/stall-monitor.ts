export interface StallMonitor {
  /** Stops watching; resolves to the longest the event loop was held, in ms. */
  stop(): Promise<number>;
}

/**
 * The longest stretch the event loop could not run a 1 ms timer while
 * watched: what a heartbeat arriving then would wait. Measured as the gap
 * between ticks, the last gap closed at stop() (a stall that ends just
 * before stop() counts; `perf_hooks.monitorEventLoopDelay` can miss that one).
 */
export async function startStallMonitor(): Promise<StallMonitor> {
  let last = performance.now();
  let longest = 0;
  const note = () => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
  };
  const timer = setInterval(note, 1);
  await new Promise((r) => setTimeout(r, 2));
  longest = 0;
  last = performance.now();
  return {
    async stop() {
      note();
      clearInterval(timer);
      // A 1 ms timer comes back after about 1 ms when nothing holds the loop: that much is not a stall.
      return Math.max(0, longest - 1);
    },
  };
}
