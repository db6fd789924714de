import { randomUUID } from "node:crypto";
import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { encodeGo } from "../../src/rpc/go-msgpack.ts";
import { GoValueReader } from "../../src/rpc/go-value-reader.ts";
import { RpcClient, RpcRemoteError } from "../../src/rpc/msgpack-rpc.ts";
import { RPC_TYPE } from "../../src/rpc/rpc-protocol.ts";
import { YamuxSession } from "../../src/rpc/yamux/session.ts";
import { VirtualClock } from "../../src/util/clock.ts";
import { startTestServer, type TestServer } from "../server-harness.ts";

let server: TestServer;
const sockets: Socket[] = [];

beforeAll(async () => {
  // Virtual time: no heartbeat deadline passes while the test runs.
  server = await startTestServer({
    args: ["--rpc-handshake-timeout", "300ms", "--rpc-max-conns-per-client", "8"],
    deps: { clock: new VirtualClock() },
  });
});

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await server?.stop();
});

/** A TCP connection to the RPC port that has sent `firstByte`. */
async function dial(firstByte?: number): Promise<Socket> {
  const [host, port] = splitAddr(server.rpcAddress);
  const socket = connect({ host, port });
  sockets.push(socket);
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  if (firstByte !== undefined) socket.write(Buffer.from([firstByte]));
  return socket;
}

function splitAddr(addr: string): [string, number] {
  const i = addr.lastIndexOf(":");
  return [addr.slice(0, i), Number(addr.slice(i + 1))];
}

function closed(socket: Socket): Promise<void> {
  if (socket.destroyed) return Promise.resolve();
  return new Promise((resolve) => socket.once("close", () => resolve()));
}

function nodeBody(id: string, secret: string) {
  return {
    Node: {
      ID: id,
      SecretID: secret,
      Datacenter: "dc1",
      Name: `rpc-${id.slice(0, 8)}`,
      Attributes: { "kernel.name": "linux", "nomad.version": "1.6.1" },
      Status: "initializing",
    },
    Region: "global",
    AuthToken: secret,
  };
}

async function metric(name: string): Promise<string[]> {
  const text = await (await server.call("/v1/metrics?format=prometheus")).text();
  return text.split("\n").filter((l) => l.startsWith(name));
}

describe("Nomad's RPC port", () => {
  it("serves net/rpc on a plain connection (first byte 0x01): Status.*, and Node.Register through the client RPC route", async () => {
    const rpc = new RpcClient(await dial(RPC_TYPE.nomad));
    expect(await rpc.call("Status.Ping", {})).toEqual({});
    expect(await rpc.call("Status.Leader", {})).toBe(server.rpcAddress);
    expect(await rpc.call("Status.Peers", {})).toEqual([server.rpcAddress]);
    expect(await rpc.call("Region.List", {})).toEqual(["global"]);

    const id = randomUUID();
    const reply = (await rpc.call("Node.Register", nodeBody(id, randomUUID()))) as Record<string, unknown>;
    expect(reply.HeartbeatTTL).toBeGreaterThan(0);
    // Clients dial these: the RPC address, not the HTTP one.
    expect(reply.LeaderRPCAddr).toBe(server.rpcAddress);
    expect(reply.Servers).toEqual([
      { RPCAdvertiseAddr: server.rpcAddress, RPCMajorVersion: 0, RPCMinorVersion: 0, Datacenter: "dc1" },
    ]);
    const node = (await (await server.call(`/v1/node/${id}`)).json()) as Record<string, unknown>;
    expect(node.Status).toBe("initializing");
    rpc.close();
  });

  it("answers an RPC chronomad does not serve with Go net/rpc's words, and counts it by name", async () => {
    const rpc = new RpcClient(await dial(RPC_TYPE.nomad));
    await expect(rpc.call("Node.DeriveVaultToken", {})).rejects.toThrow(
      new RpcRemoteError("rpc: can't find method Node.DeriveVaultToken"),
    );
    await expect(rpc.call("Consul.Whatever", {})).rejects.toThrow("rpc: can't find service Consul.Whatever");
    // The stream stays usable after an error, as Go's net/rpc keeps it.
    expect(await rpc.call("Status.Ping", {})).toEqual({});
    rpc.close();
    expect(await metric("chronomad_rpc_unknown_method")).toEqual(
      expect.arrayContaining([expect.stringMatching(/method="Node\.DeriveVaultToken"\} 1$/)]),
    );
  });

  it("carries the route's refusal as the RPC error, writing nothing", async () => {
    const rpc = new RpcClient(await dial(RPC_TYPE.nomad));
    const before = server.log.lastIndex();
    await expect(rpc.call("Node.Register", { Node: null })).rejects.toThrow(
      "missing node for client registration",
    );
    await expect(rpc.call("Node.UpdateStatus", { NodeID: randomUUID(), Status: "ready" })).rejects.toThrow(
      "node not found",
    );
    expect(server.log.lastIndex()).toBe(before);
    rpc.close();
  });

  it("runs a yamux session (0x06) whose streams carry calls, and records the session of the node that registered on it", async () => {
    const socket = await dial(RPC_TYPE.multiplexV2);
    const session = YamuxSession.client(socket, { onStream: (s) => s.destroy() });
    const open = async () => {
      const stream = await session.open();
      stream.on("error", () => {});
      stream.write(Buffer.from([RPC_TYPE.nomad]));
      return new RpcClient(stream);
    };
    const [a, b] = [await open(), await open()];
    const id = randomUUID();
    const secret = randomUUID();
    expect(server.http.hasRoute).toBeDefined();
    await a.call("Node.Register", nodeBody(id, secret));
    const status = (await b.call("Node.UpdateStatus", {
      NodeID: id,
      Status: "ready",
      AuthToken: secret,
    })) as Record<string, unknown>;
    expect(status.HeartbeatTTL).toBeGreaterThan(0);
    expect(await metric("chronomad_rpc_client_nodes")).toEqual([expect.stringMatching(/ [1-9]\d*$/)]);
    a.close();
    b.close();
    session.close();
    await session.done;
  });

  it("acknowledges a streaming RPC (0x05) with Nomad's unknown-method error", async () => {
    const socket = await dial(RPC_TYPE.streaming);
    socket.write(encodeGo({ Method: "FileSystem.Logs" }));
    const ack = await new GoValueReader(socket).next();
    expect(ack).toEqual({ Error: 'Unknown rpc method: "FileSystem.Logs"' });
  });

  it("closes TLS and Raft connections, and one that sends nothing within rpc_handshake_timeout", async () => {
    await closed(await dial(RPC_TYPE.tls));
    await closed(await dial(RPC_TYPE.raft));
    await closed(await dial());
  });

  it("closes a client's connections past rpc_max_conns_per_client", async () => {
    const held = await Promise.all(Array.from({ length: 8 }, () => dial(RPC_TYPE.nomad)));
    const extra = await dial(RPC_TYPE.nomad);
    await closed(extra);
    for (const s of held) s.destroy();
  });
});
