"""Small helpers the handler modules share."""

from ..clock import iso
from ..errors import not_found


def check_org(ctx, org_id):
    """An organization id in a path must be the caller's own; any other is not found."""
    if org_id != ctx.org:
        raise not_found("organization", org_id)


def results(entries):
    return {"results": [entry.data for entry in entries]}


def touch(rt, entry, now):
    """After an edit: new updated_at, a new revision, and the name index follows a rename."""
    entry.data["updated_at"] = iso(now)
    rt.bump(entry)
    if entry.table is not None:
        entry.table.reindex(entry)


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
