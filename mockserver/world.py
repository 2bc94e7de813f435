"""One sandbox's world as bytes, and back: how sandboxes are created, reset and snapshotted.

`freeze(rt)` pickles a whole `Runtime` (store, tokens, rate-limit windows, deployment queues,
webhooks and deliveries, journal, scenarios with their counters, the fake-data generator and
the clock) except what every world shares: the settings of the server and the compiled
document with its operations, which are written as references. `thaw(data, shared)` builds
an independent copy. At the default fixtures this takes a fraction of a millisecond, which is
why a sandbox is made by copying a world built once rather than replaying the fixtures.
"""

import io
import pickle

from .clock import iso

PROTOCOL = 5


class Shared:
    """The objects every world refers to and none owns: written by name, not by value."""

    def __init__(self, settings, spec):
        self.by_key = {"settings": settings, "spec": spec}
        for operation_id, operation in spec.operations.items():
            self.by_key[f"op:{operation_id}"] = operation
        self.by_id = {id(obj): key for key, obj in self.by_key.items()}


class _Freezer(pickle.Pickler):
    def __init__(self, file, shared):
        super().__init__(file, protocol=PROTOCOL)
        self._ids = shared.by_id

    def persistent_id(self, obj):
        return self._ids.get(id(obj))


class _Thawer(pickle.Unpickler):
    def __init__(self, file, shared):
        super().__init__(file)
        self._keys = shared.by_key

    def persistent_load(self, key):
        try:
            return self._keys[key]
        except KeyError:
            raise pickle.UnpicklingError(f"the saved world refers to {key!r}, which this server does not have") from None


def dumps(obj, shared):
    """Any object graph of worlds (a sandbox, a list of them, snapshots) as bytes."""
    buffer = io.BytesIO()
    _Freezer(buffer, shared).dump(obj)
    return buffer.getvalue()


def loads(data, shared):
    return _Thawer(io.BytesIO(data), shared).load()


def freeze(rt, shared, journal=True):
    """The runtime as bytes; without `journal`, its call journal is left out (saved empty)."""
    kept = rt.journal
    if not journal:
        rt.journal = kept.empty_copy()
    try:
        return dumps(rt, shared)
    finally:
        rt.journal = kept


def thaw(data, shared):
    """An independent runtime from `freeze`'s bytes."""
    return loads(data, shared)


class Snapshot:
    """A saved world: the bytes of world.freeze and what the listing shows of it."""

    __slots__ = ("name", "data", "sandbox", "saved_at", "clock_at", "journal", "resources")

    def __init__(self, name, data, sandbox, saved_at, clock_at, journal, resources):
        self.name, self.data, self.sandbox, self.saved_at = name, data, sandbox, saved_at
        self.clock_at, self.journal, self.resources = clock_at, journal, resources

    def describe(self):
        return {"name": self.name, "sandbox": self.sandbox, "saved_at": iso(self.saved_at),
                "clock_at": iso(self.clock_at), "journal": self.journal, "resources": self.resources,
                "bytes": len(self.data)}
