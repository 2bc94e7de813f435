"""Per-token request budgets in fixed windows on the mock's clock.

A window opens at a token's first request and lasts `window` seconds; each request
spends one unit. Every authenticated reply carries the three X-RateLimit headers; a
request past the budget is a 429 with Retry-After (docs/decisions.md, "Rate limit").
"""

import math

from mockserver.core.errors import ApiError


class _Window:
    __slots__ = ("start", "used", "limit", "ends", "reset", "fixed")

    def __init__(self, start, limit, window):
        self.start, self.used, self.limit = start, 0, limit
        self.ends = start + window
        self.reset = math.ceil(self.ends)
        # the two headers that stay the same for the whole window, encoded once
        self.fixed = ((b"x-ratelimit-limit", str(limit).encode()), (b"x-ratelimit-reset", str(self.reset).encode()))


class RateLimiter:
    def __init__(self, limit=1000, window=3600):
        self.limit = limit
        self.window = window
        self._windows = {}                     # token value -> _Window

    def _current(self, token, now):
        limit, window = token.rate_limit or (self.limit, self.window)
        slot = self._windows.get(token.value)
        if slot is None or now >= slot.start + window:
            slot = self._windows[token.value] = _Window(now, limit, window)
        return slot

    def spend(self, token, now):
        """Spend one request; returns the reply headers (encoded), or raises 429 carrying them."""
        slot = self._current(token, now)
        slot.used += 1
        if slot.used <= slot.limit:
            return [slot.fixed[0], (b"x-ratelimit-remaining", str(slot.limit - slot.used).encode()), slot.fixed[1]]
        window = token.rate_limit[1] if token.rate_limit else self.window
        raise ApiError(429, f"rate limit of {slot.limit} requests per {window:g} s exhausted for token {token.name}",
                       headers={"X-RateLimit-Limit": str(slot.limit), "X-RateLimit-Remaining": "0",
                                "X-RateLimit-Reset": str(slot.reset),
                                "Retry-After": str(max(1, math.ceil(slot.ends - now)))})

    def exhaust(self, token, now):
        """Use up the token's budget for the current window (scenario effect)."""
        slot = self._current(token, now)
        slot.used = max(slot.used, slot.limit)
