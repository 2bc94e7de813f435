"""Environment variables and secrets at project, environment and service level.

Rules (docs/decisions.md, "Variables and secrets"): levels, highest first, are BUILT_IN > PROJECT >
ENVIRONMENT > service scopes. A key is unique per owner (409 when taken). A `mount_path`
makes a FILE variable. An override sits strictly lower than its target and carries the
target's key, so it never collides with it (a second override of that key at the same
place, or a record of that key the place owns, is a 409). An alias sits at the target's
level or lower. Either must be placed where the target is visible, else 400.

Every service's BUILT_IN variables live at its environment (with `service_id` naming the
service), so every service of the environment sees them, as on the platform. Built-ins are
managed by the platform: editing or deleting one conflicts with that (409). A service's
list shows what it sees: its own records, those of its environment (built-ins included)
and project, an override hiding the record it overrides. Secret values are kept private:
no response carries them. Deleting a record deletes its overrides and aliases.

An edit carries over to what points to the record: renaming it renames its overrides (and
theirs), so the rename is a 409 when one of them would land on a key its place already holds;
an alias carries its target's value and follows its edits, so an edit of an alias changes its key,
description or interpolation flag and leaves the value sent aside.
"""

from mockserver.api.handlers.common import bind, optional, page, touch
from mockserver.core.clock import iso
from mockserver.core.errors import ApiError, conflict, not_found
from mockserver.core.kinds import WITH_VARIABLES
from mockserver.world.store import Entry

SCOPE_RANK = {"BUILT_IN": 4, "PROJECT": 3, "ENVIRONMENT": 2, **{kind.type: 1 for kind in WITH_VARIABLES}}
LEVELS = {"Project": "PROJECT", "Environment": "ENVIRONMENT", **{kind.title: kind.path for kind in WITH_VARIABLES}}
SERVICE_PARAMS = tuple(name for kind in WITH_VARIABLES for name in kind.params)


class Family:
    def __init__(self, table, word, reference, item_param):
        self.table, self.word, self.reference, self.item_param = table, word, reference, item_param

    @property
    def secret(self):
        return self.table == "secrets"


VARIABLES = Family("variables", "Variable", "variable", "variableId")
SECRETS = Family("secrets", "Secret", "secret", "secretId")


# ---------------------------------------------------------------- owners
def owner_of(ctx, level):
    store = ctx.rt.store
    if level == "PROJECT":
        return store.projects.get(ctx.params["projectId"], ctx.org)
    if level == "ENVIRONMENT":
        return store.environments.get(ctx.params["environmentId"], ctx.org)
    ident = next(ctx.params[name] for name in SERVICE_PARAMS if name in ctx.params)
    return _service(ctx, ident, level)


def _service(ctx, ident, kind=None):
    entry = ctx.rt.store.services.find(ident, ctx.org)
    if entry is None or (kind is not None and entry.meta["kind"] != kind) or entry.meta["kind"] == "database":
        raise not_found(kind or "service", ident)
    return entry


def scope_of(owner):
    return owner.meta.get("type") or ("ENVIRONMENT" if "project" in owner.data else "PROJECT")


def chain(rt, owner):
    """The owner and its ancestors up to the project: [service, environment, project]."""
    out = [owner]
    table = "services" if "type" in owner.meta else ("environments" if "project" in owner.data else None)
    if table == "services":
        env = rt.store.environments.find(owner.parent)
        out += [env, rt.store.projects.find(env.parent)]
    elif table == "environments":
        out.append(rt.store.projects.find(owner.parent))
    return out


def owner_entry(rt, entry):
    """The project, environment or service that holds a variable or secret."""
    store = rt.store
    return store.services.find(entry.parent) or store.environments.find(entry.parent) or \
        store.projects.find(entry.parent)


def level_of(entry):
    """The level a record sits at: BUILT_IN for the platform's records, else its owner's scope."""
    return "BUILT_IN" if entry.data["variable_type"] == "BUILT_IN" else entry.meta["level"]


