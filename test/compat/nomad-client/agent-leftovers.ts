import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, readlinkSync } from "node:fs";

/*
 * What a Nomad client agent leaves behind when it stops: a client agent
 * leaves its tasks running (they outlive it by design), each in its own
 * session, and as root it leaves a tmpfs mounted on every task's secrets/
 * and private/. Tests (client-agent.ts) and the api suite's shim
 * (nomad-shim/real-client-agent.ts) clean up with these. No vitest here:
 * the shim is bundled and runs without it.
 */

/**
 * Kills the processes that belong to the data dir: executors name it on
 * their command line, tasks run in a directory under it or carry it in
 * their environment (NOMAD_ALLOC_DIR and friends), and log monitors, which
 * show none of that, hold its log files open.
 */
export function killLeftovers(dataDir: string): number[] {
  const killed: number[] = [];
  let pids: string[];
  try {
    pids = readdirSync("/proc").filter((p) => /^\d+$/.test(p));
  } catch {
    return killed;
  }
  for (const p of pids) {
    const pid = Number(p);
    if (pid === process.pid) continue;
    if (!mentions(pid, dataDir) && !holdsFileUnder(pid, dataDir)) continue;
    try {
      process.kill(pid, "SIGKILL");
      killed.push(pid);
    } catch {
      // Gone already, or not ours to signal.
    }
  }
  return killed;
}

function mentions(pid: number, dir: string): boolean {
  const read = (f: string) => {
    try {
      return readFileSync(`/proc/${pid}/${f}`, "utf8");
    } catch {
      return "";
    }
  };
  let cwd = "";
  try {
    cwd = readlinkSync(`/proc/${pid}/cwd`);
  } catch {
    // An exited process, or another user's.
  }
  return (
    cwd === dir || cwd.startsWith(`${dir}/`) || read("cmdline").includes(dir) || read("environ").includes(dir)
  );
}

function holdsFileUnder(pid: number, dir: string): boolean {
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return false;
  }
  return fds.some((fd) => {
    try {
      return readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith(`${dir}/`);
    } catch {
      return false;
    }
  });
}

/** Unmounts every mount point under `dir`, deepest first, so the dir can be removed. */
export function unmountUnder(dir: string): void {
  let mounts: string[];
  try {
    mounts = readFileSync("/proc/self/mounts", "utf8")
      .split("\n")
      // The mount point field escapes spaces and the like as octal (\040).
      .map((line) =>
        (line.split(" ")[1] ?? "").replace(/\\([0-7]{3})/g, (_, o: string) =>
          String.fromCharCode(Number.parseInt(o, 8)),
        ),
      )
      .filter((m) => m.startsWith(`${dir}/`));
  } catch {
    return;
  }
  for (const m of mounts.sort((a, b) => b.length - a.length))
    spawnSync("umount", ["-l", m], { stdio: "ignore" });
}
