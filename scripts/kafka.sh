#!/usr/bin/env bash
# A real single-node Apache Kafka broker (KRaft) for development and tests,
# run from Maven Central jars: no Docker, no tarball.
#
#   scripts/kafka.sh start    prints the bootstrap address on stdout once the
#                             broker serves; exits non-zero (with the tail of
#                             the broker log on stderr) if it does not
#   scripts/kafka.sh stop     stops it and removes its data
#   scripts/kafka.sh status   exit 0 and a line on stdout if it runs, else 1
#
# Environment (all optional):
#   KAFKA_PORT              client port (9092); the controller listens on the next one
#   KAFKA_CONTROLLER_PORT   controller port (KAFKA_PORT + 1)
#   KAFKA_HOST              listen/advertise address (127.0.0.1)
#   KAFKA_VERSION           org.apache.kafka:kafka_2.13 version (3.9.2)
#   KAFKA_STATE_DIR         where jars, pid, log and data live (<repo>/.kafka)
#   KAFKA_LIB_DIR           jar cache, reused between runs (<state>/lib)
#   KAFKA_CLUSTER_ID        22-char base64url UUID (a fixed one)
#   KAFKA_START_TIMEOUT     seconds to wait for the broker to serve (120)
#   KAFKA_STOP_TIMEOUT      seconds between SIGTERM and SIGKILL (30)
#   KAFKA_HEAP_OPTS         JVM heap flags (-Xms256m -Xmx512m)
#   KAFKA_MAVEN_ARGS        extra mvn arguments (e.g. -o, -Dmaven.repo.local=...)
#
# Stdout carries only the address, so callers can do
#   KAFKA_BROKERS="$(scripts/kafka.sh start)"
# Everything else goes to stderr.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
conf_dir="$here/kafka"

host="${KAFKA_HOST:-127.0.0.1}"
port="${KAFKA_PORT:-9092}"
controller_port="${KAFKA_CONTROLLER_PORT:-$((port + 1))}"
version="${KAFKA_VERSION:-3.9.2}"
state_dir="${KAFKA_STATE_DIR:-$root/.kafka}"
lib_dir="${KAFKA_LIB_DIR:-$state_dir/lib}"
# base64url of "chronomad-kafka0": any 16 bytes will do, but a fixed id makes
# broker logs from different runs comparable.
cluster_id="${KAFKA_CLUSTER_ID:-Y2hyb25vbWFkLWthZmthMA}"
start_timeout="${KAFKA_START_TIMEOUT:-120}"
stop_timeout="${KAFKA_STOP_TIMEOUT:-30}"
heap_opts="${KAFKA_HEAP_OPTS:--Xms256m -Xmx512m}"

# One run directory per client port, so brokers on different ports (parallel
# worktrees, other test runs) never share a pid file or data.
run_dir="$state_dir/broker-$port"
pid_file="$run_dir/broker.pid"
log_file="$run_dir/broker.log"
probe_log="$run_dir/probe.log"
data_dir="$run_dir/data"
props_file="$run_dir/server.properties"
probe_classes="$state_dir/probe-classes"

say() { printf 'kafka.sh: %s\n' "$*" >&2; }
die() {
  say "$*"
  exit 1
}

# The JVM flags kafka-run-class.sh uses, with a small heap and thread pools
# sized for two cores.
jvm_opts() {
  # shellcheck disable=SC2206 # word splitting of the heap flags is intended
  local heap=($heap_opts)
  printf '%s\n' "${heap[@]}" -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
    -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -XX:MaxInlineLevel=15 \
    -XX:ActiveProcessorCount=2 -Djava.awt.headless=true \
    "-Dlog4j.configuration=file:$conf_dir/log4j.properties" "-Dkafka.logs.dir=$run_dir"
}

