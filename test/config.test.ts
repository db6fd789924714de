import { writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig, SERVE_FLAGS, serveUsage, wantsHelp } from "../src/config.ts";
import { useTempDirs } from "./store/helpers.ts";

describe("loadConfig", () => {
  const tempDir = useTempDirs();

  it("has Nomad's defaults and the README's", async () => {
    const c = await loadConfig([], {});
    expect(c.httpAddr).toBe("127.0.0.1:4646");
    expect(c.dataDir).toBe(resolve("./data"));
    expect(c.log).toBe(`file:${resolve("./data/log")}`);
    expect(c.heartbeat).toEqual({
      minHeartbeatTtl: 10_000,
      maxHeartbeatsPerSecond: 50,
      heartbeatGrace: 10_000,
      failoverHeartbeatTtl: 300_000,
    });
    expect(c.shutdownGrace).toBe(10_000);
    expect(c.shedReadsAfterLag).toBe(500);
    expect(c.eventStreamMaxSubscribers).toBe(1024);
    expect(c.schedulerNice).toBe(0);
  });

  it("takes flags over env over the config file", async () => {
    const dir = await tempDir();
    const file = join(dir, "c.json");
    await writeFile(
      file,
      JSON.stringify({
        http_addr: "127.0.0.1:1",
        data_dir: dir,
        min_heartbeat_ttl: "20s",
        snapshot_every: 5,
      }),
    );
    const c = await loadConfig(["--config", file, "--http-addr=127.0.0.1:3"], {
      CHRONOMAD_HTTP_ADDR: "127.0.0.1:2",
      CHRONOMAD_LOG: "memory:",
    });
    expect(c.httpAddr).toBe("127.0.0.1:3");
    expect(c.log).toBe("memory:");
    expect(c.dataDir).toBe(dir);
    expect(c.snapshotEvery).toBe(5);
    expect(c.heartbeat.minHeartbeatTtl).toBe(20_000);
    expect((await loadConfig(["--shutdown-grace", "2s"], {})).shutdownGrace).toBe(2_000);
    expect((await loadConfig(["--shed-reads-after-lag", "0"], {})).shedReadsAfterLag).toBe(0);
    expect((await loadConfig([], { CHRONOMAD_SHUTDOWN_GRACE: "500ms" })).shutdownGrace).toBe(500);
  });

  it("reads the ACL settings: a boolean flag alone or with a value, ParseBool in the environment and the file", async () => {
    expect((await loadConfig([], {})).aclEnabled).toBe(false);
    const on = await loadConfig(["--acl-enabled", "--http-addr", "127.0.0.1:5"], {});
    expect(on.aclEnabled).toBe(true);
    expect(on.httpAddr).toBe("127.0.0.1:5");
    expect((await loadConfig(["--acl-enabled=false"], {})).aclEnabled).toBe(false);
    expect((await loadConfig([], { CHRONOMAD_ACL_ENABLED: "T" })).aclEnabled).toBe(true);
    const dir = await tempDir();
    const file = join(dir, "c.json");
    await writeFile(file, JSON.stringify({ acl_enabled: true, acl_token_max_expiration_ttl: "1h" }));
    const fromFile = await loadConfig(["--config", file], {});
    expect(fromFile.aclEnabled).toBe(true);
    expect(fromFile.aclTokenMaxExpirationTtl).toBe(3_600_000);
    expect(fromFile.aclTokenMinExpirationTtl).toBe(60_000);
    await expect(loadConfig(["--acl-enabled=maybe"], {})).rejects.toThrow(/must be a boolean/);
    await expect(
      loadConfig(["--acl-token-min-expiration-ttl", "2h", "--acl-token-max-expiration-ttl", "1h"], {}),
    ).rejects.toThrow(/must not exceed/);
    expect(wantsHelp(["--acl-enabled", "--help"])).toBe(true);
  });

  it("names what is wrong", async () => {
    const dir = await tempDir();
    const file = join(dir, "c.json");
    await writeFile(file, JSON.stringify({ http_adr: "x" }));
    await expect(loadConfig(["--config", file], {})).rejects.toThrow(/unknown key "http_adr"/);
    await writeFile(file, "{");
    await expect(loadConfig(["--config", file], {})).rejects.toThrow(/not valid JSON/);
    await expect(loadConfig(["--http-addr", "nope"], {})).rejects.toThrow(/host:port, not "nope"/);
    await expect(loadConfig(["--fsync", "sometimes"], {})).rejects.toThrow(/always, never/);
    await expect(loadConfig(["--snapshot-every", "-1"], {})).rejects.toThrow(/non-negative integer/);
    await expect(loadConfig(["--log"], {})).rejects.toThrow(/--log needs a value/);
    await expect(loadConfig(["--scheduler-nice", "20"], {})).rejects.toThrow(
      /scheduler_nice must be a whole number from 0 to 19/,
    );
    expect((await loadConfig(["--scheduler-nice", "5"], {})).schedulerNice).toBe(5);
  });

  it("puts Nomad's RPC port beside the HTTP port unless told otherwise", async () => {
    const defaults = await loadConfig([], {});
    expect(defaults.rpcAddr).toBe("127.0.0.1:4647");
    expect(defaults.rpcHandshakeTimeout).toBe(5_000);
    expect(defaults.rpcMaxConnsPerClient).toBe(100);
    expect((await loadConfig(["--http-addr", "0.0.0.0:8000"], {})).rpcAddr).toBe("0.0.0.0:8001");
    // Tests ask for an ephemeral HTTP port: the RPC port is ephemeral too, never a fixed one they would share.
    expect((await loadConfig(["--http-addr", "127.0.0.1:0"], {})).rpcAddr).toBe("127.0.0.1:0");
    expect((await loadConfig(["--http-addr", "[::1]:4646"], {})).rpcAddr).toBe("[::1]:4647");
    const set = await loadConfig(["--rpc-addr", "127.0.0.1:9999"], {
      CHRONOMAD_ADVERTISE_RPC_ADDR: "10.0.0.1:9999",
    });
    expect([set.rpcAddr, set.advertiseRpcAddr]).toEqual(["127.0.0.1:9999", "10.0.0.1:9999"]);
    await expect(loadConfig(["--rpc-addr", "4647"], {})).rejects.toThrow(
      /rpc_addr must be host:port, not "4647"/,
    );
    await expect(loadConfig(["--rpc-max-conns-per-client", "-1"], {})).rejects.toThrow(
      /rpc_max_conns_per_client/,
    );
  });

  it("is asked for its usage by --help or -h where a flag goes, not where a value does", () => {
    expect(wantsHelp(["--help"])).toBe(true);
    expect(wantsHelp(["-h"])).toBe(true);
    expect(wantsHelp(["--log-level", "debug", "--help"])).toBe(true);
    expect(wantsHelp(["--log-level=debug", "-h"])).toBe(true);
    expect(wantsHelp(["--server-name", "--help"])).toBe(false);
    expect(wantsHelp(["--data-dir", "x"])).toBe(false);
  });

  it("prints every flag with its environment variable, default and choices", () => {
    const usage = serveUsage();
    // A boolean flag stands alone, or takes =BOOL.
    for (const flag of SERVE_FLAGS) expect(usage).toMatch(new RegExp(`  ${flag}( |\\[=BOOL\\])`));
    expect(usage).toContain("-h, --help");
    expect(usage).toMatch(
      /--min-heartbeat-ttl DURATION +Nomad's min_heartbeat_ttl \(default 10s; env CHRONOMAD_MIN_HEARTBEAT_TTL\)/,
    );
    expect(usage).toMatch(/--fsync MODE +.*\(one of always, never; default always; env CHRONOMAD_FSYNC\)/);
  });

  it("takes its defaults from the same table the usage prints", async () => {
    const c = await loadConfig([], {});
    expect(c.snapshotEvery).toBe(100_000);
    expect(c.fsync).toBe("always");
    expect(c.logLevel).toBe("info");
    expect(c.eventBufferSize).toBe(10_000);
    expect(c.eventStreamMaxQueued).toBe(4096);
    expect(c.leaderSessionTimeout).toBe(6_000);
    expect(c.advertiseAddr).toBe("");
    expect(c.keyringKek).toBe("");
    expect(c.oidcIssuer).toBe("");
  });
});