def resolve(ctx, family, target, scope, ident, kind):
    """The place an override or alias goes to, named by its scope and parent id; 404 when the id names no record
    of that scope. The id may name the target itself: its own place, when the scope names its level. With
    BUILT_IN the id names a built-in record: the place is where built-ins live, their environment."""
    store, field = ctx.rt.store, f"body.{kind.lower()}_parent_id"
    if ident == target.id:
        level = level_of(target)
        if scope != level:
            raise ApiError(400, f"{field} names the {family.reference} itself ({target.data['key']}), which is "
                           f"{level}: {kind.lower()}_scope must then be {level}, not {scope}",
                           [(f"body.{kind.lower()}_scope",
                             f"must be {level} when {field} names the {family.reference}")])
        return owner_entry(ctx.rt, target)
    if scope == "BUILT_IN":
        found = store.variables.find(ident, ctx.org) or store.secrets.find(ident, ctx.org)
        if found is None or found.data["variable_type"] != "BUILT_IN":
            raise ApiError(404, f"built-in variable or secret {ident} not found ({field} with scope BUILT_IN names "
                           "a built-in record)", [(field, "names no built-in variable or secret")])
        return store.environments.find(found.parent)
    if scope == "PROJECT":
        return store.projects.get(ident, ctx.org)
    if scope == "ENVIRONMENT":
        return store.environments.get(ident, ctx.org)
    return _service(ctx, ident, scope.lower())


def rank(entry):
    return SCOPE_RANK["BUILT_IN" if entry.data["variable_type"] == "BUILT_IN" else entry.meta["level"]]


# ---------------------------------------------------------------- records
def make(ctx, family, owner, key, value, scope, kind, mount_path=None, description=None, interpolation=None,
         target=None, owned_by="PLATFORM", service=None):
    rt = ctx.rt
    service = service if service is not None else (owner if "type" in owner.meta else None)
    stamped = iso(ctx.now)
    data = {"id": rt.new_id(), "created_at": stamped, "updated_at": stamped, "key": key, "scope": scope,
            "variable_type": kind, "owned_by": owned_by, "enable_interpolation_in_file": interpolation}
    # the spec types these as plain strings (not "or null"): a record without them leaves them out
    optional(data, "mount_path", mount_path)
    if service is not None:
        data.update(service_id=service.id, service_name=service.data["name"], service_type=service.meta["type"])
    optional(data, "description", description)
    private = None
    if family.secret:
        private = {"value": value}
    else:
        data["value"] = value
        data["is_secret"] = False
    if target is not None:
        data[f"{'overridden' if kind == 'OVERRIDE' else 'aliased'}_{family.reference}"] = reference(family, target)
    meta = {"level": scope_of(owner), "target": target.id if target is not None else None}
    entry = rt.store.tables[family.table].add(Entry(data, ctx.org, owner.id, private, meta))
    if target is not None:
        rt.derived.setdefault(target.id, {})[entry.id] = None
    touch(rt, owner, ctx.now, renamed=False)
    return entry


def reference(family, target):
    """What an override or alias shows of its target: a secret's reference always holds `description` (null
    when none, as the spec lists it among its fields) and never a value."""
    data = target.data
    out = {"id": data["id"], "key": data["key"], "scope": data["scope"], "variable_type": data["variable_type"]}
    optional(out, "mount_path", data.get("mount_path"))
    if family.secret:
        out["description"] = data.get("description")
        out["enable_interpolation_in_file"] = data["enable_interpolation_in_file"]
    else:
        out["value"] = data["value"]
    return out


def key_taken(rt, family, owner_id, key, exclude=()):
    """A key names one record per owner, whatever its type; `exclude` are ids that do not count
    (the record being renamed, or the target of an override, whose key the override carries)."""
    return rt.store.tables[family.table].name_taken(owner_id, key, exclude)


class Seen:
    """What an owner sees (its list), without building it: the records of its project, environment and
    itself in that order, less those an override placed at one of these hides. Its length and a page of
    it cost what the page costs, however many records the places hold."""

    def __init__(self, table, places):
        self.views = [table.view(place.id) for place in places]
        self.hidden = {e.meta["target"] for place in places for e in table.view(place.id, "OVERRIDE")}

    def __len__(self):
        return sum(len(view) for view in self.views) - len(self.hidden)

    def __iter__(self):
        hidden = self.hidden
        for view in self.views:
            for entry in view:
                if entry.id not in hidden:
                    yield entry


def visible(rt, family, owner):
    return Seen(rt.store.tables[family.table], list(reversed(chain(rt, owner))))


def sees(rt, family, owner, entry):
    """Is `entry` in what `owner` sees? It lives at the owner or above it, and no override placed there
    hides it (read from the record's own overrides, not from the lists of those places)."""
    places = {place.id for place in chain(rt, owner)}
    return entry.parent in places and not any(
        dependent.data["variable_type"] == "OVERRIDE" and dependent.parent in places
        for dependent in dependents(rt, family, entry.id))