port_open() {
  (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null
}

# The pid in the pid file, if that process is still our broker (a recycled pid
# belonging to something else must never be signalled).
running_pid() {
  [[ -f "$pid_file" ]] || return 1
  local pid
  pid="$(cat "$pid_file" 2>/dev/null || true)"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  if [[ -r "/proc/$pid/cmdline" ]]; then
    local cmdline
    cmdline="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null || true)"
    [[ "$cmdline" == *"kafka.Kafka $props_file"* ]] || return 1
  fi
  printf '%s\n' "$pid"
}

lib_ready() {
  [[ -f "$lib_dir/.complete" && "$(cat "$lib_dir/.complete")" == "$version" ]] &&
    [[ -f "$lib_dir/kafka_2.13-$version.jar" && -f "$lib_dir/reload4j-1.2.25.jar" ]]
}

# Copies the broker's runtime classpath into the jar cache, once per version.
gather_jars() {
  lib_ready && return 0
  command -v mvn >/dev/null || die "mvn not found: Maven is needed once to fetch the Kafka $version jars"
  mkdir -p "$state_dir"
  # Two starts racing on an empty cache (parallel test runs) must not both
  # write into it.
  if command -v flock >/dev/null; then
    exec 9>"$state_dir/.lib.lock"
    flock 9
    if lib_ready; then
      exec 9>&-
      return 0
    fi
  fi
  say "fetching Kafka $version jars from Maven Central into $lib_dir"
  local tmp="$lib_dir.tmp.$$"
  rm -rf "$tmp"
  # Debian's Maven 3.8 prints colour resets even in batch mode; sed drops them
  # (pipefail keeps Maven's exit status).
  # shellcheck disable=SC2086 # KAFKA_MAVEN_ARGS is a list of arguments
  if ! mvn -B -q -f "$conf_dir/pom.xml" ${KAFKA_MAVEN_ARGS:-} \
    org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
    "-Dkafka.version=$version" "-DoutputDirectory=$tmp" -DincludeScope=runtime </dev/null 2>&1 |
    sed -e 's/\x1b\[[0-9;]*m//g' >&2; then
    rm -rf "$tmp"
    die "maven could not resolve org.apache.kafka:kafka_2.13:$version"
  fi
  printf '%s\n' "$version" >"$tmp/.complete"
  rm -rf "$lib_dir"
  mv "$tmp" "$lib_dir"
  # Closed here so the broker started later does not inherit and hold the lock.
  exec 9>&-
}

# The probe is compiled once into the state dir; recompiled when its source
# or the Kafka version changes.
build_probe() {
  local src="$conf_dir/KafkaReady.java" stamp="$probe_classes/.version"
  if [[ -f "$probe_classes/KafkaReady.class" && "$probe_classes/KafkaReady.class" -nt "$src" &&
    -f "$stamp" && "$(cat "$stamp")" == "$version" ]]; then
    return 0
  fi
  rm -rf "$probe_classes"
  mkdir -p "$probe_classes"
  javac -nowarn -cp "$lib_dir/*" -d "$probe_classes" "$src" >&2 || die "could not compile $src"
  printf '%s\n' "$version" >"$stamp"
}

broker_log_tail() {
  if [[ -f "$log_file" ]]; then
    say "last lines of $log_file:"
    tail -n 60 "$log_file" >&2
  fi
}

# SIGTERM (controlled shutdown), SIGKILL if it outlives the timeout.
kill_broker() {
  local pid="$1" waited=0
  kill -TERM "$pid" 2>/dev/null || return 0
  while kill -0 "$pid" 2>/dev/null; do
    if ((waited >= stop_timeout * 10)); then
      say "broker $pid did not stop within ${stop_timeout}s, sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      break
    fi
    sleep 0.1
    waited=$((waited + 1))
  done
  while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
}

cmd_start() {
  local pid
  if pid="$(running_pid)"; then
    say "already running (pid $pid)"
    printf '%s:%s\n' "$host" "$port"
    return 0
  fi
  command -v java >/dev/null || die "java not found (Kafka $version needs Java 8, 11 or 17)"
  for p in "$port" "$controller_port"; do
    if port_open "$host" "$p"; then die "port $host:$p is already in use by another process"; fi
  done

  gather_jars
  build_probe

  # A data dir without a running broker is left over from a crash or kill;
  # every start begins with an empty broker.
  rm -rf "$data_dir"
  mkdir -p "$run_dir" "$data_dir"
  sed -e "s|@HOST@|$host|g" -e "s|@PORT@|$port|g" -e "s|@CONTROLLER_PORT@|$controller_port|g" \
    -e "s|@DATA_DIR@|$data_dir|g" "$conf_dir/server.properties.template" >"$props_file"

  local -a opts
  mapfile -t opts < <(jvm_opts)
  : >"$log_file"
  # A short-lived JVM: no point warming up the optimising compiler.
  if ! java -Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC "-Dlog4j.configuration=file:$conf_dir/log4j.properties" \
    -cp "$lib_dir/*" kafka.tools.StorageTool format \
    -t "$cluster_id" -c "$props_file" </dev/null >>"$log_file" 2>&1; then
    broker_log_tail
    die "formatting $data_dir failed"
  fi

  # setsid: the broker must outlive the shell that started it and must not
  # receive a terminal's Ctrl-C aimed at the caller; the inner shell writes
  # its own pid, then becomes the JVM, so the pid file names the broker.
  setsid bash -c 'echo $$ >"$1"; shift; exec "$@"' _ "$pid_file" \
    java "${opts[@]}" -cp "$lib_dir/*" kafka.Kafka "$props_file" </dev/null >>"$log_file" 2>&1 &
  local deadline=$((SECONDS + start_timeout))
  while [[ ! -s "$pid_file" ]] && ((SECONDS < deadline)); do sleep 0.05; done
  pid="$(cat "$pid_file" 2>/dev/null || true)"

  : >"$probe_log"
  while ((SECONDS < deadline)); do
    if ! kill -0 "$pid" 2>/dev/null; then
      broker_log_tail
      rm -f "$pid_file" "$props_file"
      rm -rf "$data_dir"
      die "broker exited during start-up"
    fi
    if port_open "$host" "$port"; then
      local left=$((deadline - SECONDS))
      if ((left > 10)); then left=10; fi
      if ((left < 1)); then left=1; fi
      if java -Xmx64m -XX:TieredStopAtLevel=1 "-Dlog4j.configuration=file:$conf_dir/log4j.properties" \
        -cp "$probe_classes:$lib_dir/*" KafkaReady "$host:$port" "$left" </dev/null >>"$probe_log" 2>&1; then
        say "broker $version serving on $host:$port (pid $pid, log $log_file)"
        printf '%s:%s\n' "$host" "$port"
        return 0
      fi
    else
      sleep 0.2
    fi
  done

  broker_log_tail
  say "broker did not serve on $host:$port within ${start_timeout}s; stopping it"
  kill_broker "$pid"
  rm -f "$pid_file" "$props_file"
  rm -rf "$data_dir"
  exit 1
}

cmd_stop() {
  local pid
  if pid="$(running_pid)"; then
    kill_broker "$pid"
    say "stopped broker $pid"
  else
    say "not running"
  fi
  rm -f "$pid_file" "$props_file"
  rm -rf "$data_dir"
}

cmd_status() {
  local pid
  if pid="$(running_pid)"; then
    printf 'running: pid %s, %s:%s, log %s\n' "$pid" "$host" "$port" "$log_file"
  else
    printf 'not running (%s:%s)\n' "$host" "$port"
    return 1
  fi
}

case "${1:-}" in
start) cmd_start ;;
stop) cmd_stop ;;
status) cmd_status ;;
*)
  say "usage: $0 start|stop|status"
  exit 2
  ;;
esac
