"""The plan of a campaign: from the baseline run's calls, every fault at every operation the suite called, and what
is left out and why.

The baseline's trail (calls/trail.py) says, sandbox by sandbox, which operations each test's sandbox called and
how often. For each operation called, each fault of faults.py that fits it is planned at the first call (and, with
`at`, at later calls the baseline made too); nothing is planned for an operation the suite never called. A plan
is split over the jobs of a CI matrix by `shard(plan, k, n)`: every n-th item from the k-th, in a fixed order, so
that the shards of one plan are disjoint and together are the plan.
"""

import fnmatch
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from mockserver.campaign.faults import CLIENT_MEETS, RUNNING, Fault, action_of

ALL = "all"


@dataclass
class Plan:
    """What a campaign runs (`faults`, in order) and leaves out (`skipped`: (what, why))."""
    faults: list = field(default_factory=list)
    skipped: list = field(default_factory=list)
    called: dict = field(default_factory=dict)         # operation -> the most calls any sandbox made of it
    sequences: dict = field(default_factory=dict)      # sandbox -> its operations, in the order called


def called_operations(calls):
    """(operation -> most calls of it in one sandbox, sandbox -> its operations in order) of a trail's calls."""
    sequences = defaultdict(list)
    for call in sorted(calls, key=lambda c: (c["sandbox"], c["id"])):
        if call.get("operation"):
            sequences[call["sandbox"]].append(call["operation"])
    most = Counter()
    for operations in sequences.values():
        for operation, count in Counter(operations).items():
            most[operation] = max(most[operation], count)
    return dict(most), dict(sequences)


def make(calls, spec, at=(1,), client_timeout=None, faults=None, operations=None):
    """The plan for a baseline's calls (`at`: the calls to inject at, or ALL; `faults`: globs of the fault names
    wanted, or None for all; `operations`: globs of the operations wanted, or None for all called)."""
    most, sequences = called_operations(calls)
    plan = Plan(called=most, sequences=sequences)
    for operation_id in sorted(most):
        if operations is not None and not any(fnmatch.fnmatchcase(operation_id, glob) for glob in operations):
            plan.skipped.append((operation_id, "not among the operations asked for (--operation)"))
            continue
        operation = spec.operations.get(operation_id)
        if operation is None:
            continue
        positions = range(1, most[operation_id] + 1) if at == ALL else [n for n in at if n <= most[operation_id]]
        for wanted in at if at != ALL else ():
            if wanted > most[operation_id]:
                plan.skipped.append((f"{operation_id} @{wanted}", f"no sandbox of the baseline called it {wanted} "
                                                                   f"times (at most {most[operation_id]})"))
        for name, why in fitting(operation, client_timeout):
            kind = Fault(operation_id, name).kind
            if faults is not None and not any(fnmatch.fnmatchcase(name, glob) for glob in faults):
                continue
            if why is not None:
                plan.skipped.append((f"{operation_id}: {name}", why))
                continue
            for position in positions:
                if kind == "outage" and position != 1:
                    continue
                plan.faults.append(Fault(operation_id, name, position))
    return plan


def fitting(operation, client_timeout):
    """(fault name, None) for each fault that fits an operation, or (name, why not) for one that does not."""
    listed = set(operation.responses)
    out = []
    for status in CLIENT_MEETS:
        name = f"status {status}"
        out.append((name, None if status in listed else f"the document lists no {status} for the operation"))
    out.append(("outage 503", None if 503 in listed else "the document lists no 503 for the operation"))
    out += [("reset", None), ("cut body", None), ("malformed body", None)]
    out.append(("delay", None if client_timeout else "no --client-timeout given: the delay must pass it"))
    action = action_of(operation.operation_id)
    why = None if action in RUNNING else "not an operation that starts work (deploy, stop, restart ...)"
    out += [("deployment failed", why), ("deployment stalled", why)]
    return out


def never_called(spec, plan):
    """The document's operations the baseline never called (no fault is run at them)."""
    return sorted(set(spec.operations) - set(plan.called))


def shard(faults, index, count):
    """The part `index` (1-based) of `count` of a plan: every `count`-th fault from the `index`-th, by key order."""
    ordered = sorted(faults, key=lambda fault: fault.key)
    return [fault for number, fault in enumerate(ordered) if number % count == index - 1]


def parse_shard(text):
    """'2/4' -> (2, 4), or ValueError naming the problem."""
    index, slash, count = str(text).partition("/")
    if not slash or not index.isdigit() or not count.isdigit() or not 1 <= int(index) <= int(count):
        raise ValueError(f"--shard must be K/N with 1 <= K <= N (the K-th of N parts), not {text!r}")
    return int(index), int(count)


def parse_at(text):
    """'1', '1,2,3' or 'all' -> the positions to inject at."""
    if str(text).strip().lower() == ALL:
        return ALL
    try:
        positions = sorted({int(part) for part in str(text).split(",") if part.strip()})
    except ValueError:
        raise ValueError(f"--at takes call numbers (1, 1,2,3) or all, not {text!r}") from None
    if not positions or positions[0] < 1:
        raise ValueError(f"--at takes call numbers from 1, not {text!r}")
    return tuple(positions)
