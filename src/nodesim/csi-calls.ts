import type { Logger } from "pino";
import type { NodeVolumes, VolumeCalls } from "./alloc-volumes.ts";
import { type CSIDetachBehaviour, SIMULATED_DETACH_ERROR } from "./csi-plugins.ts";
import { type RpcCaller, RpcError } from "./rpc-client.ts";
import type { TimerQueue } from "./timer-queue.ts";

/** What the calls need of their node. */
export interface CSINode {
  readonly id: string;
  readonly name: string;
  readonly secret: string;
  readonly up: boolean;
}

interface PendingReply {
  Requests?: { RequestID: string; Namespace: string; VolumeID: string; Kind: string }[] | null;
  Index?: number;
}

const RETRY_MS = 1_000;

/**
 * A simulated node's CSI calls: the csi hook's Claim and Unpublish, and the
 * plugins' side of the server's detach calls, a long poll of
 * ClientCSI.PendingDetaches answered with ClientCSI.AckDetach (or, as the
 * behaviour says, with the plugin's error, or not at all).
 */
export class NodeCSICalls implements VolumeCalls {
  /** Detach calls answered, by how. */
  readonly answered = { acked: 0, failed: 0, ignored: 0 };
  private readonly seen = new Set<string>();
  private minIndex = 0;

  constructor(
    private readonly rpc: RpcCaller,
    private readonly timers: TimerQueue,
    private readonly node: CSINode,
    private readonly logger: Logger,
    public behaviour: CSIDetachBehaviour,
  ) {}

  get volumes(): NodeVolumes {
    return { nodeID: this.node.id, calls: this };
  }

  claim(namespace: string, body: Record<string, unknown>): Promise<string> {
    return this.send("CSIVolume.Claim", { ...body, Namespace: namespace, Region: "global" });
  }

  unpublish(namespace: string, body: Record<string, unknown>): Promise<string> {
    return this.send("CSIVolume.Unpublish", { ...body, Namespace: namespace, Region: "global" });
  }

  /** The long poll, for as long as `alive` holds. */
  async watch(alive: () => boolean, signal: AbortSignal, maxQueryTimeNs: number): Promise<void> {
    while (alive()) {
      let reply: PendingReply;
      try {
        reply = await this.rpc.call<PendingReply>(
          "ClientCSI.PendingDetaches",
          {
            NodeID: this.node.id,
            SecretID: this.node.secret,
            MinQueryIndex: this.minIndex,
            MaxQueryTime: maxQueryTimeNs,
          },
          this.node.secret,
          { blocking: true, signal },
        );
      } catch (err) {
        if (!alive()) return;
        this.logger.debug({ err, node: this.node.name }, "PendingDetaches failed; retrying");
        await new Promise<void>((resolve) => this.timers.after(RETRY_MS, resolve));
        continue;
      }
      if (!alive()) return;
      const requests = reply.Requests ?? [];
      const pending = new Set(requests.map((r) => r.RequestID));
      for (const id of this.seen) if (!pending.has(id)) this.seen.delete(id);
      for (const r of requests) {
        if (this.seen.has(r.RequestID)) continue;
        this.seen.add(r.RequestID);
        void this.answer(r);
      }
      if ((reply.Index ?? 0) > this.minIndex) this.minIndex = reply.Index ?? 0;
    }
  }

  private async answer(r: { RequestID: string; Namespace: string; VolumeID: string }): Promise<void> {
    if (this.behaviour === "ignore") {
      this.answered.ignored++;
      return;
    }
    const error = this.behaviour === "fail" ? SIMULATED_DETACH_ERROR : "";
    const sent = await this.send("ClientCSI.AckDetach", {
      NodeID: this.node.id,
      SecretID: this.node.secret,
      Namespace: r.Namespace,
      VolumeID: r.VolumeID,
      RequestID: r.RequestID,
      Error: error,
    });
    if (sent === "") this.answered[error === "" ? "acked" : "failed"]++;
  }

  /** One call; resolves with the server's error text, "" when it succeeded. */
  private async send(method: string, body: Record<string, unknown>): Promise<string> {
    if (!this.node.up) return "node is not connected";
    try {
      // Unpublish answers once the detaches are done, which this node's own detach poll may announce.
      await this.rpc.call(method, body, this.node.secret, { waits: method === "CSIVolume.Unpublish" });
      return "";
    } catch (err) {
      this.logger.debug({ err, node: this.node.name, method }, "csi call failed");
      return err instanceof RpcError ? err.message : String(err);
    }
  }
}