# ---------------------------------------------------------------- handlers
def create(ctx, family, level):
    rt, body = ctx.rt, ctx.body
    owner = owner_of(ctx, level)
    if key_taken(rt, family, owner.id, body["key"]):
        raise conflict(f"{family.reference} key {body['key']!r} already exists at this scope")
    mount_path = body.get("mount_path")
    entry = make(ctx, family, owner, body["key"], body["value"], scope_of(owner),
                 "FILE" if mount_path else "VALUE", mount_path, body.get("description"),
                 body.get("enable_interpolation_in_file"))
    return entry.data


def list_visible(ctx, family, level):
    return page(ctx, visible(ctx.rt, family, owner_of(ctx, level)))


def _item(ctx, family, level, owned):
    """A record through an owner's path: one it owns (edit, delete) or one it sees (get)."""
    owner = owner_of(ctx, level)
    ident = ctx.params[family.item_param]
    table = ctx.rt.store.tables[family.table]
    entry = table.find(ident, ctx.org)
    if entry is not None and entry.parent == owner.id:
        return owner, entry
    seen = entry is not None and sees(ctx.rt, family, owner, entry)
    # a built-in seen through a service's path answers as the platform-managed record it is (409 on change)
    if not seen or (owned and entry.data["variable_type"] != "BUILT_IN"):
        raise not_found(family.reference, ident)
    return owner, entry


def get(ctx, family, level):
    return _item(ctx, family, level, owned=False)[1].data


def edit(ctx, family, level):
    rt, body = ctx.rt, ctx.body
    owner, entry = _item(ctx, family, level, owned=True)
    data = entry.data
    if data["variable_type"] == "BUILT_IN":
        raise conflict(f"built-in {family.reference} {data['key']} is managed by the platform and cannot be edited")
    alias = data["variable_type"] == "ALIAS"
    if data["variable_type"] != "OVERRIDE":          # an override keeps the key of what it overrides
        key = body["key"]
        if key != data["key"]:
            if key_taken(rt, family, owner.id, key, exclude=(entry.id,)):
                raise conflict(f"{family.reference} key {key!r} already exists at this scope")
            _check_renamed_overrides(rt, family, entry, key)
        data["key"] = key
    if "description" in body:
        optional(data, "description", body["description"])
    if "enable_interpolation_in_file" in body:
        data["enable_interpolation_in_file"] = body["enable_interpolation_in_file"]
    # an alias's value is its target's: the value an edit sends is not taken (the document lets every edit send
    # one, so refusing it would refuse a valid request; for a secret, a 400 would also confirm a guess)
    if not alias:
        if family.secret:
            entry.private["value"] = body["value"]
        else:
            data["value"] = body["value"]
    touch(rt, entry, ctx.now)
    touch(rt, owner, ctx.now)
    follow(rt, family, entry, ctx.now)
    return data


def renamed_overrides(rt, family, entry):
    """The records a rename of `entry` renames: its overrides, theirs, and so on (an override carries the key of
    what it overrides; an alias has a key of its own, so the chain stops there)."""
    for dependent in dependents(rt, family, entry.id):
        if dependent.data["variable_type"] == "OVERRIDE":
            yield dependent
            yield from renamed_overrides(rt, family, dependent)


def _check_renamed_overrides(rt, family, entry, key):
    """Renaming a record renames its overrides: 409 when one would land on a key its place already holds (one
    lookup in the place's unique-key index per override; at most one override of a key per place)."""
    table = rt.store.tables[family.table]
    for override in renamed_overrides(rt, family, entry):
        if table.name_taken(override.parent, key, exclude=(override.id,)):
            place = owner_entry(rt, override)
            where = f"{scope_of(place).lower()} {place.id}"
            held = table.named(override.parent, key)[0]
            raise ApiError(409, f"cannot rename {family.reference} {entry.data['key']} to {key!r}: {where} already "
                           f"holds {family.reference} key {key!r} ({held.id}), and the rename would rename the "
                           f"override {override.id} of {entry.data['key']} there too",
                           [("body.key", f"{key!r} is taken at {where}, where an override of the "
                                         f"{family.reference} lives")])


def follow(rt, family, entry, now):
    """After an edit of `entry`: what points to it follows. Every override and alias shows it as it is now; an
    override carries its key, an alias its value (a secret alias keeps the value privately); and so on down the
    overrides and aliases of those."""
    ref_name = f"aliased_{family.reference}", f"overridden_{family.reference}"
    for dependent in dependents(rt, family, entry.id):
        kind = dependent.data["variable_type"]
        dependent.data[ref_name[kind == "OVERRIDE"]] = reference(family, entry)
        if kind == "OVERRIDE":
            dependent.data["key"] = entry.data["key"]
        elif family.secret:
            dependent.private["value"] = entry.private["value"]
        else:
            dependent.data["value"] = entry.data["value"]
        touch(rt, dependent, now)
        follow(rt, family, dependent, now)


