import { type Envelope, schemas } from "./event-schema.ts";

/*
 * Server → client detach calls as events. Nomad's leader calls
 * ClientCSI.NodeDetachVolume / ControllerDetachVolume on a client agent
 * while it unpublishes a claim; chronomad's HTTP clients cannot be called,
 * so the server records a request, the client sees it in its long poll
 * (ClientCSI.PendingDetaches), acts, and acknowledges it
 * (ClientCSI.AckDetach). The leader's unpublish workflow waits for the ack
 * or, past the request's deadline, records a timeout and tries again.
 * Every step is a record, so the whole exchange is in the volume's history.
 */

/** Which CSI call the client makes: the node plugin's NodeUnpublish/Unstage, or the controller plugin's ControllerUnpublish. */
export type CSIDetachKind = "node" | "controller";

export const CSI_DETACH_KINDS: readonly CSIDetachKind[] = ["node", "controller"];

/** The claim a detach is for, as Nomad's CSIVolumeClaim carries it (see streams/csi.ts). */
export interface CSIDetachClaim {
  readonly AllocationID: string;
  readonly NodeID: string;
  readonly ExternalNodeID: string;
  readonly Mode: number;
  readonly AccessMode: string;
  readonly AttachmentMode: string;
  readonly State: number;
}

/** One server → client call, as recorded: everything the client needs to make it. */
export interface CSIDetachRequest {
  /** Unique per attempt: an ack names the attempt it answers. */
  readonly RequestID: string;
  readonly Namespace: string;
  readonly VolumeID: string;
  /** The provider's ID of the volume (Nomad's RemoteID: ExternalID, else ID). */
  readonly ExternalID: string;
  readonly PluginID: string;
  /** The node that is to act: the claim's node for a node detach, a node running the controller plugin for a controller detach. */
  readonly NodeID: string;
  readonly Kind: CSIDetachKind;
  /** The claim being released (its node, for a controller detach, is the one the volume is detached from). */
  readonly Claim: CSIDetachClaim;
  /** 1 for the first try of this step of this claim; a retry after a timeout or a failure counts up. */
  readonly Attempt: number;
  /** Unix ms after which the leader records a timeout: set by the service that asks, never by apply. */
  readonly Deadline: number;
}

/** The leader asks a client to detach a volume (one attempt of one step of an unpublish). */
export interface CSIDetachRequested {
  readonly Request: CSIDetachRequest;
}

/**
 * The client answers: `Error` empty when the plugin call succeeded, else its
 * text. Only the node the request names may answer it, and only while it is
 * pending (a late ack after a timeout is refused: the retry has its own ID).
 */
export interface CSIDetachAcknowledged {
  readonly Namespace: string;
  readonly VolumeID: string;
  readonly RequestID: string;
  readonly NodeID: string;
  readonly Error: string;
}

/** The leader gave up waiting for an answer: the request's deadline passed. */
export interface CSIDetachTimedOut {
  readonly Namespace: string;
  readonly VolumeID: string;
  readonly RequestID: string;
}

export type CSIDetachEvent =
  | Envelope<"CSIDetachRequested", CSIDetachRequested>
  | Envelope<"CSIDetachAcknowledged", CSIDetachAcknowledged>
  | Envelope<"CSIDetachTimedOut", CSIDetachTimedOut>;

export const csiDetachSchemas = schemas(
  { type: "CSIDetachRequested", version: 1 },
  { type: "CSIDetachAcknowledged", version: 1 },
  { type: "CSIDetachTimedOut", version: 1 },
);

/** Longest plugin error text kept from an ack: a client's words, bounded. */
export const MAX_DETACH_ERROR = 1024;
