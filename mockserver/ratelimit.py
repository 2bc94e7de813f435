"""Per-token request budgets in fixed windows on the mock's clock.

A window opens at a token's first request and lasts `window` seconds; each request
spends one unit. Every authenticated reply carries the three X-RateLimit headers; a
request past the budget is a 429 with Retry-After (api-decisions.md).
"""

import math

from .errors import ApiError


class RateLimiter:
    def __init__(self, limit=1000, window=3600):
        self.limit = limit
        self.window = window
        self._windows = {}                     # token value -> [start, used]

    def spend(self, token, now):
        """Spend one request; returns the headers, or raises 429 carrying them."""
        limit, window = token.rate_limit or (self.limit, self.window)
        slot = self._windows.get(token.value)
        if slot is None or now >= slot[0] + window:
            slot = self._windows[token.value] = [now, 0]
        slot[1] += 1
        reset = slot[0] + window
        headers = {
            "X-RateLimit-Limit": str(limit),
            "X-RateLimit-Remaining": str(max(0, limit - slot[1])),
            "X-RateLimit-Reset": str(math.ceil(reset)),
        }
        if slot[1] > limit:
            headers["Retry-After"] = str(max(1, math.ceil(reset - now)))
            raise ApiError(429, f"rate limit of {limit} requests per {window:g} s exhausted for token {token.name}",
                           headers=headers)
        return headers

    def exhaust(self, token, now):
        """Use up the token's budget for the current window (scenario effect)."""
        limit, window = token.rate_limit or (self.limit, self.window)
        slot = self._windows.get(token.value)
        if slot is None or now >= slot[0] + window:
            slot = self._windows[token.value] = [now, 0]
        slot[1] = max(slot[1], limit)
