"""One sandbox's world as bytes, and back: how sandboxes are created, reset and snapshotted.

`freeze(rt)` pickles a whole `Runtime` (store, tokens, rate-limit windows, deployment queues,
webhooks and deliveries, journal, scenarios with their counters, the fake-data generator and
the clock) except what every world shares: the settings of the server and the compiled
document with its operations, which are written as references. `thaw(data, shared)` builds
an independent copy. At the default fixtures this takes a fraction of a millisecond, which is
why a sandbox is made by copying a world built once rather than replaying the fixtures.
"""

import copyreg
import functools
import io
import pickle

from mockserver.calls.journal import Budget
from mockserver.core.clock import iso

PROTOCOL = 5


class Shared:
    """The objects every world refers to and none owns: written by name, not by value.

    The pickler asks `reduce` only about objects of their classes (a dispatch table), not about
    every object of the world as a `persistent_id` would: that per-object call cost four times
    the pickling itself."""

    def __init__(self, settings, spec, tracer=None):
        self.budget = Budget(settings.journal_memory)    # the journals' memory, shared by every world
        self.tracer = tracer                    # the server's tracer (edge/tracing.py) its worlds hold, or None
        self.keeper = None                      # what its worlds tell of webhook attempts (world/webhooks.Keeper)
        self.by_key = {"settings": settings, "spec": spec, "journal budget": self.budget, "shared": self}
        if tracer is not None:
            self.by_key["tracer"] = tracer
        for operation_id, operation in spec.operations.items():
            self.by_key[f"op:{operation_id}"] = operation
        self.by_id = {id(obj): key for key, obj in self.by_key.items()}
        self.plain = {}                         # class -> rebuilt attribute by attribute (see set_attributes)
        # called after every world read back (made, woken, reset, restored): the serving process's collector
        # sets it so that the thousands of objects of a new world are never walked by a collection
        # (process/collector.py)
        self.settle = _nothing
        self.dispatch = copyreg.dispatch_table.copy()
        for obj in self.by_key.values():
            self.dispatch[type(obj)] = self.reduce

    def reduce(self, obj):
        key = self.by_id.get(id(obj))
        if key is None:                         # an object of the same class that is not shared: by value
            return obj.__reduce_ex__(PROTOCOL)
        return shared, (key,)


def _nothing():
    pass


def shared(key):
    """Stands for a shared object in the bytes; `thaw` answers it from its own server."""
    raise pickle.UnpicklingError("a frozen world can only be read by world.thaw")


MANAGED_DICT = 1 << 4                           # Py_TPFLAGS_MANAGED_DICT: attributes kept inline, no dict


def _plain(cls, dispatch):
    """Objects of `cls` can be rebuilt attribute by attribute (no reduce or setstate of their own)."""
    return (bool(cls.__flags__ & MANAGED_DICT) and cls not in dispatch and not hasattr(cls, "__setstate__")
            and cls.__reduce_ex__ is object.__reduce_ex__ and cls.__reduce__ is object.__reduce__)


def set_attributes(obj, state):
    """Rebuild an object by setting its attributes (pickle's default fills its `__dict__` instead, which
    leaves the object with a dict of its own: every attribute read of the world was then slower)."""
    for name, value in state.items():
        object.__setattr__(obj, name, value)


class _Freezer(pickle.Pickler):
    def __init__(self, file, shared):
        super().__init__(file, protocol=PROTOCOL)
        self.dispatch_table = shared.dispatch
        self._plain = shared.plain

    def reducer_override(self, obj):
        cls = type(obj)
        plain = self._plain.get(cls)
        if plain is None:
            plain = self._plain[cls] = _plain(cls, self.dispatch_table)
        if not plain:
            return NotImplemented
        reduced = obj.__reduce_ex__(PROTOCOL)
        if len(reduced) < 3 or type(reduced[2]) is not dict:
            return reduced
        return (*reduced[:3], *(tuple(reduced[3:5]) + (None, None))[:2], set_attributes)


class _Thawer(pickle.Unpickler):
    def __init__(self, file, shared):
        super().__init__(file)
        self._keys = shared.by_key

    def find_class(self, module, name):
        if module == __name__ and name == "shared":
            # not a bound method: the unpickler's memo would hold it, and the unpickler would then be in a
            # reference cycle with everything it read (freed only by a full collection)
            return functools.partial(_shared_object, self._keys)
        return super().find_class(module, name)


def _shared_object(keys, key):
    if key == "tracer" and key not in keys:     # saved by a server that traced, read by one that does not
        return None
    try:
        return keys[key]
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
    """An independent runtime from `freeze`'s bytes (then `shared.settle()`: see Shared)."""
    rt = loads(data, shared)
    rt.tracer = shared.tracer                   # saved by a server that did not trace, read by one that does
    rt.keeper = shared.keeper
    shared.settle()
    return rt


class Snapshot:
    """A saved world: the bytes of world.freeze and what the listing shows of it. A private snapshot
    belongs to the sandbox it was saved from and goes when that sandbox does."""

    __slots__ = ("name", "data", "sandbox", "saved_at", "clock_at", "journal", "resources", "private")

    def __init__(self, name, data, sandbox, saved_at, clock_at, journal, resources, private=False):
        self.name, self.data, self.sandbox, self.saved_at = name, data, sandbox, saved_at
        self.clock_at, self.journal, self.resources, self.private = clock_at, journal, resources, private

    def describe(self):
        return {"name": self.name, "sandbox": self.sandbox, "private": self.private, "saved_at": iso(self.saved_at),
                "clock_at": iso(self.clock_at), "journal": self.journal, "resources": self.resources,
                "bytes": len(self.data)}
