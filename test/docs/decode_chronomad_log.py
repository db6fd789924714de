#!/usr/bin/env python3
"""Reads every record of a chronomad log, written from docs/log-format.md alone.

    decode_chronomad_log.py file DIR                 a file log directory (e.g. DATA_DIR/log)
    decode_chronomad_log.py kafka BOOTSTRAP TOPIC    a Kafka log (BOOTSTRAP: host:port[,host:port])

Prints one JSON object: {"records", "firstIndex", "lastIndex", "types": {type: count}}
(firstIndex and lastIndex are null for an empty log). With --records, first
prints each record as one JSON line {"index", "envelope"} (integers exact).

File logs: checks every segment header and every frame's CRC-32C, that
indexes run on without gaps, and stops at a torn tail. Kafka logs: checks
that the topic has one partition and that offsets are dense (Kafka's client
checks its own record-batch CRCs). Exits 1 with the reason on stderr when the
log is damaged or a record is not an envelope.

Needs the `msgpack` package, and `confluent-kafka` for Kafka logs.
"""

import json
import os
import re
import struct
import sys
import uuid

import msgpack

# --- CRC-32C (Castagnoli), reflected polynomial 0x82F63B78, init and final xor 0xFFFFFFFF ---

_TABLE = []
for _n in range(256):
    _c = _n
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _TABLE.append(_c)


def crc32c(data, crc=0):
    """CRC-32C of `data`, continuing from `crc` (the CRC of the bytes before it)."""
    crc ^= 0xFFFFFFFF
    table = _TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def mask(crc):
    rotated = ((crc >> 15) | (crc << 17)) & 0xFFFFFFFF
    return (rotated + 0xA282EAD8) & 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283


class Damaged(Exception):
    pass


# --- file log ---

SEGMENT_NAME = re.compile(r"^(\d{20})\.seg$")
MAGIC = b"CMLOGSEG"
HEADER_SIZE = 24
FRAME_HEADER_SIZE = 8


def segment_files(directory):
    found = []
    for name in os.listdir(directory):
        m = SEGMENT_NAME.match(name)
        if m:
            found.append((int(m.group(1)), os.path.join(directory, name)))
    return sorted(found)


def frame_at(buf, pos):
    """(payload, next position) of a complete frame at `pos` whose CRC holds, else None."""
    if len(buf) - pos < FRAME_HEADER_SIZE:
        return None
    length, stored = struct.unpack_from("<II", buf, pos)
    start = pos + FRAME_HEADER_SIZE
    if length > len(buf) - start:
        return None
    payload = buf[start:start + length]
    if mask(crc32c(payload)) != stored:
        return None
    return payload, start + length


def valid_frame_after(buf, pos):
    return any(frame_at(buf, q) is not None for q in range(pos + 1, len(buf) - FRAME_HEADER_SIZE + 1))


def read_file_log(directory):
    """Yields (index, payload) for every record, in index order."""
    if not os.path.isdir(directory):
        raise Damaged(f"{directory} is not a directory")
    segments = segment_files(directory)
    expected = None
    for i, (name_first, path) in enumerate(segments):
        last_segment = i == len(segments) - 1
        with open(path, "rb") as f:
            buf = f.read()
        # A last segment whose creation a crash cut short: nothing in it was ever written.
        if last_segment and (len(buf) < HEADER_SIZE or buf.count(0) == len(buf)):
            return
        if len(buf) < HEADER_SIZE:
            raise Damaged(f"{path}: segment header is incomplete")
        if buf[0:8] != MAGIC:
            raise Damaged(f"{path}: bad magic {buf[0:8]!r}")
        (version,) = struct.unpack_from("<I", buf, 8)
        (header_crc,) = struct.unpack_from("<I", buf, 12)
        if mask(crc32c(buf[16:24], crc32c(buf[0:12]))) != header_crc:
            raise Damaged(f"{path}: segment header checksum mismatch")
        if version != 1:
            raise Damaged(f"{path}: unsupported segment format version {version}")
        (first,) = struct.unpack_from("<Q", buf, 16)
        if first != name_first:
            raise Damaged(f"{path}: header says first index {first}, the file name {name_first}")
        if expected is not None and first != expected:
            raise Damaged(f"{path}: starts at index {first}, but the previous segment ends at {expected - 1}")
        pos = HEADER_SIZE
        index = first
        while pos < len(buf):
            frame = frame_at(buf, pos)
            if frame is None:
                if last_segment and not valid_frame_after(buf, pos):
                    return  # a torn tail: an append that never completed
                raise Damaged(f"{path} at byte offset {pos} (record {index}): bad frame")
            payload, pos = frame
            yield index, payload
            index += 1
        expected = index


