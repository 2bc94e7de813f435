"""Rules that load but can never act, found from the document alone: warnings, not refusals.

- An effect the matched operations cannot have: a `deployment` effect on a rule that matches only reads
  (GET), which start no deployment.
- A shadowed rule: at most one rule acts on a call, tried phase by phase and, within a phase, in order
  (world/scenarios.py); a rule is shadowed when a rule tried before it fires for every call it matches: an
  operation, method and path at least as broad, no other condition but those the later rule has too, and
  no count condition, window, `times` or `until` that would let calls through.

`Entry` is a rule with where it is: its label (`rules.3, line 12` or `file.yaml:12`), its name, a place of
the caller's (its index) and the rule as written.
"""

import fnmatch
import itertools
import json
from typing import NamedTuple

from mockserver.world.phases import AFTER_VALIDATION, PHASES, phase_of
from mockserver.world.strictness import SAMPLE_ID

READS = frozenset({"GET", "HEAD", "OPTIONS"})
LETS_THROUGH = ("nth", "every", "first", "probability")       # match conditions that pick some calls only
LIMITS = ("window", "times", "until")                         # rule keys after which it stops firing
MAX_SUBSETS_OF = 10                   # conditions of a rule whose subsets are looked up (more: scan the sets held)


class Entry(NamedTuple):
    label: str
    name: str
    place: object
    raw: dict


def impossible(raw, spec, reach=None):
    """Why a rule's effect can never act, or None (`reach`: a cache of `reachable`, kept by the caller)."""
    effect, match = _part(raw, "effect"), _part(raw, "match")
    if "deployment" not in effect:
        return None
    could, _ = reachable(match, spec, {} if reach is None else reach)
    if could and all(spec.operations[op].method in READS for op in could):
        names = ", ".join(sorted(could)[:5]) + (", ..." if len(could) > 5 else "")
        return (f"a deployment effect on reads only ({names}): a read starts no deployment, so the effect never "
                "acts; match the call that deploys (POST .../deploy, .../redeploy, a cluster upgrade, ...)")
    return None


def shadowed(entries, spec, reach=None):
    """(entry, the entry tried before it that shadows it) for every shadowed rule of `entries` (in order).
    A rule's other conditions are a set; only the rules whose set is a subset of the later rule's can shadow
    it, and those are found by the subsets of its (small) set, not by trying every pair."""
    reach = {} if reach is None else reach
    ranked = sorted(range(len(entries)), key=lambda i: (_rank(entries[i].raw), i))
    shadowers: dict[frozenset, list] = {}      # conditions -> [(rank, entry, operations it takes whole)]
    out = []
    for rank, index in enumerate(ranked):
        entry = entries[index]
        match = _part(entry.raw, "match")
        could, whole = reachable(match, spec, reach)
        conditions = _conditions(match)
        found = _first_covering(conditions, could, shadowers) if could else None
        if found is not None:
            out.append((entry, found))
        if not any(key in match for key in LETS_THROUGH) and not any(key in entry.raw for key in LIMITS):
            shadowers.setdefault(conditions, []).append((rank, entry, whole))
    return out


def reachable(match, spec, reach):
    """(operations a match's operation, method and path may select a call of, operations it selects every call
    of), cached in `reach` by those three."""
    key = (match.get("operation"), match.get("method"), match.get("path"))
    if key not in reach:
        could = frozenset(op_id for op_id, op in spec.operations.items() if selects(match, op, whole=False))
        reach[key] = could, frozenset(op_id for op_id in could if selects(match, spec.operations[op_id], whole=True))
    return reach[key]


def _first_covering(conditions, could, shadowers):
    """The earliest rule tried before whose conditions are a subset of `conditions` and that takes every
    operation of `could` whole; None when there is none."""
    if len(conditions) > MAX_SUBSETS_OF:
        subsets = [held for held in shadowers if held <= conditions]
    else:
        items = list(conditions)
        subsets = [frozenset(combo) for size in range(len(items) + 1) for combo in itertools.combinations(items, size)]
    best = None
    for subset in subsets:
        for rank, entry, whole in shadowers.get(subset, ()):
            if could <= whole and (best is None or rank < best[0]):
                best = (rank, entry)
            if best is not None and best[0] <= rank:
                break
    return best[1] if best is not None else None


def _conditions(match):
    """A match's conditions other than operation, method, path and count, as a set of hashable items."""
    items: set[tuple] = set()
    for key in ("token", "service"):
        if key in match:
            items.add((key, _text(match[key])))
    for key in ("headers", "body"):
        for name, value in _part(match, key).items():
            items.add((key, name.lower() if key == "headers" else name, _text(value)))
    return frozenset(items)


def _text(value):
    return json.dumps(value, sort_keys=True, default=str)


def _part(raw, key):
    part = raw.get(key) if isinstance(raw, dict) else None
    return part if isinstance(part, dict) else {}


def _rank(raw):
    phase = phase_of(raw) if isinstance(raw, dict) else AFTER_VALIDATION
    return PHASES.index(phase) if phase in PHASES else len(PHASES)


def selects(match, op, whole):
    """Whether a match's operation, method and path select calls of `op`: some of them, or (`whole`) all."""
    if "operation" in match and match["operation"] != op.operation_id:
        return False
    if "method" in match and match["method"] != op.method:
        return False
    path = match.get("path")
    if path is None or path == op.template:
        return True
    sample = "/".join(SAMPLE_ID if part.startswith("{") else part for part in op.template.split("/"))
    if whole:                                  # a glob that takes the template and any id in it: every call
        return fnmatch.fnmatchcase(op.template, path) and fnmatch.fnmatchcase(sample, path)
    return fnmatch.fnmatchcase(op.template, path) or fnmatch.fnmatchcase(sample, path)
