"""How the client behaved after a fault, read from a run's calls (its trail: calls/trail.py), whether its tests
passed or not. Each finding names its rule and the calls that show it (their ids and times, by the wall clock the
calls came in at):

- RETRY_AFTER: a call answered 429 or 503 with `Retry-After: R` was made again (the same operation and path in
  the same sandbox) sooner than R seconds after that reply ended, by the wall clock and by the sandbox's clock
  alike (a client that waits by moving a manual clock, as a test may, waits all the same);
- DUPLICATE and OWN_CONFLICT: after a fault that may have applied a write (a reset, a cut or malformed body, a
  delay past the client's timeout: the change was made, the reply lost), the client sent the same non-idempotent
  write again (POST, the same operation, path and body) and so made the record twice (2xx), or met a 409 its first
  write caused;
- STORM: after the fault, STORM_CALLS or more calls of the same operation and path came within STORM_SECONDS: a
  retry without bound or without backing off.
"""

from dataclasses import dataclass, field

from mockserver.campaign.faults import MAY_HAVE_APPLIED

RETRY_AFTER = "retried sooner than Retry-After"
DUPLICATE = "repeated a write that may have been made, and made it twice"
OWN_CONFLICT = "repeated a write that may have been made, and met the 409 it caused itself"
STORM = "retried without bound or without backing off"
RULES = (RETRY_AFTER, DUPLICATE, OWN_CONFLICT, STORM)
SHORT = {RETRY_AFTER: "retry-after", DUPLICATE: "duplicate", OWN_CONFLICT: "own-409", STORM: "storm"}
TOLERANCE = 0.05                        # seconds a retry may come early (clocks and scheduling)
STORM_CALLS = 10
STORM_SECONDS = 5.0
CAMPAIGN_RULE = "campaign/"             # the scenario rules a campaign injects are named so


@dataclass
class Finding:
    rule: str
    sandbox: str
    calls: list = field(default_factory=list)          # the calls that show it, as `shown`
    detail: str = ""

    def as_dict(self):
        return {"rule": self.rule, "short": SHORT[self.rule], "sandbox": self.sandbox, "detail": self.detail,
                "calls": self.calls}


def shown(call):
    """A call as a finding names it."""
    return {"id": call["id"], "received_at": call.get("received_at"), "method": call["method"], "path": call["path"],
            "operation": call.get("operation"), "status": call["status"], "scenario_rule": call.get("scenario_rule")}


def injected(calls):
    """The calls a campaign's rule acted on."""
    return [call for call in calls if (call.get("scenario_rule") or "").startswith(CAMPAIGN_RULE)]


def findings(calls, fault_name):
    """Every finding in a run's calls (all sandboxes), the fault it injected being `fault_name`."""
    by_sandbox = {}
    for call in calls:
        by_sandbox.setdefault(call["sandbox"], []).append(call)
    found = []
    for sandbox, mine in sorted(by_sandbox.items()):
        mine.sort(key=lambda call: (call.get("received") or 0.0, call["id"]))
        found += retried_too_soon(sandbox, mine)
        faulted = injected(mine)
        if faulted and fault_name in MAY_HAVE_APPLIED:
            found += repeated_write(sandbox, mine, faulted[0])
        if faulted:
            found += storm(sandbox, mine, faulted[0])
    return found


def _same_call(a, b):
    return a.get("operation") == b.get("operation") and a["path"] == b["path"] and a["method"] == b["method"]


def _later(calls, first):
    """The calls after `first` (by the time they came) of the same operation, path and method."""
    index = calls.index(first)
    return [call for call in calls[index + 1:] if _same_call(call, first)]


def _ended(call):
    return (call.get("received") or 0.0) + (call.get("duration_ms") or 0.0) / 1000


def retry_after_of(call):
    for name, value in (call.get("response_headers") or {}).items():
        if name.lower() == "retry-after":
            try:
                return float(value)
            except ValueError:
                return None
    return None


def retried_too_soon(sandbox, calls):
    found = []
    for call in calls:
        wait = retry_after_of(call) if call["status"] in (429, 503) else None
        if wait is None:
            continue
        again = _later(calls, call)
        if not again:
            continue
        waited = (again[0].get("received") or 0.0) - _ended(call)
        moved = (again[0].get("at") or 0.0) - (call.get("at") or 0.0)      # a client may wait on a manual clock
        if max(waited, moved) < wait - TOLERANCE:
            found.append(Finding(RETRY_AFTER, sandbox, [shown(call), shown(again[0])],
                                 f"Retry-After said {wait:g} s; the call came again after {max(waited, 0):.2f} s"))
    return found


def repeated_write(sandbox, calls, fault):
    if fault["method"] != "POST":
        return []
    for call in _later(calls, fault):
        if call.get("body") != fault.get("body"):
            continue
        if 200 <= call["status"] < 300:
            return [Finding(DUPLICATE, sandbox, [shown(fault), shown(call)],
                            "the same write was made again and answered " + str(call["status"]))]
        if call["status"] == 409:
            return [Finding(OWN_CONFLICT, sandbox, [shown(fault), shown(call)],
                            "the same write came again and met 409: the first one had been made")]
    return []


def storm(sandbox, calls, fault):
    start = fault.get("received") or 0.0
    burst = [call for call in _later(calls, fault) if (call.get("received") or 0.0) - start <= STORM_SECONDS]
    if len(burst) < STORM_CALLS:
        return []
    spent = (burst[-1].get("received") or start) - start
    return [Finding(STORM, sandbox, [shown(fault), *map(shown, burst[:3]), shown(burst[-1])],
                    f"{len(burst)} calls of the same operation in {spent:.2f} s after the fault")]
