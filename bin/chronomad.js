#!/usr/bin/env node
// The CLI is written in TypeScript and run through tsx's loader, so `npm ci`
// is the only set-up step: there is no build output to keep in sync.
import { register } from "tsx/esm/api";

register();
const { main } = await import("../src/cli/main.ts");
process.exitCode = await main(process.argv.slice(2));
