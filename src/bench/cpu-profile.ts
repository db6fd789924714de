import { writeFile } from "node:fs/promises";
import { Session } from "node:inspector/promises";

/**
 * A V8 CPU profile of this thread from now until the returned function is
 * called, which writes it to `file` (open it in Chrome's DevTools or any
 * .cpuprofile reader). For a benchmark's measured part only: profiling the
 * whole process would mix its set-up into the figures.
 */
export async function startCpuProfile(file: string, intervalUs = 200): Promise<() => Promise<void>> {
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.setSamplingInterval", { interval: intervalUs });
  await session.post("Profiler.start");
  return async () => {
    const { profile } = await session.post("Profiler.stop");
    session.disconnect();
    await writeFile(file, JSON.stringify(profile));
  };
}
