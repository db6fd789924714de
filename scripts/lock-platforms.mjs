#!/usr/bin/env node
// Adds lock entries for platform builds that the npm registry reachable here
// does not serve (biome, rollup, esbuild, msgpackr-extract for other OSes and
// CPUs). Without them `npm ci` refuses the lock as out of sync. Each entry
// carries the os/cpu/libc its name states, so npm never installs it where it
// does not belong. Run after any `npm install` that changes the lock:
//   npm install && node scripts/lock-platforms.mjs
import { readFileSync, writeFileSync } from "node:fs";

const path = new URL("../package-lock.json", import.meta.url);
const lock = JSON.parse(readFileSync(path, "utf8"));
const packages = lock.packages;

const OS = [
  "android",
  "darwin",
  "freebsd",
  "linux",
  "netbsd",
  "openbsd",
  "openharmony",
  "sunos",
  "win32",
  "aix",
  "cygwin",
];
const CPU = [
  "arm64",
  "arm",
  "ia32",
  "x64",
  "loong64",
  "mips64el",
  "ppc64",
  "riscv64",
  "s390x",
  "wasm32",
  "x32",
];

function platformOf(name) {
  const parts = name.split("/").pop().split("-");
  const os = OS.find((o) => parts.includes(o));
  const cpu = CPU.find(
    (c) => parts.includes(c) || parts.some((p) => p.startsWith(c) && /^(arm64|arm|x64)/.test(p)),
  );
  const libc = parts.some((p) => p.startsWith("musl"))
    ? "musl"
    : parts.some((p) => p.startsWith("gnu"))
      ? "glibc"
      : undefined;
  return { os, cpu, libc };
}

let added = 0;
for (const [where, pkg] of Object.entries(packages)) {
  for (const [dep, spec] of Object.entries(pkg.optionalDependencies ?? {})) {
    const key = `node_modules/${dep}`;
    if (packages[key] || packages[`${where}/${key}`]) continue;
    const { os, cpu, libc } = platformOf(dep);
    if (!os && !cpu) continue; // not a platform build: leave npm's own choice alone
    const entry = { version: String(spec).replace(/^[\^~=]/, "") };
    if (cpu) entry.cpu = [cpu];
    if (pkg.dev) entry.dev = true;
    if (libc) entry.libc = [libc];
    entry.optional = true;
    if (os) entry.os = [os];
    packages[key] = entry;
    added++;
  }
}
const sorted = Object.fromEntries(
  Object.entries(packages).sort(([a], [b]) => (a === "" ? -1 : b === "" ? 1 : a < b ? -1 : 1)),
);
lock.packages = sorted;
writeFileSync(path, `${JSON.stringify(lock, null, 2)}\n`);
process.stdout.write(`lock-platforms: added ${added} platform entries\n`);