def delete(ctx, family, level):
    rt = ctx.rt
    owner, entry = _item(ctx, family, level, owned=True)
    if entry.data["variable_type"] == "BUILT_IN":
        raise conflict(f"built-in {family.reference} {entry.data['key']} is managed by the platform and cannot be "
                       "deleted")
    remove(rt, family, entry)
    touch(rt, owner, ctx.now)


def dependents(rt, family, ident):
    """The overrides and aliases of a record (ids of records deleted with their owner are skipped)."""
    rows = rt.store.tables[family.table].rows
    return [rows[i] for i in rt.derived.get(ident, ()) if i in rows]


def remove(rt, family, entry):
    for dependent in dependents(rt, family, entry.id):
        remove(rt, family, dependent)
    rt.store.tables[family.table].remove(entry.id)
    rt.derived.pop(entry.id, None)
    rt.derived.get(entry.meta.get("target"), {}).pop(entry.id, None)


LEVELS_TEXT = "levels, highest first: BUILT_IN > PROJECT > ENVIRONMENT > service"


def check_level(family, target, scope, kind, where):
    """The level rule: an override strictly lower than its target, an alias at its level or lower (400)."""
    key, level = target.data["key"], level_of(target)
    if kind == "OVERRIDE" and SCOPE_RANK[scope] >= rank(target):
        raise ApiError(400, f"an override must be at a lower scope than the {family.reference} it overrides "
                       f"({key} is {level}); {scope} is not lower ({LEVELS_TEXT})", [(where, "must be a lower scope")])
    if kind == "ALIAS" and SCOPE_RANK[scope] > rank(target):
        raise ApiError(400, f"an alias must be at the same scope as the {family.reference} it aliases or lower "
                       f"({key} is {level}); {scope} is higher ({LEVELS_TEXT})",
                       [(where, "must not be a higher scope")])


def not_seen(family, target, place, kind, where):
    noun = family.reference
    return ApiError(404, f"{noun} {target.id} ({target.data['key']}) not found at {scope_of(place).lower()} "
                    f"{place.id}: an {kind.lower()} is made of a {noun} the place sees (its own, its environment's "
                    f"and its project's, and the built-ins of its environment)", [(where, f"does not see the {noun}")])


def place_for(ctx, family, target, scope, place, kind):
    """Check a place chosen by *_scope and *_parent_id: a place off the target's line does not see it (404); on
    the line (at or above it, or above its owner) the level rule decides (400); a place above the owner of
    what it would override (only a built-in's project passes the level rule) still does not see it (404)."""
    rt, field = ctx.rt, kind.lower()
    above_place = {entry.id for entry in chain(rt, place)}
    above_target = {entry.id for entry in chain(rt, owner_entry(rt, target))}
    if target.parent not in above_place and place.id not in above_target:
        raise not_seen(family, target, place, kind, f"body.{field}_parent_id")
    check_level(family, target, scope, kind, f"body.{field}_scope")
    if target.parent not in above_place:
        raise not_seen(family, target, place, kind, f"body.{field}_parent_id")


def service_place(ctx, family, target, service, kind):
    """Check a place given by a service's own route: the target must be one the service sees (404 otherwise,
    as reading it through that path); overriding the service's own record conflicts with what it holds (409)."""
    if target.parent not in {entry.id for entry in chain(ctx.rt, service)}:
        raise not_seen(family, target, service, kind, "path")
    if kind == "OVERRIDE" and target.parent == service.id:
        noun, title = family.reference, service.meta["type"].lower()
        raise conflict(f"{noun} {target.id} ({target.data['key']}) belongs to {title} {service.id} itself: an override "
                       f"must be at a lower scope than the {noun} it overrides and nothing is lower than a service; "
                       f"edit the {noun} instead")


def _derive(ctx, family, target, place, kind, key, value):
    """Create an override or alias of `target` at `place` (its rules already checked): 409 when the place already
    overrides that key or owns a record with the new key."""
    rt, body = ctx.rt, ctx.body
    if kind == "OVERRIDE" and any(e.data["variable_type"] == "OVERRIDE"
                                  for e in rt.store.tables[family.table].named(place.id, key)):
        raise conflict(f"{family.reference} {key} is already overridden at this place")
    if key_taken(rt, family, place.id, key, exclude=(target.id,) if kind == "OVERRIDE" else ()):
        raise conflict(f"{family.reference} key {key!r} already exists at this scope")
    mount_path = target.data.get("mount_path") if kind == "OVERRIDE" else None
    entry = make(ctx, family, place, key, value, scope_of(place), kind, mount_path, body.get("description"),
                 body.get("enable_interpolation_in_file"), target=target)
    return entry.data


