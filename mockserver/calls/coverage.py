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
