"""Schemathesis hooks for scripts/fuzz.sh (loaded through SCHEMATHESIS_HOOKS).

- Blocking queries: `?index=N` waits until the table passes N, up to `wait`
  (5 minutes by default), as Nomad does. A fuzzed N above the current index
  would hold the request for minutes and end as a timeout, so a request that
  carries `index` gets a short `wait`; `wait` alone is still fuzzed. The
  client RPCs block the same way on a body's `MinQueryIndex`, up to its
  `MaxQueryTime` (nanoseconds): a body that carries the one gets a short
  other.
- Bookkeeping: every call is appended as one JSON line to $FUZZ_CALLS
  (method, path, query, status, milliseconds taken, what schemathesis meant
  the case to test and which parts it made invalid, and the body of writes),
  from which fuzz.sh counts requests and 5xx. A call that failed at the
  network level (its 10 s timeout included) is recorded with status 0.
- With $FUZZ_BASE set (the invalid-input run, one worker), each call also
  records `grew`: how many records the log gained while it ran, read from
  /v1/agent/self before and after, so a write is pinned on the request
  that made it.
"""

import json
import os
import threading
import time
import urllib.request
from urllib.parse import urlsplit

import schemathesis

_CALLS = os.environ["FUZZ_CALLS"]
_BASE = os.environ.get("FUZZ_BASE")
_LOCK = threading.Lock()
_BEFORE = threading.local()


def _log_last_index():
    with urllib.request.urlopen(f"{_BASE}/v1/agent/self", timeout=10) as response:
        return int(json.load(response)["stats"]["chronomad"]["log_last_index"])


def _why(case):
    """What schemathesis meant the case to test (e.g. which value it made invalid)."""
    try:
        return case.meta.phase.data.description
    except AttributeError:
        return None


def _negated(case):
    """The parts of the request (query, body, ...) schemathesis made invalid."""
    try:
        return sorted(loc.name.lower() for loc, info in case.meta.components.items() if info.mode.is_negative)
    except AttributeError:
        return []


def _record(case, method, url, status, body=None):
    parts = urlsplit(url)
    call = {"method": method, "path": parts.path, "query": parts.query, "status": status}
    call["ms"] = round((time.monotonic() - _BEFORE.started) * 1000)
    call.update(why=_why(case), negated=_negated(case))
    if _BASE is not None:
        call["grew"] = _log_last_index() - _BEFORE.index
    if body and method != "GET":
        call["body"] = (body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body))[:300]
    with _LOCK, open(_CALLS, "a", encoding="utf-8") as out:
        out.write(json.dumps(call) + "\n")


@schemathesis.hook
def before_call(context, case, kwargs):
    if isinstance(case.query, dict) and "index" in case.query:
        case.query["wait"] = "100ms"
    if isinstance(case.body, dict) and "MinQueryIndex" in case.body:
        case.body["MaxQueryTime"] = 100_000_000
    if _BASE is not None:
        _BEFORE.index = _log_last_index()
    _BEFORE.started = time.monotonic()


@schemathesis.hook
def after_call(context, case, response):
    request = response.request
    _record(case, request.method, request.url, response.status_code, request.body)


@schemathesis.hook
def after_network_error(context, case, request):
    _record(case, request.method, request.url, 0, request.body)
