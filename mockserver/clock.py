"""The clock every time-based behaviour reads.

`real` follows the wall clock; `manual` stands still until `advance()` moves it, which
is how tests step deployments, rate-limit windows, token expiry, lock ttl and webhook
retries. Times are float Unix seconds; `iso()` renders RFC 3339 with microseconds.
"""

import time
from datetime import datetime, timezone


# The longest single move of the clock and the longest token lifetime the control API accepts, and the
# latest time the clock may reach (datetimes, and so every rendered time, end with the year 9999).
MAX_SECONDS = 10 * 365 * 86400
LATEST = 221845392000.0                         # 9000-01-01T00:00:00Z


class Clock:
    def __init__(self, mode="real", start=None, wall=time.time):
        if mode not in ("real", "manual"):
            raise ValueError(f"clock mode must be real or manual, not {mode!r}")
        self.mode = mode
        self._wall = wall
        self._offset = 0.0
        self._frozen = wall() if start is None else float(start)

    def now(self):
        if self.mode == "manual":
            return self._frozen + self._offset
        return self._wall() + self._offset

    def advance(self, seconds):
        """Move the clock forward (both modes: in real mode it jumps ahead of the wall clock)."""
        if seconds < 0:
            raise ValueError("the clock only moves forward")
        if self.now() + seconds > LATEST:
            raise ValueError("the clock cannot move past the year 9000")
        self._offset += seconds
        return self.now()

    def describe(self):
        now = self.now()
        return {"mode": self.mode, "now": iso(now), "epoch": now, "offset_seconds": self._offset}


_last = [None, ""]                             # one request stamps several records with the same time


def iso(ts):
    if ts != _last[0]:
        _last[1] = datetime.fromtimestamp(ts, timezone.utc).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"
        _last[0] = ts
    return _last[1]
