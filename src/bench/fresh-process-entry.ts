import type { FreshCall } from "./fresh-process.ts";

/** The child side of inFreshProcess: one call, its result back over IPC, then exit. */
process.once("message", async (call: FreshCall) => {
  try {
    const mod = (await import(new URL(call.module, import.meta.url).href)) as Record<string, unknown>;
    const fn = mod[call.exported];
    if (typeof fn !== "function") throw new Error(`${call.module} exports no function ${call.exported}`);
    const args = [...call.args];
    if (call.progressAt !== undefined) {
      args[call.progressAt] = (what: string) => process.stderr.write(`bench: ${call.label}: ${what}...\n`);
    }
    const value: unknown = await fn(...args);
    process.send!({ value }, () => process.exit(0));
  } catch (err) {
    process.send!({ error: (err as Error).stack ?? String(err) }, () => process.exit(1));
  }
});
