"""The verdict of scripts/fuzz.sh, from the calls fuzz_hooks.py recorded.

Usage: fuzz_report.py NEGATIVE_CALLS ALL_CALLS LOG_GROWTH

Prints the requests sent, the 5xx answers, the log growth of the
invalid-input run and the slowest requests (a call lost at the network level
is often one that ran into the client's 10 s timeout); exits 1 on any 5xx
(or call lost at the network level) or on any record written from invalid
input.
"""

import json
import sys

# Requests schemathesis takes for invalid and chronomad, like Nomad, accepts
# by design, so their writes are no finding:
# - its Content-Type probes, a valid body under another media type: a JSON
#   body is read whatever its Content-Type;
# - query strings whose only fault is a parameter the operation does not
#   declare: unknown query parameters are ignored.
CONTENT_TYPE_PROBES = ("Malformed Content-Type", "Unsupported Content-Type")
SLOWEST = 3


def accepted_by_design(call):
    why = call["why"] or ""
    if why.startswith(CONTENT_TYPE_PROBES):
        return True
    return call.get("negated") == ["query"] and "additionalProperties" in why


def load(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def show(call):
    # Fuzzed query strings run to kilobytes; the start says which case it was.
    query = f"?{call['query'][:200]}" if call["query"] else ""
    body = f" body={call['body']}" if call.get("body") else ""
    negated = ", ".join(call.get("negated", []))
    took = f" {call['ms']} ms" if "ms" in call else ""
    return f"  {call['status']} {call['method']} {call['path']}{query}{body}{took} ({call['why']}; invalid: {negated})"


def main():
    negative, mixed, growth = load(sys.argv[1]), load(sys.argv[2]), int(sys.argv[3])
    calls = negative + mixed
    errors = [c for c in calls if c["status"] >= 500 or c["status"] == 0]
    writers = [c for c in negative if c.get("grew", 0) > 0]
    probes = [c for c in writers if 200 <= c["status"] < 300 and accepted_by_design(c)]
    bad = [c for c in writers if c not in probes]
    unattributed = growth - sum(c["grew"] for c in writers)

    print(f"fuzz: requests sent: {len(calls)} ({len(negative)} invalid-only, {len(mixed)} mixed)")
    print(f"fuzz: 5xx answers and calls lost at the network level: {len(errors)}")
    for c in errors:
        print(show(c))
    print(f"fuzz: log growth in the invalid-input run: {growth} records")
    if probes:
        print(f"  {sum(c['grew'] for c in probes)} from requests accepted by design (odd Content-Type, unknown query parameters)")
    if bad:
        print(f"  {sum(c['grew'] for c in bad)} from invalid input:")
        for c in bad:
            print(show(c))
    if unattributed:
        print(f"  {unattributed} written between requests (by what they set off)")
    print("fuzz: slowest requests:")
    for c in sorted(calls, key=lambda c: c.get("ms", 0), reverse=True)[:SLOWEST]:
        print(show(c))
    return 1 if errors or bad or unattributed else 0


if __name__ == "__main__":
    sys.exit(main())
