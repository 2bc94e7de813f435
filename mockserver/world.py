"""One sandbox's world as bytes, and back: how sandboxes are created, reset and snapshotted.

`freeze(rt)` pickles a whole `Runtime` (store, tokens, rate-limit windows, deployment queues,
webhooks and deliveries, journal, scenarios with their counters, the fake-data generator and
the clock) except what every world shares: the settings of the server and the compiled
document with its operations, which are written as references. `thaw(data, shared)` builds
an independent copy. At the default fixtures this takes a fraction of a millisecond, which is
why a sandbox is made by copying a world built once rather than replaying the fixtures.
"""

import copyreg
import io
import pickle

PROTOCOL = 5


class Shared:
    """The objects every world refers to and none owns: written by name, not by value.

    The pickler asks `reduce` only about objects of their classes (a dispatch table), not about
    every object of the world as a `persistent_id` would: that per-object call cost four times
    the pickling itself."""

    def __init__(self, settings, spec):
        self.by_key = {"settings": settings, "spec": spec}
        for operation_id, operation in spec.operations.items():
            self.by_key[f"op:{operation_id}"] = operation
        self.by_id = {id(obj): key for key, obj in self.by_key.items()}
        self.dispatch = copyreg.dispatch_table.copy()
        for obj in self.by_key.values():
            self.dispatch[type(obj)] = self.reduce

    def reduce(self, obj):
        key = self.by_id.get(id(obj))
        if key is None:                         # an object of the same class that is not shared: by value
            return obj.__reduce_ex__(PROTOCOL)
        return shared, (key,)


def shared(key):
    """Stands for a shared object in the bytes; `thaw` answers it from its own server."""
    raise pickle.UnpicklingError("a frozen world can only be read by world.thaw")


class _Freezer(pickle.Pickler):
    def __init__(self, file, shared):
        super().__init__(file, protocol=PROTOCOL)
        self.dispatch_table = shared.dispatch


class _Thawer(pickle.Unpickler):
    def __init__(self, file, shared):
        super().__init__(file)
        self._keys = shared.by_key

    def find_class(self, module, name):
        if module == __name__ and name == "shared":
            return self.shared
        return super().find_class(module, name)

    def shared(self, key):
        try:
            return self._keys[key]
        except KeyError:
            raise pickle.UnpicklingError(f"the saved world refers to {key!r}, which this server does not have") from None


def freeze(rt, shared, journal=True):
    """The runtime as bytes; without `journal`, its call journal is left out (saved empty)."""
    buffer = io.BytesIO()
    kept = rt.journal
    if not journal:
        rt.journal = kept.empty_copy()
    try:
        _Freezer(buffer, shared).dump(rt)
    finally:
        rt.journal = kept
    return buffer.getvalue()


def thaw(data, shared):
    """An independent runtime from `freeze`'s bytes."""
    return _Thawer(io.BytesIO(data), shared).load()
