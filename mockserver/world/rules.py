"""One scenario rule at run time: whether it fires for a call, what it does, and when it is spent.

A rule belongs to one step of the request path, its `phase` (api/pipeline.py tries each phase's rules
at its step):

    route -> [before_auth] -> authenticate -> rate limit -> authorize -> validate
          -> [after_validation] -> handler -> [after_handler] -> reply

`after_validation` is the default. An `after_handler` rule lets the handler run (and change the state),
then replaces the reply: the call is committed, then fails.

A rule expires: after `times` firings, or at `until` on the sandbox's clock (and its `window`, when it
has one, closes). An expired rule no longer matches, counts nor fires. `fired` counts how often a rule
acted on a call, `count` how often its conditions held (its `matched`).

Asking and counting are two steps: `matches` only asks whether a call meets the rule's conditions (nothing
changes); `fires` counts a call that does and says whether the rule acts on it this time (its count, window,
`nth`/`every`/`first` and probability).
"""

import fnmatch
import random

from mockserver.core.clock import iso
from mockserver.core.matching import body_matches, headers_match
from mockserver.world.phases import AFTER_HANDLER, AFTER_VALIDATION, BEFORE_AUTH, PHASES, phase_of
from mockserver.world.strictness import moment, service_matches

__all__ = ["AFTER_HANDLER", "AFTER_VALIDATION", "BEFORE_AUTH", "PHASES", "Fired", "Rule", "phase_of"]


class Fired:
    __slots__ = ("name", "effects")

    def __init__(self, name, effects):
        self.name = name
        self.effects = effects


class Rule:
    phase = AFTER_VALIDATION                   # class defaults: a world saved before these existed reads back
    times = None                               # fire at most this often
    until = None                               # clock seconds from which the rule no longer fires

    def __init__(self, scenario, index, raw, seed):
        self.name = f"{scenario}/{raw.get('name', f'rule-{index + 1}')}"
        self.match = raw.get("match", {})
        self.effect = raw["effect"]
        self.window = raw.get("window")
        self.phase = phase_of(raw)
        self.times = raw.get("times")
        self.until = moment(raw["until"]) if "until" in raw else None
        self.count = 0
        self.fired = 0
        self.opened = None                     # when the window opens (clock seconds), once known
        self.window_calls = 0                  # matching calls seen inside the window
        self._random = random.Random(f"{seed}:{self.name}")

    def expired(self, now):
        """Spent: fired `times` times, or past `until` on the clock."""
        return ((self.times is not None and self.fired >= self.times)
                or (self.until is not None and now >= self.until))

    def matches(self, operation, method, path, token, headers, body, now=0.0, target=None):
        """Whether a call meets the rule's conditions now (a rule that expired meets none); counts nothing."""
        return not self.expired(now) and self._holds(self.match, operation, method, path, token, headers, body,
                                                      target)

    def fires(self, now=0.0):
        """Count a call that matches, and whether the rule acts on it this time (`fired` counts those)."""
        m = self.match
        self.count += 1
        if self.window is not None and not self._in_window(now):
            return False
        n = self.count
        if "nth" in m and n != m["nth"]:
            return False
        if "every" in m and n % m["every"]:
            return False
        if "first" in m and n > m["first"]:
            return False
        if "probability" in m and self._random.random() >= m["probability"]:
            return False
        self.fired += 1
        return True

    @staticmethod
    def _holds(m, operation, method, path, token, headers, body, target):
        """Whether the match conditions (all but the count ones) hold for a call."""
        if "operation" in m and m["operation"] != operation.operation_id:
            return False
        if "method" in m and m["method"] != method:
            return False
        if "path" in m and not (m["path"] == operation.template or fnmatch.fnmatchcase(path, m["path"])):
            return False
        if "token" in m and (token is None or m["token"] not in (token.name, token.value)):
            return False
        if "headers" in m and not headers_match(headers, m["headers"]):
            return False
        if "body" in m and not body_matches(body, m["body"]):
            return False
        return "service" not in m or service_matches(m["service"], target() if target else None)

    def _in_window(self, now):
        """Whether a matching call at `now` falls in the rule's window (and counts as one of its calls)."""
        w = self.window
        if self.opened is None:                # from its start, or `after` seconds past the first matching call
            self.opened = moment(w["start"]) if "start" in w else now + w.get("after", 0)
        if now < self.opened or ("seconds" in w and now >= self.opened + w["seconds"]):
            return False
        if "calls" in w and self.window_calls >= w["calls"]:
            return False
        self.window_calls += 1
        return True

    def rewind(self, seed):
        self.count = self.fired = self.window_calls = 0
        self.opened = None
        self._random = random.Random(f"{seed}:{self.name}")

    def effects(self):
        """What the rule does to a call: its effect as the scenario file wrote it (the same names all the way to
        the code that acts on them), without what is off, and the rule's name; a status without a message gets
        one that names the rule."""
        out: dict[str, object] = {name: value for name, value in self.effect.items() if value not in (None, False)}
        if "status" in out and "message" not in out:
            out["message"] = f"injected by scenario rule {self.name}"
        out["rule"] = self.name
        return out

    def describe(self, now=None):
        out = {"name": self.name, "phase": self.phase, "match": self.match, "effect": self.effect,
               "matched": self.count, "fired": self.fired}
        if self.window is not None:
            out["window"] = {**self.window, "opened_at": iso(self.opened) if self.opened is not None else None,
                             "calls_in_window": self.window_calls}
        if self.times is not None:
            out["times"] = self.times
        if self.until is not None:
            out["until"] = iso(self.until)
        if self.times is not None or self.until is not None:
            out["expired"] = self.expired(now if now is not None else float("-inf"))
        return out

