"""The call trail (`--call-trail PATH`): every API call of every sandbox, one JSON line each, appended to a file as
it is journaled, for what reads a whole run afterwards (a fault campaign: campaign/runs.py).

A line is the call as `GET /_mock/calls` shows it (redacted alike: calls/journal.py), with the sandbox it was made
in and `received`, the wall clock it came in at in Unix seconds. A sandbox's journal goes with the sandbox; its
lines stay in the trail. The file is private to its owner (mode 0600) and written line by line.
"""

import os

import orjson


class Trail:
    """An open call trail; `write(sandbox, journal, call)` after the journal recorded `call`."""

    def __init__(self, path):
        self.path = path
        self.file = open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "ab", buffering=0)

    def write(self, sandbox, journal, call):
        kept = journal.find(call.call_id)
        if kept is None:
            return
        line = {"sandbox": sandbox or "default", "received": call.received, "at": call.at, **journal.render(kept)}
        self.file.write(orjson.dumps(line) + b"\n")

    def close(self):
        self.file.close()
