import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { type AddressInfo, createServer, Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RpcClient } from "../../src/rpc/msgpack-rpc.ts";
import { hasNomad, NOMAD_BIN } from "../compat/cli/cli-run.ts";

/**
 * The codec against a real Nomad 1.6.1 server: RPCs over its RPC port (first
 * byte 0x01, Nomad's plain net/rpc protocol), with values Nomad decodes into
 * its own structs, validates, stores, and encodes back.
 */

if (!hasNomad) console.warn(`Nomad RPC codec test skipped: no Nomad binary at ${NOMAD_BIN}`);

async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  server.close();
  return port;
}

type Call = (method: string, args: unknown) => Promise<Record<string, unknown>>;

describe.skipIf(!hasNomad)("go-msgpack and net/rpc framing against a Nomad 1.6.1 server", () => {
  let dir: string;
  let agent: ChildProcess;
  let client: RpcClient;
  let call: Call;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "chronomad-nomad-rpc-"));
    const [http, rpc, serf] = [await freePort(), await freePort(), await freePort()];
    writeFileSync(
      join(dir, "server.hcl"),
      `data_dir = "${join(dir, "data")}"
bind_addr = "127.0.0.1"
log_level = "WARN"
ports { http = ${http}
  rpc = ${rpc}
  serf = ${serf} }
advertise { http = "127.0.0.1"
  rpc = "127.0.0.1"
  serf = "127.0.0.1" }
server { enabled = true
  bootstrap_expect = 1 }
`,
    );
    agent = spawn(NOMAD_BIN, ["agent", "-config", join(dir, "server.hcl")], { stdio: "ignore" });
    for (let i = 0; ; i++) {
      const socket = new Socket();
      try {
        socket.connect(rpc, "127.0.0.1");
        await once(socket, "connect");
        socket.write(Uint8Array.of(0x01)); // pool.RpcNomad
        client = new RpcClient(socket);
        break;
      } catch (err) {
        socket.destroy();
        if (i > 100) throw err;
        await sleep(200);
      }
    }
    call = (method, args) => client.call(method, args) as Promise<Record<string, unknown>>;
    for (let i = 0; (await client.call("Status.Leader", {})) === ""; i++) {
      if (i > 150) throw new Error("no Nomad leader");
      await sleep(200);
    }
  }, 60_000);

  afterAll(async () => {
    client?.close();
    if (agent && agent.exitCode === null) {
      agent.kill("SIGINT");
      await Promise.race([once(agent, "exit"), sleep(5_000)]);
      if (agent.exitCode === null) agent.kill("SIGKILL");
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("registers a node with time fields and reads it back", async () => {
    const nodeID = randomUUID();
    const drivers = {
      docker: {
        Attributes: { "driver.docker": "true" },
        Detected: true,
        Healthy: true,
        HealthDescription: "Healthy",
        UpdateTime: "2023-07-01T12:34:56.123456789Z",
      },
      exec: {
        Attributes: null,
        Detected: true,
        Healthy: false,
        HealthDescription: "no",
        UpdateTime: "2023-07-01T07:00:00.000005-07:00",
      },
    };
    const registered = await call("Node.Register", {
      Node: {
        ID: nodeID,
        SecretID: randomUUID(),
        Datacenter: "dc1",
        Name: "ts-node",
        HTTPAddr: "127.0.0.1:4646",
        NodePool: "default",
        Attributes: { "kernel.name": "linux", "nomad.version": "1.6.1", UpdateTime: "not a time" },
        Meta: { StartedAt: "2023-07-01T12:34:56Z", Payload: "aGk=" },
        NodeResources: {
          Cpu: { CpuShares: 4000, TotalCpuCores: 2, ReservableCpuCores: [0, 1] },
          Memory: { MemoryMB: 2048 },
          Disk: { DiskMB: 10_000 },
          MinDynamicPort: 20_000,
          MaxDynamicPort: 32_000,
        },
        Drivers: drivers,
        Status: "initializing",
        SchedulingEligibility: "eligible",
      },
      Region: "global",
    });
    expect(registered.HeartbeatTTL).toBeGreaterThan(1e9);
    expect(registered.NodeModifyIndex).toBeGreaterThan(0);

    const { Node: node } = (await call("Node.GetNode", { NodeID: nodeID, Region: "global" })) as {
      Node: Record<string, unknown>;
    };
    expect(node.Drivers).toEqual(drivers);
    expect(node.Meta).toEqual({ StartedAt: "2023-07-01T12:34:56Z", Payload: "aGk=" });
    expect(node.Attributes).toMatchObject({ UpdateTime: "not a time" });
    expect(node.NodeResources).toMatchObject({ Cpu: { CpuShares: 4000, ReservableCpuCores: [0, 1] } });
    const [event] = node.Events as Array<{ Message: string; Timestamp: string }>;
    expect(event?.Message).toBe("Node registered");
    expect(Math.abs(Date.parse(event!.Timestamp) - Date.now())).toBeLessThan(60_000);
  });

  it("registers and dispatches a parameterized job: durations, driver config, payload bytes", async () => {
    const config = {
      image: "busybox",
      args: ["sleep", 1.5, 3],
      nested: { Payload: "not-bytes", StartedAt: "x" },
    };
    const registered = await call("Job.Register", {
      Job: {
        ID: "param",
        Name: "param",
        Type: "batch",
        Namespace: "default",
        Region: "global",
        Datacenters: ["dc1"],
        Priority: 50,
        ParameterizedJob: { Payload: "optional", MetaRequired: [], MetaOptional: ["who"] },
        TaskGroups: [
          {
            Name: "g",
            Count: 1,
            RestartPolicy: { Attempts: 1, Interval: 86_400_000_000_000, Delay: 15_000_000_000, Mode: "fail" },
            EphemeralDisk: { SizeMB: 300 },
            Tasks: [
              {
                Name: "t",
                Driver: "docker",
                Config: config,
                Resources: { CPU: 100, MemoryMB: 64 },
                LogConfig: { MaxFiles: 1, MaxFileSizeMB: 1 },
                KillTimeout: 5_000_000_000,
                DispatchPayload: { File: "input.txt" },
              },
            ],
          },
        ],
      },
      Region: "global",
      Namespace: "default",
    });
    expect(registered.JobModifyIndex).toBeGreaterThan(0);

    const dispatched = await call("Job.Dispatch", {
      JobID: "param",
      Payload: "AP8QaGmAwA==",
      Meta: { who: "me" },
      Region: "global",
      Namespace: "default",
    });
    const { Job: child } = (await call("Job.GetJob", {
      JobID: dispatched.DispatchedJobID,
      Region: "global",
      Namespace: "default",
    })) as { Job: Record<string, unknown> & { TaskGroups: Array<Record<string, unknown>> } };
    // Nomad stores a dispatch payload snappy-compressed: a literal of the 7 bytes sent.
    expect(Buffer.from(child.Payload as string, "base64").toString("hex")).toBe("071800ff10686980c0");
    expect(child.ParameterizedJob).toEqual({ Payload: "optional", MetaRequired: [], MetaOptional: ["who"] });
    expect(child.Dispatched).toBe(true);
    const group = child.TaskGroups[0]!;
    expect(group.RestartPolicy).toEqual({
      Attempts: 1,
      Interval: 86_400_000_000_000,
      Delay: 15_000_000_000,
      Mode: "fail",
    });
    const [task] = group.Tasks as Array<Record<string, unknown>>;
    expect(task?.Config).toEqual(config);
    expect(task?.KillTimeout).toBe(5_000_000_000);
  });
});