# --- Kafka log ---

def read_kafka_log(bootstrap, topic):
    """Yields (index, payload) for every record: index = offset + 1."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": f"decode-chronomad-log-{uuid.uuid4()}",
        "enable.auto.commit": False,
        "enable.partition.eof": True,
        "check.crcs": True,
        "auto.offset.reset": "earliest",
    })
    try:
        metadata = consumer.list_topics(topic, timeout=30)
        t = metadata.topics.get(topic)
        if t is None or t.error is not None:
            raise Damaged(f"topic {topic}: {t.error if t is not None else 'not found'}")
        if len(t.partitions) != 1:
            raise Damaged(f"topic {topic} has {len(t.partitions)} partitions; a chronomad log has one")
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
        if high <= low:
            return
        consumer.assign([TopicPartition(topic, 0, low)])
        expected = low
        while expected < high:
            msg = consumer.poll(30)
            if msg is None:
                raise Damaged(f"topic {topic}: no record at offset {expected} within 30 s")
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise Damaged(f"topic {topic}: {msg.error()}")
            if msg.offset() != expected:
                raise Damaged(f"topic {topic}: expected offset {expected}, got {msg.offset()} (a gap)")
            yield msg.offset() + 1, msg.value()
            expected += 1
    finally:
        consumer.close()


# --- envelopes ---

def decode_envelope(index, payload):
    try:
        env = msgpack.unpackb(payload, raw=False, strict_map_key=False)
    except Exception as err:  # msgpack raises several types
        raise Damaged(f"record {index} is not msgpack: {err}")
    if not isinstance(env, dict):
        raise Damaged(f"record {index} is not a map")
    if not isinstance(env.get("type"), str):
        raise Damaged(f"record {index} has no string type")
    v = env.get("v")
    if not isinstance(v, int) or v < 1:
        raise Damaged(f"record {index} ({env['type']}) has no version")
    at = env.get("at")
    # Integers past 32 bits are int64 now; older records hold them as float64.
    if isinstance(at, float) and at.is_integer():
        env["at"] = int(at)
    elif not isinstance(at, int):
        raise Damaged(f"record {index} ({env['type']}) has no time")
    if "data" not in env:
        raise Damaged(f"record {index} ({env['type']}) has no data")
    return env


def main(argv):
    args = [a for a in argv if a != "--records"]
    dump = len(args) != len(argv)
    if len(args) == 2 and args[0] == "file":
        records = read_file_log(args[1])
    elif len(args) == 3 and args[0] == "kafka":
        records = read_kafka_log(args[1], args[2])
    else:
        sys.stderr.write(__doc__)
        return 2
    counts = {}
    first = last = None
    total = 0
    try:
        for index, payload in records:
            env = decode_envelope(index, payload)
            if last is not None and index != last + 1:
                raise Damaged(f"record {index} follows record {last}")
            counts[env["type"]] = counts.get(env["type"], 0) + 1
            first = index if first is None else first
            last = index
            total += 1
            if dump:
                print(json.dumps({"index": index, "envelope": env}, default=repr))
    except Damaged as err:
        sys.stderr.write(f"decode_chronomad_log: {err}\n")
        return 1
    summary = {
        "records": total,
        "firstIndex": first,
        "lastIndex": last,
        "types": dict(sorted(counts.items())),
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
