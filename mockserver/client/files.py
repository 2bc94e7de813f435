"""Files a client writes: pacts merged in turn by the tests of several workers, and HAR logs."""

import json
import os

try:
    import fcntl  # tests on several workers write one pact file in turn
except ImportError:                             # pragma: no cover (Windows): no lock, one worker at a time
    fcntl = None


def write_json(path, document, merge):
    """Write a document, merged with the one at `path` under a lock when `merge` is given. The lock is the file
    `path`.lock, held by one writer at a time (tests on several xdist workers write one pact in turn) and
    deleted by its holder when it is done, so that nothing is left beside the pact."""
    path = os.fspath(path)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    lock = _lock(path + ".lock")
    try:
        if merge is not None and os.path.exists(path):
            with open(path) as handle:
                document = merge(json.load(handle), document)
        try:
            with open(path + ".tmp", "w") as handle:
                json.dump(document, handle, indent=2)
            os.replace(path + ".tmp", path)
        except BaseException:
            _remove(path + ".tmp")
            raise
    finally:
        _unlock(path + ".lock", lock)
    return document


def _lock(where):
    """The lock file `where` opened and locked (exclusive flock): the open descriptor, None without fcntl.
    A holder deletes the file before it lets go, so a writer that waited on a file deleted meanwhile (its
    path now names no file, or another one) has locked nothing the others see: it opens the path again."""
    if fcntl is None:                           # pragma: no cover (Windows): no lock, no lock file
        return None
    while True:
        descriptor = os.open(where, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            try:
                named, held = os.stat(where), os.fstat(descriptor)
                if (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino):
                    return descriptor
            except FileNotFoundError:
                pass
        except BaseException:
            os.close(descriptor)
            raise
        os.close(descriptor)


def _unlock(where, descriptor):
    if descriptor is None:                      # pragma: no cover (Windows)
        return
    try:
        _remove(where)                          # while still held: whoever locks it next sees it is gone
    finally:
        os.close(descriptor)                    # lets the lock go


def _remove(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def merge_pacts(old, new):
    """One pact of two of the same consumer and provider: the old interactions, then the new ones that differ
    (one whose description is taken but differs gets a numbered description)."""
    if (old.get("consumer"), old.get("provider")) != (new["consumer"], new["provider"]):
        raise AssertionError(f"{new['consumer']['name']} -> {new['provider']['name']}: the file holds a pact of "
                             f"{old.get('consumer')} -> {old.get('provider')}")
    def same(item):                             # a V4 interaction's key says it; a V3 one is compared whole
        return item.get("key") or json.dumps({k: v for k, v in item.items() if k != "description"}, sort_keys=True)

    interactions = list(old.get("interactions", []))
    held = {same(item) for item in interactions}
    names = {item["description"] for item in interactions}
    for item in new["interactions"]:
        if same(item) in held:
            continue
        held.add(same(item))
        base, count = item["description"], 1
        while item["description"] in names:
            count += 1
            item = {**item, "description": f"{base} #{count}"}
        names.add(item["description"])
        interactions.append(item)
    notes = dict(new["metadata"].get("idp-mockserver", {}))
    before = old.get("metadata", {}).get("idp-mockserver", {})
    for key in ("cut", "left_out"):
        notes[key] = before.get(key, []) + notes.get(key, [])
    notes["interactions"] = len(interactions)
    notes["calls"] = before.get("calls", 0) + notes.get("calls", 0)
    return {**new, "interactions": interactions, "metadata": {**new["metadata"], "idp-mockserver": notes}}
