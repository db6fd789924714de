import { once } from "node:events";
import { type AddressInfo, createServer, type Server, Socket } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { encodeGo, encodeGoSequence, GoMsgpackReader, NEED_MORE } from "../../src/rpc/go-msgpack.ts";
import { RpcClient, RpcRemoteError, type RpcRequest, serveRpcStream } from "../../src/rpc/msgpack-rpc.ts";
import { buildGoCodec, GO_BUILD_TIMEOUT_MS, type GoCodec, hasGo, jsonLines, warnIfNoGo } from "./go-codec.ts";

type Handler = (req: RpcRequest) => Promise<unknown>;

/** A TCP server whose connections are served by serveRpcStream. */
async function listen(
  handle: Handler,
  onError?: (err: Error) => void,
  tap?: (socket: Socket) => void,
): Promise<{ server: Server; port: number }> {
  // Half-open: a peer that ends its side still gets the answers in flight.
  const server = createServer({ allowHalfOpen: true }, (socket) => {
    tap?.(socket);
    serveRpcStream(socket, handle, onError);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return { server, port: (server.address() as AddressInfo).port };
}

async function connect(port: number): Promise<Socket> {
  const socket = new Socket();
  socket.connect(port, "127.0.0.1");
  await once(socket, "connect");
  return socket;
}

/** Collects the msgpack values a socket receives. */
function collect(socket: Socket): { values: unknown[]; ended: Promise<void> } {
  const reader = new GoMsgpackReader();
  const values: unknown[] = [];
  socket.on("data", (chunk: Buffer) => {
    reader.push(chunk);
    for (let v = reader.next(); v !== NEED_MORE; v = reader.next()) values.push(v);
  });
  return { values, ended: once(socket, "close").then(() => undefined) };
}

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await sleep(10);
}

const testHandler: Handler = async (req) => {
  switch (req.method) {
    case "Test.Echo":
      return req.body;
    case "Test.Fail":
      throw new Error(`node ${(req.body as { NodeID: string }).NodeID} not found`);
    case "Test.Sleep":
      await sleep((req.body as { ms: number }).ms);
      return req.body;
    default:
      throw new Error(`rpc: can't find service ${req.method}`);
  }
};

describe("net/rpc msgpack framing", () => {
  let server: Server;
  let port: number;
  const streamErrors: Error[] = [];

  beforeAll(async () => {
    ({ server, port } = await listen(testHandler, (err) => streamErrors.push(err)));
  });
  afterAll(() => server.close());

  it("answers a request fed byte by byte with net/rpc's response header", async () => {
    const socket = await connect(port);
    const { values } = collect(socket);
    const request = encodeGoSequence([
      { Seq: 7, ServiceMethod: "Test.Echo" },
      { Node: { ID: "n1", Events: [{ Timestamp: "2023-07-01T12:00:00Z" }] } },
    ]);
    for (const b of request) socket.write(Uint8Array.of(b));
    await until(() => values.length === 2);
    expect(values).toEqual([
      { Error: "", Seq: 7, ServiceMethod: "Test.Echo" },
      { Node: { ID: "n1", Events: [{ Timestamp: "2023-07-01T12:00:00Z" }] } },
    ]);
    socket.destroy();
  });

  it("answers an error with the message and net/rpc's empty invalidRequest body", async () => {
    const socket = await connect(port);
    const received: Buffer[] = [];
    socket.on("data", (chunk: Buffer) => received.push(chunk));
    socket.write(encodeGoSequence([{ Seq: 5, ServiceMethod: "Test.Fail" }, { NodeID: "n9" }]));
    const want = encodeGoSequence([{ Error: "node n9 not found", Seq: 5, ServiceMethod: "Test.Fail" }, {}]);
    await until(() => Buffer.concat(received).length >= want.length);
    expect(Buffer.concat(received).toString("hex")).toBe(want.toString("hex"));
    expect(want.subarray(-1).toString("hex")).toBe("80");
    socket.destroy();
  });

  it("runs calls concurrently and answers each as it finishes", async () => {
    const socket = await connect(port);
    const { values } = collect(socket);
    socket.write(
      encodeGoSequence([
        { Seq: 1, ServiceMethod: "Test.Sleep" },
        { ms: 150 },
        { Seq: 2, ServiceMethod: "Test.Sleep" },
        { ms: 1 },
        { Seq: 3, ServiceMethod: "Test.Echo" },
        "third",
      ]),
    );
    await until(() => values.length === 6);
    const seqs = values.filter((_, i) => i % 2 === 0).map((h) => (h as { Seq: number }).Seq);
    expect(seqs.slice(2)).toEqual([1]);
    expect(new Set(seqs)).toEqual(new Set([1, 2, 3]));
    socket.destroy();
  });

  it("ends its side once the calls in flight are answered after the peer ends", async () => {
    const socket = await connect(port);
    const { values, ended } = collect(socket);
    socket.end(encodeGoSequence([{ Seq: 9, ServiceMethod: "Test.Sleep" }, { ms: 50 }]));
    await ended;
    expect(values).toEqual([{ Error: "", Seq: 9, ServiceMethod: "Test.Sleep" }, { ms: 50 }]);
  });

  it("drops a stream whose header is not a request", async () => {
    const before = streamErrors.length;
    const socket = await connect(port);
    const { ended } = collect(socket);
    socket.write(encodeGo(42));
    await ended;
    expect(streamErrors.length).toBe(before + 1);
    expect(streamErrors.at(-1)?.message).toMatch(/cannot decode request/);
  });

  it("matches replies to calls by Seq and rejects server errors with RpcRemoteError", async () => {
    const client = new RpcClient(await connect(port));
    const finished: string[] = [];
    const slow = client.call("Test.Sleep", { ms: 120 }).then((r) => finished.push("slow") && r);
    const fast = client.call("Test.Sleep", { ms: 1 }).then((r) => finished.push("fast") && r);
    const failed = client.call("Test.Fail", { NodeID: "n2" });
    await expect(failed).rejects.toThrow(RpcRemoteError);
    await expect(failed).rejects.toThrow("node n2 not found");
    expect(await slow).toEqual({ ms: 120 });
    expect(await fast).toEqual({ ms: 1 });
    expect(finished).toEqual(["fast", "slow"]);
    expect(await client.call("Test.Echo", undefined)).toBeNull();
    const pending = client.call("Test.Sleep", { ms: 500 });
    client.close();
    await expect(pending).rejects.toThrow("connection is shut down");
    await expect(client.call("Test.Echo", 1)).rejects.toThrow("connection is shut down");
  });

  it("rejects calls in flight when the stream closes", async () => {
    const socket = await connect(port);
    const client = new RpcClient(socket);
    const pending = client.call("Test.Sleep", { ms: 500 });
    await sleep(20);
    socket.destroy();
    await expect(pending).rejects.toThrow();
  });
});

warnIfNoGo("net/rpc msgpack tests against Go");

interface ClientResult {
  call: string;
  sent?: Record<string, unknown>;
  reply?: Record<string, unknown>;
  error?: string;
}

const TS_ALLOC = {
  ID: "a1",
  NodeID: "n1",
  Job: {
    ID: "example",
    Payload: "AP8QaGmAwA==",
    ParameterizedJob: { Payload: "optional", MetaRequired: ["who"], MetaOptional: null },
    Meta: { StartedAt: "2023-07-01T12:34:56Z" },
    TaskGroups: [
      {
        Name: "cache",
        Count: 1,
        RestartPolicy: { Attempts: 3, Interval: 1_800_000_000_000, Delay: 15_000_000_000, Mode: "fail" },
        Tasks: [
          { Name: "redis", Driver: "docker", Config: { image: "redis:7", args: [1.5, 3] }, KillTimeout: 5e9 },
        ],
      },
    ],
    Version: 300,
    ModifyIndex: 70_000,
  },
  TaskStates: {
    redis: {
      State: "dead",
      Restarts: 200,
      LastRestart: "0001-01-01T00:00:00Z",
      StartedAt: "2023-07-01T12:34:56.123456789Z",
      FinishedAt: "2023-07-01T07:00:00.000005-07:00",
      Events: [{ Type: "Started", Time: 1_688_214_896_123_456, Details: { exit_code: "0" } }],
    },
  },
  AllocStates: [{ Field: 0, Value: "lost", Time: "2024-02-29T23:59:59+05:30" }],
  DeploymentStatus: { Healthy: true, Timestamp: "2023-07-01T12:34:56Z", ModifyIndex: 12 },
  Metrics: {
    ScoreMetaData: [{ NodeID: "n1", Scores: { binpack: 0.5 }, NormScore: 1 }],
    AllocationTime: 152_000,
  },
  CreateIndex: 11,
  ModifyIndex: 12,
};

describe.skipIf(!hasGo)("net/rpc msgpack against Go's net/rpc and net-rpc-msgpackrpc", () => {
  let go: GoCodec;

  beforeAll(async () => {
    go = await buildGoCodec();
  }, GO_BUILD_TIMEOUT_MS + 30_000);
  afterAll(() => go?.dispose());

  it("serves Nomad's client codec: CallWithCodec calls in sequence, then concurrent net/rpc calls", async () => {
    const registered: unknown[] = [];
    const firstBytes: Buffer[] = [];
    const tap = (socket: Socket) => socket.once("data", (chunk: Buffer) => firstBytes.push(chunk));
    const { server, port } = await listen(
      async (req) => {
        switch (req.method) {
          case "Node.Register":
            registered.push(req.body);
            return {
              HeartbeatTTL: 18_000_000_000,
              EvalIDs: [],
              NodeModifyIndex: 129,
              LeaderRPCAddr: "127.0.0.1:4647",
              NumNodes: 1,
              Servers: [{ RPCAdvertiseAddr: "127.0.0.1:4647", Datacenter: "dc1" }],
              Index: 129,
              LastContact: 0,
              KnownLeader: true,
            };
          case "Alloc.GetAllocs":
            return { Allocs: [TS_ALLOC], Index: 12, KnownLeader: true };
          case "Node.GetClientAllocs":
            return {
              Allocs: { a1: 11, a2: 300, a3: 5_000_000_000 },
              MigrateTokens: {},
              Index: 300,
              KnownLeader: true,
            };
          case "Test.Sleep":
            await sleep((req.body as { MaxQueryTime: number }).MaxQueryTime / 1e6);
            return req.body;
          default:
            return testHandler(req);
        }
      },
      undefined,
      tap,
    );
    try {
      const results = jsonLines(await go.run(["client", `127.0.0.1:${port}`])) as ClientResult[];
      const byCall = new Map(results.map((r) => [r.call, r]));

      const register = byCall.get("Node.Register")!;
      expect(register.error).toBeUndefined();
      expect(registered[0]).toEqual(register.sent);
      expect(register.reply).toMatchObject({
        HeartbeatTTL: 18_000_000_000,
        NodeModifyIndex: 129,
        Index: 129,
      });
      expect(register.reply?.Servers).toEqual([{ RPCAdvertiseAddr: "127.0.0.1:4647", Datacenter: "dc1" }]);

      const echo = byCall.get("Test.Echo")!;
      expect(echo.reply).toEqual(echo.sent);

      const allocs = byCall.get("Alloc.GetAllocs")!;
      expect(allocs.error).toBeUndefined();
      const alloc = (allocs.reply?.Allocs as Array<Record<string, unknown>> | undefined)?.[0];
      expect(alloc).toMatchObject({
        ID: "a1",
        TaskStates: TS_ALLOC.TaskStates,
        AllocStates: TS_ALLOC.AllocStates,
        DeploymentStatus: TS_ALLOC.DeploymentStatus,
        Metrics: { ...TS_ALLOC.Metrics, NodesEvaluated: 0 },
        CreateIndex: 11,
        ModifyIndex: 12,
      });
      expect(alloc?.Job).toMatchObject({ ...TS_ALLOC.Job, SubmitTime: 0 });

      expect(byCall.get("Test.Fail")?.error).toBe("node n1 not found");
      expect(byCall.get("Node.GetClientAllocs")?.reply).toMatchObject({
        Allocs: { a1: 11, a2: 300, a3: 5_000_000_000 },
        MigrateTokens: {},
        Index: 300,
      });
      // Answered as they finished, not as they were sent (300, 10, 150 ms).
      expect(byCall.get("concurrent")?.reply).toEqual(["10ms", "150ms", "300ms"]);
      // Go's request header: rpc.Request (no codecgen'd encoder) with fields sorted, Seq as uint;
      // CallWithCodec numbers calls from 1.
      expect(firstBytes[0]?.toString("hex")).toMatch(
        new RegExp(`^${encodeGo({ Seq: 1, ServiceMethod: "Node.Register" }).toString("hex")}`),
      );
    } finally {
      server.close();
    }
  });

  it("calls Go's net/rpc server as Nomad's servers call client agents", async () => {
    const vectors = jsonLines(await go.run(["vectors"])) as Array<{
      name: string;
      json: Record<string, unknown>;
    }>;
    const nodeRegister = vectors.find((v) => v.name === "node_register")!.json;
    const child = go.spawn(["serve"]);
    try {
      const [line] = (await once(child.stdout, "data")) as [Buffer];
      const addr = /LISTEN 127\.0\.0\.1:(\d+)/.exec(line.toString())!;
      const client = new RpcClient(await connect(Number(addr[1])));

      expect(await client.call("Test.Echo", nodeRegister)).toEqual(nodeRegister);

      const single = (await client.call("Test.GetAlloc", { NodeID: "n9", MinQueryIndex: 41 })) as {
        Alloc: Record<string, unknown>;
        Index: number;
      };
      expect(single.Index).toBe(42);
      expect(single.Alloc).toMatchObject({ NodeID: "n9", ClientStatus: "running" });
      // Allocation omits its empty fields.
      expect(single.Alloc).not.toHaveProperty("DesiredDescription");
      expect(single.Alloc.TaskStates).toMatchObject({
        redis: {
          LastRestart: "0001-01-01T00:00:00Z",
          StartedAt: "2023-07-01T12:34:56.123456789Z",
          FinishedAt: "2023-07-01T07:00:00.000005-07:00",
        },
      });
      expect(single.Alloc.Job).toMatchObject({
        Payload: "AP8QaGmAwA==",
        ParameterizedJob: { Payload: "optional" },
      });

      await expect(client.call("Test.Fail", { NodeID: "n3" })).rejects.toThrow(
        new RpcRemoteError("node n3 not found"),
      );
      await expect(client.call("Nope.Nope", {})).rejects.toThrow(/can't find service Nope.Nope/);

      const finished: number[] = [];
      const sleeps = [300, 10, 150].map((ms) =>
        client.call("Test.Sleep", { MaxQueryTime: ms * 1e6 }).then((reply) => {
          finished.push(ms);
          return reply;
        }),
      );
      const replies = (await Promise.all(sleeps)) as Array<{ MaxQueryTime: number }>;
      expect(replies.map((r) => r.MaxQueryTime / 1e6)).toEqual([300, 10, 150]);
      // The call sent first answers after the one sent second: replies are
      // matched by sequence number, not by order. (Only the 10 ms and 300 ms
      // calls are compared: on a loaded machine the Go side's 150 ms and
      // 300 ms sleeps may end out of order.)
      expect(finished.indexOf(10)).toBeLessThan(finished.indexOf(300));
      client.close();
    } finally {
      child.stdin.end();
      child.kill();
    }
  });
});
