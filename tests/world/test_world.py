"""A world frozen to bytes and thawed back: independent, sharing only the server's settings and document."""

import pickle
from dataclasses import replace

import pytest

from mockserver.app import MockServer
from mockserver.core.settings import Settings
from mockserver.world.frozen import Shared, freeze, thaw

ORG = "8d3e6a4b-1f2c-4b7a-9e1d-3c5f7a9b2d10"


@pytest.fixture(scope="module")
def server():
    return MockServer(Settings(clock="manual"))


def test_thawed_world_is_a_copy_that_shares_only_settings_and_document(server):
    rt = server.rt
    copy = thaw(freeze(rt, server.shared), server.shared)
    assert copy is not rt and copy.store is not rt.store
    assert copy.store.count() == rt.store.count()
    assert copy.settings is server.settings
    assert copy.scenarios.spec is server.spec
    original = {e.data["name"] for e in rt.store.projects.under(ORG)}
    project = next(iter(copy.store.projects.under(ORG)))
    project.data["name"] = "changed in the copy"
    assert {e.data["name"] for e in rt.store.projects.under(ORG)} == original


def test_settings_that_are_not_the_servers_are_written_by_value(server):
    rt = thaw(server.origin, server.shared)
    rt.settings = replace(server.settings, seed=99)
    copy = thaw(freeze(rt, server.shared), server.shared)
    assert copy.settings is not server.settings and copy.settings.seed == 99


def test_another_server_cannot_read_a_world_that_refers_to_objects_it_lacks(server):
    data = freeze(server.rt, server.shared)
    other = Shared(server.settings, server.spec)
    other.by_key.pop("settings")
    with pytest.raises(pickle.UnpicklingError, match="settings"):
        thaw(data, other)
    with pytest.raises(pickle.UnpicklingError):
        pickle.loads(data)


def test_thawed_objects_keep_their_attributes_inline_as_built_ones_do(server):
    """A thawed world must not be slower to read than a built one: pickle's default fills each object's
    `__dict__`, which gives it a dict of its own and makes every attribute read slower (2-4x)."""
    import gc
    built = server.build(server.settings, server.rt.clock, server.fixtures)
    copy = thaw(freeze(server.rt, server.shared), server.shared)
    for a, b in ((built, copy), (built.store, copy.store), (built.limiter, copy.limiter)):
        assert [type(r) for r in gc.get_referents(b)] == [type(r) for r in gc.get_referents(a)]


def test_entries_and_deployment_requests_come_back_field_for_field_and_shared_where_they_were(server):
    """Entries and deployment requests are written by their own reduce (store.py, lifecycle.py): every slot
    comes back, and an object the world refers to from two places is still one object in the copy."""
    rt = server.rt
    copy = thaw(freeze(rt, server.shared), server.shared)
    for name, table in rt.store.tables.items():
        theirs = copy.store.tables[name]
        assert list(theirs.rows) == list(table.rows)
        for ident, entry in table.rows.items():
            again = theirs.rows[ident]
            assert [getattr(again, slot) for slot in type(entry).__slots__] == \
                   [getattr(entry, slot) for slot in type(entry).__slots__]
            assert again.data is not entry.data
            if entry.parent is not None:
                assert theirs.children[entry.parent][ident] is again      # the index holds the same object
    requests = [request for found in rt.lifecycle.by_target.values() for request in found]
    assert requests, "the fixtures' world has deployment requests"
    for target, found in rt.lifecycle.by_target.items():
        for request, again in zip(found, copy.lifecycle.by_target[target], strict=True):
            assert again is not request
            assert [getattr(again, slot) for slot in type(request).__slots__] == \
                   [getattr(request, slot) for slot in type(request).__slots__]
            assert again.phase(rt.clock.now()) == request.phase(rt.clock.now())


def test_entries_and_requests_saved_the_way_pickle_writes_slotted_objects_still_load(server):
    """State files saved before the entries' and requests' own reduce hold them as pickle writes any slotted object
    (its class made empty, then a dict of its slots): they still load, field for field."""
    import copyreg
    import io

    from mockserver.world.frozen import _Freezer, loads
    from mockserver.world.lifecycle import DeploymentRequest
    from mockserver.world.store import Entry

    class OldWay(_Freezer):
        def reducer_override(self, obj):
            if type(obj) in (Entry, DeploymentRequest):
                return copyreg.__newobj__, (type(obj),), (None, {n: getattr(obj, n) for n in type(obj).__slots__})
            return super().reducer_override(obj)

    rt = server.rt
    entries = [entry for table in rt.store.tables.values() for entry in table.rows.values()]
    requests = [request for found in rt.lifecycle.by_target.values() for request in found]
    buffer = io.BytesIO()
    OldWay(buffer, server.shared).dump((entries, requests))
    assert b"_entry" not in buffer.getvalue()
    again_entries, again_requests = loads(buffer.getvalue(), server.shared)
    for old, new in ((entries, again_entries), (requests, again_requests)):
        for a, b in zip(old, new, strict=True):
            assert [getattr(b, n) for n in type(a).__slots__] == [getattr(a, n) for n in type(a).__slots__]
