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
"""

from ..errors import ApiError, conflict, not_found
from ..store import Entry
from .common import bind, optional, page, touch

SCOPE_RANK = {"BUILT_IN": 4, "PROJECT": 3, "ENVIRONMENT": 2, "APPLICATION": 1, "CONTAINER": 1, "JOB": 1,
              "HELM": 1, "TERRAFORM": 1}
LEVELS = {"Project": "PROJECT", "Environment": "ENVIRONMENT", "Application": "application",
          "Container": "container", "Job": "job", "Helm": "helm", "Terraform": "terraform"}
SERVICE_PARAMS = ("app_id", "applicationId", "containerId", "jobId", "helmId", "terraformId")


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


def resolve(ctx, scope, ident):
    """The record a scope and an id name (override_parent_id, alias_parent_id; BUILT_IN is refused by the
    document: only the platform creates built-ins)."""
    store = ctx.rt.store
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
    data = {"id": rt.new_id(), **rt.stamp(ctx.now), "key": key, "scope": scope, "variable_type": kind,
            "mount_path": mount_path, "service_id": service.id if service else None,
            "service_name": service.data["name"] if service else None,
            "service_type": service.meta["type"] if service else None, "owned_by": owned_by,
            "enable_interpolation_in_file": interpolation}
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
    touch(rt, owner, ctx.now)
    return entry


def reference(family, target):
    data = target.data
    out = {"id": data["id"], "key": data["key"], "mount_path": data["mount_path"], "scope": data["scope"],
           "variable_type": data["variable_type"]}
    if family.secret:
        out["enable_interpolation_in_file"] = data["enable_interpolation_in_file"]
        optional(out, "description", data.get("description"))
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
    if data["variable_type"] != "OVERRIDE":          # an override keeps the key of what it overrides
        if body["key"] != data["key"] and key_taken(rt, family, owner.id, body["key"], exclude=(entry.id,)):
            raise conflict(f"{family.reference} key {body['key']!r} already exists at this scope")
        data["key"] = body["key"]
    if "description" in body:
        optional(data, "description", body["description"])
    if "enable_interpolation_in_file" in body:
        data["enable_interpolation_in_file"] = body["enable_interpolation_in_file"]
    if family.secret:
        entry.private["value"] = body["value"]
    else:
        data["value"] = body["value"]
    touch(rt, entry, ctx.now)
    touch(rt, owner, ctx.now)
    for dependent in dependents(rt, family, entry.id):
        ref_name = next(k for k in dependent.data if k.endswith(f"_{family.reference}"))
        dependent.data[ref_name] = reference(family, entry)
        if dependent.data["variable_type"] == "OVERRIDE":
            dependent.data["key"] = data["key"]
            rt.store.tables[dependent.table].reindex(dependent)
        elif not family.secret:
            dependent.data["value"] = data["value"]
    return data


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


def _derive(ctx, family, target, scope, parent, kind, key, value, where=None):
    """Create an override or alias of `target` at (scope, parent), enforcing the level and visibility rules.
    `where` names the request part that chose the place (default: the body's *_scope and *_parent_id)."""
    rt, body = ctx.rt, ctx.body
    scope_at, parent_at = (where, where) if where else (f"body.{kind.lower()}_scope", f"body.{kind.lower()}_parent_id")
    level = "BUILT_IN" if target.data["variable_type"] == "BUILT_IN" else target.meta["level"]
    if kind == "OVERRIDE" and SCOPE_RANK[scope] >= rank(target):
        raise ApiError(400, f"an override must be at a lower scope than the {family.reference} it overrides "
                       f"({target.data['key']} is {level}); {scope} is not lower (levels, highest first: "
                       "BUILT_IN > PROJECT > ENVIRONMENT > service)",
                       [(scope_at, "must be a lower scope")])
    if kind == "ALIAS" and SCOPE_RANK[scope] > rank(target):
        raise ApiError(400, f"an alias must be at the same scope as the {family.reference} it aliases or lower "
                       f"({target.data['key']} is {level}); {scope} is higher",
                       [(scope_at, "must not be a higher scope")])
    if target.parent not in {place.id for place in chain(rt, parent)}:
        raise ApiError(400, f"{scope.lower()} {parent.id} cannot see {family.reference} {target.id} "
                       f"({target.data['key']}): an {kind.lower()} must be placed where its target is visible "
                       "(the target's owner or below it)",
                       [(parent_at, "outside the variable's scope")])
    if kind == "OVERRIDE" and any(e.data["variable_type"] == "OVERRIDE"
                                  for e in rt.store.tables[family.table].named(parent.id, key)):
        raise conflict(f"{family.reference} {key} is already overridden at this place")
    if key_taken(rt, family, parent.id, key, exclude=(target.id,) if kind == "OVERRIDE" else ()):
        raise conflict(f"{family.reference} key {key!r} already exists at this scope")
    mount_path = target.data["mount_path"] if kind == "OVERRIDE" else None
    entry = make(ctx, family, parent, key, value, scope, kind, mount_path, body.get("description"),
                 body.get("enable_interpolation_in_file"), target=target)
    return entry.data


def _target(ctx, family, param):
    return ctx.rt.store.tables[family.table].get(ctx.params[param], ctx.org, family.reference)


def create_override(ctx, family):
    target = _target(ctx, family, family.item_param)
    scope = ctx.body["override_scope"]
    parent = resolve(ctx, scope, ctx.body["override_parent_id"])
    return _derive(ctx, family, target, scope, parent, "OVERRIDE", target.data["key"], ctx.body["value"])


def create_alias(ctx, family):
    target = _target(ctx, family, family.item_param)
    scope = ctx.body["alias_scope"]
    parent = resolve(ctx, scope, ctx.body["alias_parent_id"])
    value = target.private["value"] if family.secret else target.data["value"]
    return _derive(ctx, family, target, scope, parent, "ALIAS", ctx.body["key"], value)


def service_override(ctx, family, kind, param):
    service = _path_service(ctx, kind)
    target = _target(ctx, family, param)
    return _derive(ctx, family, target, service.meta["type"], service, "OVERRIDE", target.data["key"],
                   ctx.body["value"], where="path")


def service_alias(ctx, family, kind, param):
    service = _path_service(ctx, kind)
    target = _target(ctx, family, param)
    value = target.private["value"] if family.secret else target.data["value"]
    return _derive(ctx, family, target, service.meta["type"], service, "ALIAS", ctx.body["key"], value,
                   where="path")


def _path_service(ctx, kind):
    service_param = next(name for name in ("applicationId", "containerId", "jobId", "helmId", "terraformId")
                         if name in ctx.params)
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
                out[f"override{title}{word}"] = bind(service_override, family, level, param)
                out[f"alias{title}{word}"] = bind(service_alias, family, level, param)
    for family in (VARIABLES, SECRETS):
        out[f"create{family.word}Override"] = bind(create_override, family)
        out[f"create{family.word}Alias"] = bind(create_alias, family)
    return out


HANDLERS = operations()
