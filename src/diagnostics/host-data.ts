import { readFile, statfs } from "node:fs/promises";
import { hostname, machine, networkInterfaces, release, type, version } from "node:os";

/*
 * What Nomad's agent tells `nomad operator debug` about its host
 * (command/agent/host: HostData), read from the same places on Linux: the
 * kernel's names, the network interfaces, /etc/resolv.conf and /etc/hosts,
 * the environment with its secrets redacted, and the mounted file systems'
 * sizes. A file that cannot be read is reported by its error's text, as
 * Nomad's slurp does.
 */

/** api.HostData; Network is a list of string maps in Nomad too (go-sockaddr's attributes). */
export interface HostData {
  readonly OS: string;
  readonly Network: Record<string, string>[];
  readonly ResolvConf: string;
  readonly Hosts: string;
  readonly Environment: Record<string, string>;
  readonly Disk: Record<string, { DiskMB: number; UsedMB: number }>;
}

/** Nomad's DefaultEnvDenyList: redacted by name. */
const ENV_DENY = new Set([
  "CONSUL_TOKEN",
  "CONSUL_HTTP_TOKEN",
  "VAULT_TOKEN",
  "NOMAD_LICENSE",
  "AWS_ACCESS_KEY_ID",
  "AWS_SECRET_ACCESS_KEY",
  "AWS_SESSION_TOKEN",
  "GOOGLE_APPLICATION_CREDENTIALS",
]);

/**
 * Nomad redacts names holding TOKEN or SECRET; chronomad also those holding
 * PASSWORD or KEY, since its key-encryption key may come from the
 * environment and no secret is shown in clear.
 */
const SECRET_NAME = /TOKEN|SECRET|PASSWORD|KEY/;

/** File systems Nomad's mountedPaths leaves out: virtual ones, with no disk behind them. */
const VIRTUAL_FS = new Set([
  "autofs",
  "binfmt_misc",
  "cgroup",
  "debugfs",
  "devpts",
  "devtmpfs",
  "fusectl",
  "fuse.lxcfs",
  "hugetlbfs",
  "mqueue",
  "proc",
  "pstore",
  "rpc_pipefs",
  "securityfs",
  "sysfs",
  "tmpfs",
  "vboxsf",
]);

const MB = 1024 * 1024;

export async function hostData(): Promise<HostData> {
  const [resolvConf, hosts, disk] = await Promise.all([
    slurp("/etc/resolv.conf"),
    slurp("/etc/hosts"),
    diskUsage(),
  ]);
  return {
    // uname's fields in Nomad's order: machine, node name, release, system name, version.
    OS: [machine(), hostname(), release(), type(), version()].join(" "),
    Network: network(),
    ResolvConf: resolvConf,
    Hosts: hosts,
    Environment: environment(process.env),
    Disk: disk,
  };
}

export function environment(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    out[name] = ENV_DENY.has(name) || SECRET_NAME.test(name.toUpperCase()) ? "<redacted>" : value;
  }
  return out;
}

/** Each address of each interface, with the attributes of go-sockaddr's dump that Node can give. */
function network(): Record<string, string>[] {
  const out: Record<string, string>[] = [];
  for (const [name, addresses] of Object.entries(networkInterfaces())) {
    for (const a of addresses ?? []) {
      const cidr = a.cidr ?? a.address;
      out.push({
        type: a.family,
        string: cidr,
        address: a.address,
        netmask: a.netmask,
        mask_bits: cidr.includes("/") ? cidr.slice(cidr.indexOf("/") + 1) : "",
        // chronomad's: the interface the address is on, and its hardware address.
        interface: name,
        mac: a.mac,
      });
    }
  }
  return out;
}

async function diskUsage(): Promise<HostData["Disk"]> {
  const mounts = await slurp("/proc/mounts");
  const paths = mounts
    .split("\n")
    .map((line) => line.split(" "))
    .filter((f) => f.length > 2 && !VIRTUAL_FS.has(f[2]!))
    .map((f) => unescapeMount(f[1]!));
  const disk: Record<string, { DiskMB: number; UsedMB: number }> = {};
  await Promise.all(
    paths.map(async (path) => {
      try {
        const s = await statfs(path);
        const total = s.blocks * s.bsize;
        // Bavail, not bfree: what an unprivileged user can still write, as Nomad counts it.
        disk[path] = {
          DiskMB: Math.trunc(total / MB),
          UsedMB: Math.trunc((total - s.bavail * s.bsize) / MB),
        };
      } catch {
        // As Nomad: a mount that cannot be measured is left out.
      }
    }),
  );
  return disk;
}

/** /proc/mounts writes a space, tab, newline or backslash in a path as a three-digit octal escape. */
function unescapeMount(path: string): string {
  return path.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));
}

async function slurp(path: string): Promise<string> {
  try {
    return await readFile(path, "utf8");
  } catch (err) {
    return (err as Error).message;
  }
}
