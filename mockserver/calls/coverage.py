"""Operation coverage of the call journal: which documented operations answered 2xx.

A contract run (schemathesis or a client's own suite) can ask the mock afterwards which
operations it reached on their success path, which it only called with errors and which
it never called. Only the calls still in the journal count (see `dropped`).
"""


def coverage(journal, operations):
    """Counts per operation of `operations` (operationId -> Operation) from the journal's entries."""
    statuses: dict[str, dict[str, int]] = {operation_id: {} for operation_id in operations}
    for call in journal.entries:
        operation, status = call.operation, call.status
        if operation is None or operation.operation_id not in statuses:
            continue
        counts = statuses[operation.operation_id]
        counts[str(status)] = counts.get(str(status), 0) + 1
    results, reached, never_reached, never_called = [], 0, [], []
    for operation_id, counts in statuses.items():
        operation = operations[operation_id]
        ok = any(code.startswith("2") for code in counts)
        reached += ok
        if not counts:
            never_called.append(operation_id)
        elif not ok:
            never_reached.append(operation_id)
        results.append({"operation": operation_id, "method": operation.method, "path": operation.template,
                        "calls": sum(counts.values()), "statuses": dict(sorted(counts.items())), "reached": ok})
    total = len(operations)
    return {"operations": total, "called": total - len(never_called), "reached": reached,
            "reached_percent": round(100 * reached / total, 1) if total else 0.0,
            "never_reached": never_reached, "never_called": never_called,
            "journal_entries": len(journal.entries), "dropped": journal.dropped, "results": results}


# ---------------------------------------------------------------- what a suite never used
RETIRED_LIMIT = 2000                   # sandboxes gone whose usage the mock-wide report still counts


def tally(journal, operations, scenarios):
    """What one world used, compactly: calls per documented operation (those called), and per scenario rule
    (`scenarios`: descriptions as GET /_mock/scenarios gives them) how often it matched and fired."""
    called: dict[str, int] = {}
    for call in journal.entries:
        operation = call.operation
        if operation is not None and operation.operation_id in operations:
            called[operation.operation_id] = called.get(operation.operation_id, 0) + 1
    rules = {rule["name"]: {"scenario": scenario["name"], "matched": rule["matched"], "fired": rule["fired"]}
             for scenario in scenarios for rule in scenario["rules"]}
    return {"operations": called, "rules": rules, "dropped": journal.dropped, "sandboxes": 1}


def merged(tallies):
    """Tallies of several worlds as one: a rule fired when it fired in any of them, an operation called when
    any of them called it."""
    out: dict = {"operations": {}, "rules": {}, "dropped": 0, "sandboxes": 0}
    for one in tallies:
        for operation_id, calls in one["operations"].items():
            out["operations"][operation_id] = out["operations"].get(operation_id, 0) + calls
        for name, counts in one["rules"].items():
            mine = out["rules"].setdefault(name, {"scenario": counts["scenario"], "matched": 0, "fired": 0})
            mine["matched"] += counts["matched"]
            mine["fired"] += counts["fired"]
        out["dropped"] += one["dropped"]
        out["sandboxes"] += one["sandboxes"]
    return out


def usage(counted, operations):
    """The report of a tally: the rules that never fired and the documented operations never called."""
    rules = [{"rule": name, **counts} for name, counts in counted["rules"].items()]
    never_fired = [rule["rule"] for rule in rules if not rule["fired"]]
    never_called = [operation_id for operation_id in operations if operation_id not in counted["operations"]]
    return {"sandboxes": counted["sandboxes"],
            "rules": {"total": len(rules), "fired": len(rules) - len(never_fired), "never_fired": never_fired,
                      "results": rules},
            "operations": {"total": len(operations), "called": len(operations) - len(never_called),
                           "never_called": never_called, "calls": dict(sorted(counted["operations"].items()))},
            "journal_dropped": counted["dropped"]}


class Retired:
    """The tallies of sandboxes gone (deleted, replaced, reset, restored through the control API), by sandbox
    name, for the mock-wide report: the newest RETIRED_LIMIT kept, the older ones counted in `forgotten`."""

    def __init__(self, limit=RETIRED_LIMIT):
        self.limit = limit
        self.tallies: list[tuple[str, dict]] = []
        self.forgotten = 0

    def add(self, name, counted):
        self.tallies.append((name, counted))
        if len(self.tallies) > self.limit:
            del self.tallies[0]
            self.forgotten += 1

    def named(self, prefix):
        return [counted for name, counted in self.tallies if name.startswith(prefix)]
