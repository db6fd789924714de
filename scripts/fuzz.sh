#!/usr/bin/env bash
# Bounded fuzz of the HTTP API with schemathesis, driven by the server's own
# OpenAPI document (/v1/openapi.json), against a real chronomad server.
#
#   1. invalid input only (--mode negative): no answer may be a 5xx, and the
#      log must not grow: each record written is pinned on its request
#      (scripts/fuzz_hooks.py), and none may come from a refused request or
#      from invalid input (scripts/fuzz_report.py has the one exception);
#   2. valid and invalid input (--mode all): no answer may be a 5xx.
#
# Prints the requests sent, the 5xx answers, the log growth and the slowest
# requests; exits non-zero on any 5xx, any request lost at the network level,
# any write from invalid input, or a run that overran or sent nothing, and
# then repeats why as its last lines.
# FUZZ_SECONDS (default 150) is the fuzzing budget, split between the two
# runs; each run is also killed by `timeout` shortly after its budget.
# schemathesis is installed from PyPI into a virtualenv cached under
# ~/.cache/chronomad/ (outside the repository); without python3 the job is
# skipped.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$PWD"

SCHEMATHESIS_VERSION=4.32.5
budget="${FUZZ_SECONDS:-150}"
half=$((budget / 2))

if ! command -v python3 >/dev/null 2>&1; then
  echo "fuzz: python3 not found, fuzz job skipped"
  exit 0
fi

venv="${XDG_CACHE_HOME:-$HOME/.cache}/chronomad/schemathesis-$SCHEMATHESIS_VERSION"
# The marker is written last, so a half-finished install is redone, not used.
if [ ! -f "$venv/.installed" ]; then
  echo "fuzz: installing schemathesis $SCHEMATHESIS_VERSION into $venv" >&2
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "schemathesis==$SCHEMATHESIS_VERSION"
  touch "$venv/.installed"
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/chronomad-fuzz.XXXXXX")"
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
base="http://127.0.0.1:$port"
# The history explorer's files (/ui/*, in the document) are fuzzed too: built
# first if missing, as `npm ci` builds them, since its "not built" answer is a 503.
[ -d ui/dist ] || node scripts/build-ui.mjs >&2
node --max-semi-space-size=32 bin/chronomad.js serve \
  --http-addr "127.0.0.1:$port" --data-dir "$work/data" --fsync never >"$work/server.log" 2>&1 &
server_pid=$!

# Up once it leads and has applied its log (agent/health answers 200).
for _ in $(seq 1 60); do
  if curl -fsS -o /dev/null "$base/v1/agent/health" 2>/dev/null; then break; fi
  if ! kill -0 "$server_pid" 2>/dev/null; then
    echo "fuzz: the server exited at start:" >&2
    tail -n 40 "$work/server.log" >&2
    exit 1
  fi
  sleep 0.5
done
curl -fsS -o /dev/null "$base/v1/agent/health" || {
  echo "fuzz: the server did not come up at $base" >&2
  tail -n 40 "$work/server.log" >&2
  exit 1
}

# A new leader writes the cluster's first root key once it leads (Nomad's
# initializeKeyring), which may be after agent/health first answers 200. The
# invalid-input run counts every record written while it runs, so it starts
# once that key is in the log.
has_active_key() {
  curl -fsS "$base/v1/operator/keyring/keys" |
    python3 -c 'import json, sys; sys.exit(0 if any(k["State"] == "active" for k in json.load(sys.stdin)) else 1)'
}
for _ in $(seq 1 60); do
  if has_active_key 2>/dev/null; then break; fi
  sleep 0.5
done
has_active_key || {
  echo "fuzz: the server wrote no root key" >&2
  tail -n 40 "$work/server.log" >&2
  exit 1
}

# The log's last index, as /v1/agent/self reports it.
log_index() {
  curl -fsS "$base/v1/agent/self" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["stats"]["chronomad"]["log_last_index"])'
}

