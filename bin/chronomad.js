#!/usr/bin/env -S node --max-semi-space-size=32
// The V8 flag above, and why: src/cli/node-flags.ts.
// The CLI is written in TypeScript and run through tsx's loader, so `npm ci`
// is the only set-up step: there is no build output to keep in sync.
import { register } from "tsx/esm/api";

// msgpackr's native string extractor pays a call per record that only large
// strings repay, and the load benchmark ran several times slower with it
// (docs/architecture.md "What the burst allocates"): not loaded.
// src/codec/string-extractor.ts installs the codec's own extractor instead,
// in every thread that imports the codec. Read once, when msgpackr loads.
process.env.MSGPACKR_NATIVE_ACCELERATION_DISABLED ??= "true";

register();
const { main } = await import("../src/cli/main.ts");
process.exitCode = await main(process.argv.slice(2));
