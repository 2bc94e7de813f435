"""Small helpers the handler modules share."""

import math
from itertools import islice

from mockserver.core.clock import iso
from mockserver.core.errors import not_found


def check_org(ctx, org_id):
    """An organization id in a path must be the caller's own; any other is not found."""
    if org_id != ctx.org:
        raise not_found("organization", org_id)


def touch(rt, entry, now, renamed=True):
    """After an edit: new updated_at, a new revision, and the name index follows a rename (`renamed` False: the
    caller knows the name did not change, as for the owner of a record just added)."""
    entry.data["updated_at"] = iso(now)
    rt.bump(entry)
    if renamed and entry.table is not None:
        rt.store.tables[entry.table].reindex(entry)


def bind(fn, *args):
    """A handler `ctx -> fn(ctx, *args)`: one generic function serves a family of operations."""
    def handler(ctx):
        return fn(ctx, *args)
    handler.__name__ = f"{fn.__name__}_{'_'.join(map(str, args))}"
    return handler


def merge(data, body, fields):
    """Copy the given fields of a request body onto a record (absent fields keep their value)."""
    for name in fields:
        if name in body:
            data[name] = body[name]


def optional(data, name, value):
    """Set a field that the platform leaves out rather than send as null."""
    if value is None:
        data.pop(name, None)
    else:
        data[name] = value


PAGE_SIZE = 20       # the spec's default page size


def _data(entry):
    return entry.data


def page(ctx, items, view=None):
    """`{"results"}` for a whole list, or one page of it with `pagination` when `page` or `page_size` is asked
    for (the spec's pagination example). Only the records of the page go through `view` (None: a record's data
    as it is). `items` may be a list or a store view (`Table.view`): a page then costs what its records cost,
    not the whole list."""
    if "page" not in ctx.query and "page_size" not in ctx.query:
        return {"results": [item.data for item in items] if view is None else [view(item) for item in items]}
    if view is None:
        view = _data
    number, size = ctx.query.get("page", 1), ctx.query.get("page_size", PAGE_SIZE)
    if not hasattr(items, "__len__"):
        items = list(items)
    start = (number - 1) * size
    chunk = items[start:start + size] if isinstance(items, (list, tuple)) else islice(items, start, start + size)
    return {"results": [view(item) for item in chunk],
            "pagination": {"page": number, "page_size": size, "total_count": len(items),
                           "total_pages": math.ceil(len(items) / size)}}
