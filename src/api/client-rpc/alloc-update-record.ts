import type { ClientAllocUpdate } from "../../../streams/allocs.ts";
import { packPlain } from "../../codec/envelope-codec.ts";
import { arrayHeader, arrayHeaderLength, envelopeHead } from "../../codec/envelope-head.ts";
import type { EncodedDraft, Stamp } from "../../store/writer.ts";

/**
 * One Node.UpdateAlloc call's updates as msgpack: the items of an `Allocs`
 * array, without the array's header. msgpack items are packed the same
 * wherever they stand (no shared structures, no records), so a window's
 * record is its envelope's head, the array's header and its calls' items
 * one after the other.
 */
export interface PackedUpdates {
  readonly count: number;
  readonly items: Uint8Array;
}

/**
 * Packs a call's updates when the call is submitted, in the turn of the
 * request that brought them (paced by admission), rather than all of a
 * window's at its flush: a burst's window held up to 3,600 updates, whose
 * packing took 10-36 ms of one turn.
 */
export function packUpdates(updates: readonly ClientAllocUpdate[]): PackedUpdates {
  // A view into msgpackr's buffer: msgpackr only ever packs past it (or into
  // a new buffer), never over it.
  const all = packPlain(updates);
  return { count: updates.length, items: all.subarray(arrayHeaderLength(updates.length)) };
}

/** `{Allocs: ` as the codec packs it: a one-key map, then the key. */
const ALLOCS_KEY = (() => {
  const bytes = packPlain({ Allocs: [] });
  if (bytes[bytes.length - 1] !== 0x90) throw new Error("Allocs is not the data's last byte");
  return bytes.slice(0, bytes.length - 1);
})();

/**
 * An AllocClientUpdated record of the calls' packed updates, in order:
 * byte for byte what the codec gives for `{Allocs: [...their updates]}`
 * in the write's envelope. Assembling it copies bytes; nothing is packed
 * but the envelope's head, once per write.
 */
export function allocClientUpdatedRecord(calls: readonly PackedUpdates[]): EncodedDraft {
  let count = 0;
  let itemBytes = 0;
  for (const c of calls) {
    count += c.count;
    itemBytes += c.items.length;
  }
  return {
    type: "AllocClientUpdated",
    allocs: count,
    encode: (stamp) => {
      const head = headOf(stamp);
      const header = arrayHeader(count);
      // Not zeroed first: every byte is written below.
      const bytes = Buffer.allocUnsafeSlow(head.length + ALLOCS_KEY.length + header.length + itemBytes);
      bytes.set(head, 0);
      let at = head.length;
      bytes.set(ALLOCS_KEY, at);
      at += ALLOCS_KEY.length;
      bytes.set(header, at);
      at += header.length;
      for (const c of calls) {
        bytes.set(c.items, at);
        at += c.items.length;
      }
      return bytes;
    },
  };
}

/** The last write's head: the records of one write share its stamp. */
let lastHead: { stamp: Stamp; head: Uint8Array } | undefined;

function headOf(stamp: Stamp): Uint8Array {
  if (lastHead?.stamp === stamp) return lastHead.head;
  const head = envelopeHead({ type: "AllocClientUpdated", v: 1, at: stamp.at, by: stamp.by });
  lastHead = { stamp, head };
  return head;
}
