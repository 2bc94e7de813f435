"""The store: every resource of every organization, in tables indexed by id and by parent.

An `Entry` holds the public record (`data`, exactly what the API returns), the id of
the organization it belongs to, the id of its parent, and `private` values that must
never be returned (secret values, secret registry config, webhook secrets). Lookups by
id check the organization, so an id of another organization is simply not found.

Every rule a write checks reads an index kept up to date on write, as a database keeps a
unique index: by id, by parent (in insertion order), by (parent, unique name) and, for
services, variables and secrets, by (parent, kind or type). No write walks its siblings, so its cost does not grow with
the table. Entries name their table by its name, not by reference: a world's object graph
has no cycle, so a retired world is freed at once, without waiting for a full collection.
"""

from mockserver.core.errors import not_found

# Which tables hold the children of a record of a table (deleting a parent deletes these).
CHILD_TABLES = {
    "organizations": ("projects", "clusters", "registries", "webhooks", "labels_groups", "credentials"),
    "projects": ("environments", "variables", "secrets"),
    "environments": ("services", "variables", "secrets", "deployment_rules"),
    "services": ("variables", "secrets", "backups", "custom_domains"),
}
# How the records of a parent are grouped in a second index: services by kind, variables and secrets by
# variable_type (a list of one kind, the overrides placed somewhere, read without walking the rest).
def service_kind(entry):
    return entry.meta["kind"]


def variable_type(entry):
    return entry.data["variable_type"]


GROUPS = {"services": service_kind, "variables": variable_type, "secrets": variable_type}
# The field that names a record uniquely within its parent, and whether case is ignored.
UNIQUE = {
    "projects": ("name", False), "environments": ("name", True), "services": ("name", False),
    "registries": ("name", False), "labels_groups": ("name", False), "credentials": ("name", False),
    "custom_domains": ("domain", True), "variables": ("key", False), "secrets": ("key", False),
}
NOUNS = {
    "organizations": "organization", "projects": "project", "environments": "environment",
    "services": "service", "variables": "variable", "secrets": "secret", "clusters": "cluster",
    "registries": "container registry", "webhooks": "webhook", "labels_groups": "labels group",
    "credentials": "credentials", "backups": "backup", "custom_domains": "custom domain",
    "deployment_rules": "deployment rule",
}


class Entry:
    __slots__ = ("id", "data", "org", "parent", "private", "meta", "table")

    def __init__(self, data, org, parent=None, private=None, meta=None):
        self.id = data["id"]
        self.data = data
        self.org = org
        self.parent = parent
        self.private = private
        self.meta = meta if meta is not None else {}
        self.table = None                      # the name of the table that holds it

    def __reduce__(self):
        # read back by one call (`_entry`): cheaper than pickle's way for a slotted object (a dict of its slots, set
        # one by one) in the copy of a world that every new sandbox is (world/frozen.py)
        return _entry, (self.id, self.data, self.org, self.parent, self.private, self.meta, self.table)


def _entry(ident, data, org, parent, private, meta, table):
    """An Entry read back from a frozen world (`Entry.__reduce__`)."""
    entry = Entry.__new__(Entry)
    entry.id, entry.data, entry.org, entry.parent, entry.private, entry.meta = ident, data, org, parent, private, meta
    entry.table = table
    return entry


