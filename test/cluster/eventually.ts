/**
 * Retries `check` until it stops throwing, or rethrows its last error once
 * `timeoutMs` has passed. For state that converges over the network
 * (elections, replication); the timeout is a safety net, not a figure the
 * test asserts.
 */
export async function eventually<T>(
  check: () => T | Promise<T>,
  timeoutMs = 60_000,
  everyMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  }
}
