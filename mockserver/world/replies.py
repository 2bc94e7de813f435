"""Cached replies: a read of the project list, of one project or of a service's status answered again with the
bytes it was answered with, for as long as nothing in its world may have changed.

A world counts what may change it (`Runtime.generation`): every API call that is not a read (counted before its
handler runs), every call while a scenario rule is active, a deployment step or webhook attempt falling due
(`Runtime.pump`), a change of the change log run again. The server counts every control call that is not a read
(`Pipeline.epoch`, before it runs and again after: fixtures, clock, scenarios, snapshots, provider states). A
world's cached replies hold while both counts stay what they were when the replies were cached; any change drops
them all at the next read.

Only operations whose reply is a function of the store's records, the path, the query and the caller's
organization are cached (CACHED), not a list of webhook deliveries (their attempts finish on their own). A status
moves with the clock while its deployment runs: its handler says so (`Context.cacheable` false), and only the status
of a service never deployed or whose last deployment has ended is cached. Nothing is cached while a scenario rule
is active, or with tracing on (a cached reply runs no handler, so it would have no handler span). The replies are
never saved or copied with a world. Why it stays (a client's polls of an unchanged status cost a lookup, and the
status read of the floors stays under the floor's cost): docs/performance.md.
"""

CACHED = frozenset({"listProjects", "getProject", "getApplicationStatus", "getContainerStatus", "getDatabaseStatus",
                    "getJobStatus", "getHelmStatus", "getTerraformStatus"})
MAX_REPLIES = 32                # per world; past it, or past MAX_BYTES, the cache is emptied and fills anew
MAX_BYTES = 256 * 1024


class ReplyCache:
    """One world's cached replies: (path, query string, organization) -> the reply's bytes, valid at `at`."""

    __slots__ = ("at", "replies", "bytes")

    def __init__(self):
        self.at = None
        self.replies = {}
        self.bytes = 0

    def get(self, key, at):
        """The reply cached for `key` if the world is still as it was when it was cached (`at`), else None."""
        if self.at != at:
            self.at = at
            if self.replies:
                self.replies = {}
                self.bytes = 0
            return None
        return self.replies.get(key)

    def put(self, key, at, payload):
        """Cache a reply made at `at` (nothing, if the world changed meanwhile)."""
        if self.at != at:
            return
        if len(self.replies) >= MAX_REPLIES or self.bytes + len(payload) > MAX_BYTES:
            self.replies = {}
            self.bytes = 0
            if len(payload) > MAX_BYTES:
                return
        self.replies[key] = payload
        self.bytes += len(payload)