# Left out: the event stream answers a valid request with a stream that never
# ends (a read timeout, not a finding), and agent/health answers 500 by
# design while the server is behind its log, which writes make it for a moment.
# The agent monitor streams the log until the client hangs up, like the event
# stream; agent pprof answers 501 by design (no Go profiles to serve), and so
# do keyring rotation and key deletion until issue 18 builds them.
# None takes input worth fuzzing beyond what their own tests cover.
# Health checks are hypothesis's complaints about its own generation (most
# query parameters are free text, so invalid ones are rare to draw), not
# findings about the server; they would fail the run, so they are off.
# Its full report (hundreds of lines of per-operation warnings) goes to
# $work/<mode>.out; the job prints each run's summary, and the whole report
# only when the run fails, so the CI log keeps the test suite's own summary
# in view.
run_schemathesis() {
  local mode="$1" phases="$2" workers="$3" calls="$4"
  # Runs in $work so nothing schemathesis writes lands in the repository.
  (cd "$work" && FUZZ_CALLS="$calls" SCHEMATHESIS_HOOKS="$root/scripts/fuzz_hooks.py" \
    timeout --kill-after=10 $((half + 45)) "$venv/bin/schemathesis" run "$base/v1/openapi.json" \
    --mode "$mode" --phases "$phases" \
    --checks not_a_server_error,response_schema_conformance \
    --exclude-path /v1/event/stream --exclude-path /v1/agent/health \
    --exclude-path /v1/agent/monitor --exclude-path '/v1/agent/pprof/{profile}' \
    --exclude-path /v1/operator/keyring/rotate --exclude-path '/v1/operator/keyring/key/{id}' \
    --max-time "$half" --request-timeout 10 --workers "$workers" \
    --suppress-health-check all \
    --generation-database none --no-color >"$work/$mode.out" 2>&1)
}

# The report from its SUMMARY banner on: operations tested, phases, counts.
# schemathesis frames it in pytest-style banners ("=== 4 warnings in 75s ===")
# that a CI reading closing lines takes for a pytest run that executed no
# test, so the banner lines are left out and the rest indented.
print_summary() {
  if [ -f "$work/$1.out" ]; then
    sed -n '/= SUMMARY =/,$p' "$work/$1.out" | sed -E '/^=+( .* =+)?$/d; /^$/d; s/^/  /'
  fi
}

# The verdict is drawn from the calls the hooks recorded (5xx, calls lost at
# the network level, writes), not from schemathesis's exit status: that one
# also counts schemathesis's own generation errors (4.32.5 now and then
# raises a hypothesis FlakyFailure from inside its coverage phase), which say
# nothing about the server. A run that was cut by `timeout`, or that sent
# nothing (schema not loaded, crash), still fails the job.
failed=0
# Why the job failed, kept to be printed again after the whole reports, so
# that the last lines of a CI log say it.
verdict="$work/verdict.txt"
: >"$verdict"
fail() {
  echo "$1" | tee -a "$verdict" >&2
  failed=1
}
check_run() {
  local name="$1" code="$2" calls="$3" mode="$4"
  echo "fuzz: the $name run (--mode $mode):"
  print_summary "$mode"
  if [ "$code" -eq 124 ] || [ "$code" -eq 137 ]; then
    fail "fuzz: the $name run overran its time budget"
  elif [ ! -s "$calls" ]; then
    fail "fuzz: the $name run sent no request (schemathesis exit $code)"
  elif [ "$code" -ne 0 ]; then
    echo "fuzz: schemathesis exit $code for the $name run; the report below decides" >&2
  fi
}
: >"$work/negative.ndjson"
: >"$work/all.ndjson"

# One worker, and FUZZ_BASE, so that the hooks pin each write on its request.
before="$(log_index)"
code=0
FUZZ_BASE="$base" run_schemathesis negative coverage,fuzzing 1 "$work/negative.ndjson" || code=$?
check_run invalid-only "$code" "$work/negative.ndjson" negative
# Writes are appended before they are answered; the pause lets anything a
# write might have set off (an evaluation, a plan) reach the log too.
sleep 1
after="$(log_index)"

code=0
run_schemathesis all coverage,fuzzing,stateful 2 "$work/all.ndjson" || code=$?
check_run mixed "$code" "$work/all.ndjson" all

report=0
python3 scripts/fuzz_report.py "$work/negative.ndjson" "$work/all.ndjson" $((after - before)) >"$work/report.txt" || report=$?
cat "$work/report.txt"
if [ "$report" -ne 0 ]; then
  cat "$work/report.txt" >>"$verdict"
  failed=1
fi
if grep -q '"request failed"' "$work/server.log"; then
  echo "fuzz: server errors logged:" >&2
  grep '"request failed"' "$work/server.log" | tail -n 20 | tee -a "$verdict" >&2
fi
if [ "$failed" -ne 0 ]; then
  for mode in negative all; do
    echo "fuzz: schemathesis's whole report for --mode $mode:" >&2
    cat "$work/$mode.out" >&2
  done
  echo "fuzz: why it failed (repeated from above):" >&2
  cat "$verdict" >&2
  echo "fuzz: FAILED" >&2
  exit 1
fi
echo "fuzz: passed"
