"""The clock every time-based behaviour reads.

`real` follows the wall clock; `manual` stands still until `advance()` moves it, which
is how tests step deployments, rate-limit windows, token expiry, lock ttl and webhook
retries. Times are float Unix seconds; `iso()` renders RFC 3339 with microseconds.
"""

import time
from datetime import datetime, timezone


# The longest single move of the clock and the longest token lifetime the control API accepts.
MAX_SECONDS = 10 * 365 * 86400


class Clock:
    def __init__(self, mode="real", start=None, wall=time.time):
        if mode not in ("real", "manual"):
            raise ValueError(f"clock mode must be real or manual, not {mode!r}")
        self.mode = mode
        self._wall = wall
        self._offset = 0.0
        self._frozen = wall() if start is None else float(start)
        if mode == "real" and start is not None:   # a real clock that starts at `start` and runs from there
            self._offset = float(start) - wall()

    def now(self):
        if self.mode == "manual":
            return self._frozen + self._offset
        return self._wall() + self._offset

    def advance(self, seconds):
        """Move the clock forward (both modes: in real mode it jumps ahead of the wall clock)."""
        if seconds < 0:
            raise ValueError("the clock only moves forward")
        if self.now() + seconds > LATEST:
            raise ValueError("the clock cannot move past 9999-12-31T23:59:59Z")
        self._offset += seconds
        return self.now()

    def resume_at(self, moment):
        """Make `now()` read `moment` (a restored world goes on from when it was saved)."""
        self._offset += moment - self.now()

    def describe(self):
        now = self.now()
        return {"mode": self.mode, "now": iso(now), "epoch": now, "offset_seconds": self._offset}


LATEST = 253402300799.0                        # 9999-12-31T23:59:59Z: the last time `iso` can render


_last = [None, ""]                             # one request stamps several records with the same time


def iso(ts):
    if ts != _last[0]:
        _last[1] = datetime.fromtimestamp(ts, timezone.utc).isoformat(timespec="microseconds")[:-6] + "Z"
        _last[0] = ts
    return _last[1]
