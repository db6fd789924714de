import { register } from "tsx/esm/api";

process.env.MSGPACKR_NATIVE_ACCELERATION_DISABLED ??= "true";
register();
const { benchHeartbeats } = await import("/work/main/src/bench/heartbeat-bench.ts");
const r = await benchHeartbeats({ concurrency: 8, nodes: 5000, durationMs: 5000 });
console.log(JSON.stringify(r));