def _target(ctx, family, param):
    return ctx.rt.store.tables[family.table].get(ctx.params[param], ctx.org, family.reference)


def _value(family, target):
    return target.private["value"] if family.secret else target.data["value"]


def create_derived(ctx, family, kind):
    """POST /variable|secret/{id}/override|alias: the place is chosen by *_scope and *_parent_id."""
    target = _target(ctx, family, family.item_param)
    field = kind.lower()
    scope = ctx.body[f"{field}_scope"]
    place = resolve(ctx, family, target, scope, ctx.body[f"{field}_parent_id"], kind)
    place_for(ctx, family, target, scope, place, kind)
    if kind == "OVERRIDE":
        return _derive(ctx, family, target, place, kind, target.data["key"], ctx.body["value"])
    return _derive(ctx, family, target, place, kind, ctx.body["key"], _value(family, target))


def service_derived(ctx, family, kind, service_kind, param):
    """POST /<kind>/{id}/environmentVariable|secret/{id}/override|alias: the place is that service."""
    service = _path_service(ctx, service_kind)
    target = _target(ctx, family, param)
    service_place(ctx, family, target, service, kind)
    if kind == "OVERRIDE":
        return _derive(ctx, family, target, service, kind, target.data["key"], ctx.body["value"])
    return _derive(ctx, family, target, service, kind, ctx.body["key"], _value(family, target))


def _path_service(ctx, kind):
    service_param = next(kind.param for kind in WITH_VARIABLES if kind.param in ctx.params)
    return _service(ctx, ctx.params[service_param], kind)


# ---------------------------------------------------------------- built-ins
def add_built_ins(ctx, service, env):
    """The platform's variables of a new service, at its environment; the service keeps their ids."""
    kind, short = service.meta["type"], service.id[:8].upper()
    name = service.data["name"]
    made = []

    def built_in(family, key, value):
        made.append(make(ctx, family, env, key, value, "BUILT_IN", "BUILT_IN", service=service).id)

    if kind == "DATABASE":
        prefix = f"PLATFORM_{service.data['type']}_{short}"
        for key, value in ((f"{prefix}_HOST", service.data["host"]), (f"{prefix}_PORT", str(service.data["port"])),
                           (f"{prefix}_LOGIN", "superuser"), (f"{prefix}_DATABASE_NAME", name)):
            built_in(VARIABLES, key, value)
        built_in(SECRETS, f"{prefix}_PASSWORD", ctx.rt.fake.password(24))
    else:
        prefix = f"PLATFORM_{kind}_{short}"
        built_in(VARIABLES, f"{prefix}_HOST_INTERNAL", f"{name}.{env.id[:8]}.svc.cluster.local")
        if any(port.get("publicly_accessible") for port in service.data.get("ports") or []):
            built_in(VARIABLES, f"{prefix}_HOST_EXTERNAL", f"{name}-{short.lower()}.platform.example")
    service.meta["built_ins"] = tuple(made)


def remove_built_ins(ctx, service):
    """The built-ins a service put in its environment go with it (with their overrides and aliases)."""
    for family in (VARIABLES, SECRETS):
        rows = ctx.rt.store.tables[family.table].rows
        for ident in service.meta.get("built_ins", ()):
            if ident in rows:
                remove(ctx.rt, family, rows[ident])


# ---------------------------------------------------------------- operation table
def operations():
    out = {}
    for title, level in LEVELS.items():
        for family in (VARIABLES, SECRETS):
            word, plural = family.word, f"{family.word}s"
            out[f"create{title}{word}"] = bind(create, family, level)
            out[f"list{title}{plural}"] = bind(list_visible, family, level)
            out[f"get{title}{word}"] = bind(get, family, level)
            out[f"edit{title}{word}"] = bind(edit, family, level)
            out[f"delete{title}{word}"] = bind(delete, family, level)
            if level not in ("PROJECT", "ENVIRONMENT"):
                param = family.item_param
                if (level, family.word) == ("container", "Variable"):
                    param = "environmentVariableId"
                out[f"override{title}{word}"] = bind(service_derived, family, "OVERRIDE", level, param)
                out[f"alias{title}{word}"] = bind(service_derived, family, "ALIAS", level, param)
    for family in (VARIABLES, SECRETS):
        out[f"create{family.word}Override"] = bind(create_derived, family, "OVERRIDE")
        out[f"create{family.word}Alias"] = bind(create_derived, family, "ALIAS")
    return out


HANDLERS = operations()
