"""The clock every time-based behaviour reads.

`real` follows the wall clock; `manual` stands still until `advance()` moves it, which
is how tests step deployments, rate-limit windows, token expiry, lock ttl and webhook
retries. Times are float Unix seconds; `iso()` renders RFC 3339 with microseconds.
"""

import math
import time
from datetime import UTC, datetime

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
        if self.now() + seconds > LAST_START:
            raise ValueError("the clock cannot move past 9999-01-01T00:00:00Z")
        self._offset += seconds
        return self.now()

    def resume_at(self, moment):
        """Make `now()` read `moment` (a restored world goes on from when it was saved)."""
        self._offset += moment - self.now()

    def describe(self):
        now = self.now()
        return {"mode": self.mode, "now": iso(now), "epoch": now, "offset_seconds": self._offset}


# Times a clock may start at or move to: 1970-01-01 .. 9999-01-01, which leaves a year for what is dated
# after now (deployment steps, token expiry, webhook retries) before the last time RFC 3339 can render.
EARLIEST, LAST_START = 0.0, 253370764800.0
FIRST, LATEST = -62135596800.0, 253402300799.0   # 0001-01-01 and 9999-12-31T23:59:59Z: what `iso` can render


# one request stamps several records with the same time, and a running clock stays in one second a while: the
# time rendered last and the second rendered last, each a (key, text) tuple replaced whole (a thread reads a
# pair that belongs together)
_last: tuple = (None, "")
_second: tuple = (None, "")


def iso(ts):
    """RFC 3339 with microseconds; a time past what it can write (a token of ten years on a clock moved near
    the year 9999) is written as the last (or first) time it can. The microseconds are rounded as datetime
    rounds them (half to even)."""
    global _last, _second
    last = _last
    if ts == last[0]:
        return last[1]
    second = _second
    whole = second[0]
    if whole is not None and 0.0 <= whole <= ts < whole + 1.0 and whole < LATEST:   # in the second rendered last
        micro = round((ts - whole) * 1e6)    # (the fraction math.modf gives, exactly: no sign or clamp to mind)
        if micro < 1000000:
            text = f"{second[1]}.{micro:06d}Z"
            _last = (ts, text)
            return text
    moment = min(max(ts, FIRST), LATEST)
    fraction, whole = math.modf(moment)
    micro = round(fraction * 1e6)
    if micro < 0:                              # before 1970: the fraction counts back from the next second
        micro += 1000000
        whole -= 1.0
    if micro >= 1000000:
        micro -= 1000000
        whole += 1.0
    second = _second
    if whole != second[0]:
        second = _second = (whole, datetime.fromtimestamp(whole, UTC).isoformat(timespec="seconds")[:-6])
    text = f"{second[1]}.{micro:06d}Z"
    _last = (ts, text)
    return text
