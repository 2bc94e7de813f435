"""The faults a campaign injects, as data: what each is, which operations it fits, and the scenario rule that makes
it (world/scenarios.py reads the rule like any other; `--inject` puts it in every sandbox of a run's mock).

A fault acts at one call of one operation (`at`: the first call in each sandbox, or a later one), and is one of:

- `status N`: the reply is the error N (the spec's body; 429 and 503 carry `Retry-After`), for the failure
  statuses the document lists for the operation that a client may meet (not the 400, 413 and 415 of its own
  request); the call is refused before its handler runs: nothing was changed. Once: a retry of it is answered.
- `outage 503`: the same 503 for the first call and the next OUTAGE_CALLS calls of the operation: long enough
  that a client that retries without bound or without waiting shows it, short enough that one that backs off
  and gives up after a few tries is not held for long.
- `reset`, `cut body`, `malformed body`: the change is made, then the reply is broken: a TCP reset after the
  head, half the body then a close, or a body that is not JSON (edge/faults.py). The client cannot know whether
  its change was made.
- `delay`: the change is made, and the reply waits past the client's timeout (`--client-timeout`).
- `deployment failed`, `deployment stalled`: for an operation that starts work (deploy, redeploy, restart, stop,
  uninstall, upgrade): its deployment ends in the action's error state, or stays in its running step.
"""

from dataclasses import dataclass

CLIENT_MEETS = (401, 403, 404, 409, 429, 500, 502, 503, 504)   # failure statuses a correct request may meet
RETRY_AFTER = 1                         # seconds an injected 429 or 503 asks the client to wait
OUTAGE_CALLS = 24                       # calls of an outage after the first
DELAY_PAST = 1.0                        # seconds a delay lasts past the client's timeout
NETWORK = {"reset": {"reset": {"after": "headers"}}, "cut body": {"truncate": {"fraction": 0.5}},
           "malformed body": {"malformed_body": True}}
# the running step of each action that starts work, where its failure or stall is injected
RUNNING = {"deploy": "DEPLOYING", "redeploy": "DEPLOYING", "restart": "RESTARTING", "stop": "STOPPING",
           "uninstall": "DELETING", "upgrade": "DEPLOYING"}
MAY_HAVE_APPLIED = frozenset({"reset", "cut body", "malformed body", "delay"})   # the change was made, the reply lost
KINDS = ("status", "outage", "network", "delay", "deployment")


@dataclass(frozen=True, order=True)
class Fault:
    """One fault at one call of one operation: what a run of the campaign injects."""
    operation: str
    name: str                          # "status 503", "outage 503", "reset", "delay", "deployment failed" ...
    at: int = 1                        # the call of the operation, in each sandbox, it acts at (1: the first)

    @property
    def key(self):
        return f"{self.operation}: {self.name} @{self.at}"

    @property
    def kind(self):
        return self.name.split(" ")[0] if self.name.split(" ")[0] in ("status", "outage", "delay") else (
            "deployment" if self.name.startswith("deployment") else "network")

    @property
    def status(self):
        """The status it answers with, for `status N` and `outage N`; else None."""
        word = self.name.rsplit(" ", 1)[-1]
        return int(word) if word.isdigit() else None

    def may_have_applied(self):
        return self.name in MAY_HAVE_APPLIED


def action_of(operation_id):
    """The action an operation starts (`deployApplication` -> deploy), or None for one that starts no work."""
    for action in RUNNING:
        if operation_id.startswith(action) and operation_id[len(action):][:1].isupper():
            return action
    return None


def rule(fault, client_timeout=None):
    """The scenario document that injects `fault` (a dict: world/scenarios.py's format)."""
    match = {"operation": fault.operation}
    entry = {"name": fault.key.replace(" ", "-").replace(":", "").replace("@", "at-"), "match": match}
    if fault.kind in ("status", "outage"):
        effect = {"status": fault.status, "message": f"injected by a fault campaign ({fault.key})"}
        if fault.status in (429, 503):
            effect["retry_after"] = RETRY_AFTER
        if fault.kind == "outage":               # planned at the first call only: calls 1 .. 1 + OUTAGE_CALLS
            match["first"] = fault.at + OUTAGE_CALLS
        else:
            match["nth"] = fault.at
    elif fault.kind == "network":
        effect = dict(NETWORK[fault.name])
        entry["phase"] = "after_handler"
        match["nth"] = fault.at
    elif fault.kind == "delay":
        effect = {"latency_ms": int(((client_timeout or 0) + DELAY_PAST) * 1000)}
        entry["phase"] = "after_handler"
        match["nth"] = fault.at
    else:
        step = RUNNING[action_of(fault.operation)]
        effect = {"deployment": {"fail_at": step} if fault.name == "deployment failed" else {"stall": step}}
        match["nth"] = fault.at
    entry["effect"] = effect
    return {"name": "campaign", "description": f"fault campaign: {fault.key}", "rules": [entry]}
