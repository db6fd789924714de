#!/usr/bin/env python3
"""Allocation transitions from a `chronomad export --to file:PATH` NDJSON file.

Standard library only. Builds the SQLite table alloc_transitions, one row per
change of ClientStatus, DesiredStatus, NodeID or Migrate (a create starts from
NULL; a delete is one row of field "(deleted)"), and prints a JSON summary.

    python3 alloc_transitions.py changes.ndjson [--db transitions.db]
"""
import argparse
import json
import sqlite3
import sys
from collections import Counter

FIELDS = ("ClientStatus", "DesiredStatus", "NodeID", "Migrate")
COLUMNS = ("alloc_id", "job_id", "node_id", "index", "seq", "time", "field",
           "from_value", "to_value", "actor_kind", "actor_id", "cause_type", "cause_index")


def text(value):
    """One type per column: JSON booleans become 'true'/'false', numbers their text."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value)


def transitions(rows):
    # Rows arrive in (Index, Seq) order, the order of the log.
    last = {}  # alloc key -> its previous row
    for row in rows:
        if row.get("Topic") != "Allocation":
            continue
        key = row["Key"]
        before = last.get(key, {})
        meta = (key, row.get("JobID"), row.get("NodeID"), row["Index"], row["Seq"], row["Time"])
        cause = (row.get("ActorKind"), row.get("ActorID"), row.get("CauseType"), row.get("CauseIndex"))
        if row["Op"] == "delete":
            last.pop(key, None)
            yield meta + ("(deleted)", text(row.get("ClientStatus")), None) + cause
            continue
        for field in FIELDS:
            old, new = text(before.get(field)), text(row.get(field))
            if old != new:
                yield meta + (field, old, new) + cause
        last[key] = row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("export", help="the NDJSON file written by chronomad export --to file:PATH")
    parser.add_argument("--db", default=":memory:", help="write the SQLite database here")
    args = parser.parse_args()
    db = sqlite3.connect(args.db)
    db.execute("DROP TABLE IF EXISTS alloc_transitions")
    db.execute("CREATE TABLE alloc_transitions (%s)" % ", ".join('"%s"' % c for c in COLUMNS))
    with open(args.export, encoding="utf-8") as lines:
        rows = (json.loads(line) for line in lines if line.strip())
        db.executemany("INSERT INTO alloc_transitions VALUES (%s)" % ", ".join("?" * len(COLUMNS)),
                       transitions(rows))
    db.commit()
    count = lambda sql: db.execute(sql).fetchone()[0]
    summary = {
        "allocations": count("SELECT COUNT(DISTINCT alloc_id) FROM alloc_transitions"),
        "transitions": count("SELECT COUNT(*) FROM alloc_transitions"),
        "by_field": dict(db.execute("SELECT field, COUNT(*) FROM alloc_transitions GROUP BY field")),
        "deleted": count("SELECT COUNT(*) FROM alloc_transitions WHERE field = '(deleted)'"),
    }
    db.close()
    json.dump(summary, sys.stdout)
    print()


if __name__ == "__main__":
    main()
