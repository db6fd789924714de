import { describe, expect, it } from "vitest";
import type { Envelope } from "../../streams/event-schema.ts";
import { startBootstrappedStore } from "../fixtures/bootstrapped-store.ts";
import { registeredBatchJob } from "../fixtures/registered-batch-job.ts";

/**
 * The figures docs/architecture.md ("Concurrent registrations and the
 * evaluation pipeline", hidden class per job row) quotes: JobRegistered
 * records of the registration benchmark's jobs (each with its evaluation)
 * appended 16 at a time to a Store over a memory log with every projection,
 * encode, decode and apply, after a warm-up. Run on demand only:
 * CHRONOMAD_REGISTER_APPLY_FIGURES=1 npx vitest run test/projections/register-apply-figures.test.ts
 */
const enabled = process.env.CHRONOMAD_REGISTER_APPLY_FIGURES === "1";
if (!enabled)
  console.warn("register apply figures skipped: set CHRONOMAD_REGISTER_APPLY_FIGURES=1 to take them");

const WARMUP = 2_000;
const JOBS = 6_000;
const BATCH = 16;
const AT = 1_763_800_000_000;

function batches(from: number, count: number): Envelope[][] {
  const out: Envelope[][] = [];
  for (let i = from; i < from + count; i += BATCH) {
    const batch: Envelope[] = [];
    for (let j = i; j < Math.min(i + BATCH, from + count); j++) {
      batch.push(registeredBatchJob(j, AT));
    }
    out.push(batch);
  }
  return out;
}

describe.runIf(enabled)("applying registrations", () => {
  it("costs this much CPU per JobRegistered record", async () => {
    const { store, tables } = await startBootstrappedStore(AT);
    const run = async (list: Envelope[][]) => {
      for (const batch of list) await store.waitFor((await store.append(batch)).last);
    };
    await run(batches(0, WARMUP));
    const measured = batches(WARMUP, JOBS);
    const cpu = process.cpuUsage();
    const started = performance.now();
    await run(measured);
    const used = process.cpuUsage(cpu);
    const wallUs = (performance.now() - started) * 1000;
    console.log(
      JSON.stringify({
        cpu_us_per_job: Math.round((used.user + used.system) / JOBS),
        wall_us_per_job: Math.round(wallUs / JOBS),
      }),
    );
    expect(tables.jobs.size).toBe(WARMUP + JOBS);
    await store.stop();
  }, 300_000);
});
