#!/usr/bin/env bash
# Prints the python of a virtualenv with what test/docs/decode_chronomad_log.py
# needs (msgpack; confluent-kafka for Kafka logs), pinned, from PyPI, cached
# under ~/.cache/chronomad/. Used by test/docs/log-format-decoder.test.ts and
# .ci/run.
set -euo pipefail
MSGPACK_VERSION=1.1.2
CONFLUENT_KAFKA_VERSION=2.12.1
exec bash "$(dirname "${BASH_SOURCE[0]}")/../../scripts/python-venv.sh" \
  "log-decoder-msgpack-$MSGPACK_VERSION-confluent-kafka-$CONFLUENT_KAFKA_VERSION" \
  "msgpack==$MSGPACK_VERSION" "confluent-kafka==$CONFLUENT_KAFKA_VERSION"