class Table:
    def __init__(self, name, everywhere=None):
        self.name = name
        self.everywhere = set() if everywhere is None else everywhere   # the ids of every table of the store
        self.noun = NOUNS[name]
        self.rows: dict[str, Entry] = {}
        self.children: dict[str | None, dict[str, Entry]] = {}   # parent id -> {id: Entry}, in insertion order
        self.unique: str | None                # the field of UNIQUE, None for a table without one
        self.unique, self.casefold = UNIQUE.get(name, (None, False))
        self.names: dict[tuple, str | tuple[str, ...]] = {}   # (parent id, name) -> id (a tuple when several share it)
        self._named: dict[str, tuple] = {}     # id -> its key in `names`
        self.group = GROUPS.get(name)
        # (parent id, group) -> {id: Entry}, in insertion order; None exactly when `group` is
        self.groups: dict[tuple, dict[str, Entry]] | None = {} if self.group else None

    def _name_key(self, parent, name):
        return (parent, name.casefold() if self.casefold else name)

    def add(self, entry):
        ident, parent = entry.id, entry.parent
        self.rows[ident] = entry
        self.everywhere.add(ident)
        _put(self.children, parent, ident, entry)
        if self.group is not None:
            _put(self.groups, (parent, self.group(entry)), ident, entry)
        entry.table = self.name
        self.reindex(entry)
        return entry

    def reindex(self, entry):
        """Follow a change of the record's unique name (call after editing it)."""
        if self.unique is None:
            return
        name = entry.data.get(self.unique)
        key = None if name is None else self._name_key(entry.parent, name)
        old = self._named.get(entry.id)
        if key == old:
            return
        if old is not None:
            del self._named[entry.id]
            self._unname(old, entry.id)
        if key is not None:
            held = self.names.get(key)
            self.names[key] = entry.id if held is None else _ids(held) + (entry.id,)
            self._named[entry.id] = key

    def _unname(self, key, ident):
        rest = tuple(i for i in _ids(self.names.get(key)) if i != ident)
        if rest:
            self.names[key] = rest[0] if len(rest) == 1 else rest
        else:
            self.names.pop(key, None)

    def find(self, ident, org=None):
        entry = self.rows.get(ident)
        if entry is None or (org is not None and entry.org != org):
            return None
        return entry

    def get(self, ident, org, noun=None, parent=None):
        """The record, or 404; with `parent`, only a record under that parent counts."""
        entry = self.find(ident, org)
        if entry is None or (parent is not None and entry.parent != parent):
            raise not_found(noun or self.noun, ident)
        return entry

    def under(self, parent):
        """The records of a parent, in the order they were added (a copy: the caller may delete)."""
        return list(self.children.get(parent, {}).values())

    def view(self, parent, group=None):
        """The records of a parent (of one group: a kind of service, a variable_type) without copying them:
        for reads that page through or count them. Do not add or remove records of that parent meanwhile."""
        if group is None:
            found = self.children.get(parent)
        else:                                  # asked of a grouped table only (an ungrouped one has groups None)
            found = self.groups.get((parent, group))  # type: ignore[union-attr]
        return (found or {}).values()

    def named(self, parent, name):
        """The records of a parent that carry this unique name (see UNIQUE): usually none or one."""
        return [self.rows[ident] for ident in _ids(self.names.get(self._name_key(parent, name)))]

    def remove(self, ident):
        entry = self.rows.pop(ident, None)
        if entry is not None:
            self.everywhere.discard(ident)
            key = self._named.pop(ident, None)
            if key is not None:
                self._unname(key, ident)
            _drop(self.children, entry.parent, ident)
            if self.group is not None:
                _drop(self.groups, (entry.parent, self.group(entry)), ident)
        return entry

    def name_taken(self, parent, name, exclude=()):
        """Does another record of this parent carry this unique name (see UNIQUE)? `exclude`: an id, or
        ids, that do not count."""
        held = self.names.get(self._name_key(parent, name))
        if not exclude or held is None:        # (most asks: a create, nothing to leave out)
            return held is not None
        exclude = (exclude,) if isinstance(exclude, str) else exclude
        return any(ident not in exclude for ident in _ids(held))


def _put(index, key, ident, entry):
    """Add `entry` to the group `key` of an index of groups, the group made when it is the first (not by setdefault,
    whose new dict would be made on every add)."""
    group = index.get(key)
    if group is None:
        group = index[key] = {}
    group[ident] = entry


def _drop(index, key, ident):
    """Remove `ident` from the group `key` of an index of groups, and the group once it is empty."""
    group = index.get(key)
    if group is not None:
        group.pop(ident, None)
        if not group:
            del index[key]


def _ids(held):
    """The ids an entry of `Table.names` holds: none, one (a str, the common case) or several."""
    return () if held is None else (held,) if isinstance(held, str) else held


class Store:
    def __init__(self):
        self.ids: set[str] = set()             # every id any table holds
        self.tables = {name: Table(name, self.ids) for name in NOUNS}
        for name, table in self.tables.items():
            setattr(self, name, table)

    def delete(self, table, ident):
        """Remove a record and, depth first, everything below it."""
        entry = self.tables[table].remove(ident)
        if entry is None:
            return None
        for child_table in CHILD_TABLES.get(table, ()):
            for child in self.tables[child_table].under(ident):
                self.delete(child_table, child.id)
        return entry

    def holds(self, ident):
        """Whether any table has a record with this id."""
        return ident in self.ids

    def count(self):
        return {name: len(table.rows) for name, table in self.tables.items()}
