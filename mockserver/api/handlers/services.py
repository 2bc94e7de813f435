"""The six service kinds: create, list, read, edit, delete, and their deployment actions.

Every kind gets the same operations (core/kinds.py); what differs is how a
record is built from its create payload (`BUILDERS`) and how it deploys (world/lifecycle.py).
"""

from urllib.parse import urlsplit

from mockserver.api.handlers import variables
from mockserver.api.handlers.common import bind, merge, page, touch
from mockserver.core.clock import iso
from mockserver.core.errors import conflict, not_found
from mockserver.core.kinds import BY_PATH, SERVICE_KINDS
from mockserver.document.schemas import ICON_BASE
from mockserver.world.commits import NO_COMMITS
from mockserver.world.deployments import repository_of
from mockserver.world.store import Entry

ITEM_PARAMS = frozenset(name for kind in SERVICE_KINDS for name in kind.params)   # one of them names the record
DATABASE_PORTS = {"POSTGRESQL": 5432, "MYSQL": 3306, "MONGODB": 27017, "REDIS": 6379}
RESOURCES = {"cpu": 500, "memory": 512, "min_running_instances": 1, "max_running_instances": 1}
EDITABLE = {
    "application": ("name", "description", "git_repository", "build_mode", "dockerfile_path", "cpu", "memory",
                    "min_running_instances", "max_running_instances", "ports", "healthchecks", "auto_deploy"),
    "container": ("name", "description", "registry_id", "image_name", "tag", "cpu", "memory",
                  "min_running_instances", "max_running_instances", "ports", "arguments", "entrypoint"),
    "database": ("name", "description", "accessibility", "cpu", "memory", "storage"),
    "job": ("name", "description", "job_type", "schedule", "source", "cpu", "memory", "max_nb_restart",
            "max_duration_seconds", "auto_deploy"),
    "helm": ("name", "description", "source", "values_override", "allow_cluster_wide_resources", "timeout_sec",
             "arguments", "auto_deploy"),
    "terraform": ("name", "description", "terraform_files_source", "terraform_variables_source", "backend", "engine",
                  "provider_version", "timeout_sec", "job_resources", "use_cluster_credentials",
                  "action_extra_arguments", "auto_deploy", "git_repository", "engine_version", "tfvars_files"),
}


# git hosts the platform recognises by name (neutral words); other hosts get no provider
PROVIDER_HOSTS = (("codehost1.", "CODEHOST1"), ("codehost2.", "CODEHOST2"))


def provider_of(url):
    try:
        host = (urlsplit(url).hostname or "").lower()
    except ValueError:                             # e.g. "https://[" : not a host the platform knows
        return None
    return next((name for prefix, name in PROVIDER_HOSTS if host.startswith(prefix) or f".{prefix}" in host), None)


def _git(ctx, repository):
    """A repository as records carry it: provider inferred from the host when not sent (absent when unknown);
    deployed_commit_id appears with the first successful deploy."""
    out = {"url": repository["url"], "branch": repository.get("branch", "main"),
           "root_path": repository.get("root_path", "/")}
    provider = repository.get("provider") or provider_of(repository["url"])
    if provider:
        out["provider"] = provider
    if repository.get("deployed_commit_id"):
        out["deployed_commit_id"] = repository["deployed_commit_id"]
    return out


def _ports(ctx, ports):
    out = []
    for port in ports:
        record = {"id": port.get("id") or ctx.rt.new_id(), "name": port.get("name", f"p{port['internal_port']}"),
                  "internal_port": port["internal_port"], "protocol": port.get("protocol", "HTTP"),
                  "publicly_accessible": port.get("publicly_accessible", False)}
        if port.get("external_port") is not None:
            record["external_port"] = port["external_port"]
        out.append(record)
    return out


def _registry(ctx, registry_id):
    return ctx.rt.store.registries.get(registry_id, ctx.org)


def build_application(ctx, body, env):
    return {"git_repository": _git(ctx, body["git_repository"]), "build_mode": body.get("build_mode", "DOCKER"),
            "dockerfile_path": body.get("dockerfile_path", "Dockerfile"),
            **{k: body.get(k, v) for k, v in RESOURCES.items()}, "ports": _ports(ctx, body.get("ports", [])),
            "healthchecks": _probes(body.get("healthchecks", {})), "auto_deploy": body.get("auto_deploy", True)}


def _probes(healthchecks):
    """Only the documented fields of the probes are kept (unknown fields are ignored, not echoed)."""
    return {name: {k: v for k, v in probe.items() if k in ("path", "port")}
            for name, probe in healthchecks.items() if name in ("readiness_probe", "liveness_probe")}


def build_container(ctx, body, env):
    _registry(ctx, body["registry_id"])            # 404 when unknown; the record shows it at read time (view)
    out = {"registry_id": body["registry_id"],
           "image_name": body["image_name"], "tag": body["tag"],
           **{k: body.get(k, v) for k, v in RESOURCES.items()}, "ports": _ports(ctx, body.get("ports", [])),
           "arguments": body.get("arguments", [])}
    if body.get("entrypoint"):
        out["entrypoint"] = body["entrypoint"]
    return out


def build_database(ctx, body, env):
    return {"type": body["type"], "version": body["version"], "mode": body["mode"],
            "accessibility": body.get("accessibility", "PRIVATE"), "cpu": body.get("cpu", 250),
            "memory": body.get("memory", 256), "storage": body.get("storage", 10),
            "host": f"{body['name']}.{env.id[:8]}.internal", "port": DATABASE_PORTS[body["type"]]}


LIFECYCLE_EVENTS = ("on_start", "on_stop", "on_delete")


def _command(command):
    return {"arguments": list(command.get("arguments", [])),
            **({"entrypoint": command["entrypoint"]} if command.get("entrypoint") else {})}


def build_job(ctx, body, env):
    """A job runs an image or builds from git (`source`), on a cron schedule or on lifecycle events (`schedule`)."""
    source, schedule = body["source"], body["schedule"]     # the document allows cron or lifecycle, not both
    if "image" in source:
        _registry(ctx, source["image"]["registry_id"])
        built = {"image": {k: source["image"][k] for k in ("image_name", "tag", "registry_id")}}
    else:
        docker = source["docker"]
        built = {"docker": {"git_repository": _git(ctx, docker["git_repository"]),
                            "dockerfile_path": docker.get("dockerfile_path", "Dockerfile")}}
    if "cronjob" in schedule:
        cron = schedule["cronjob"]
        plan = {"cronjob": {"scheduled_at": cron["scheduled_at"], **_command(cron)}}
    else:
        plan = {event: _command(schedule[event]) for event in LIFECYCLE_EVENTS if event in schedule}
    return {"job_type": "CRON" if "cronjob" in plan else "LIFECYCLE", "source": built, "schedule": plan,
            "cpu": body.get("cpu", 250), "memory": body.get("memory", 256),
            "max_nb_restart": body.get("max_nb_restart", 0),
            "max_duration_seconds": body.get("max_duration_seconds", 300), "auto_deploy": body.get("auto_deploy", True)}


def build_helm(ctx, body, env):
    """A Helm service installs a chart from a git repository or a Helm repository (`source`)."""
    source = body["source"]
    if "git_repository" in source:
        built = {"git_repository": _git(ctx, source["git_repository"])}
    else:
        chart = source["helm_repository"]
        built = {"helm_repository": {"repository_id": chart.get("repository_id") or chart["repository"],
                                     "chart_name": chart["chart_name"],
                                     "chart_version": chart["chart_version"]}}
    values = body.get("values_override") or {}
    override = {name: [list(pair) for pair in values.get(name, [])] for name in ("set", "set_string", "set_json")}
    file = values.get("file") or {}
    if file.get("raw") or file.get("git"):      # the document lets a body send both: the record keeps both
        override["file"] = {}
    if file.get("raw"):
        override["file"]["raw"] = {"values": [{"name": v["name"], "content": v["content"]}
                                              for v in file["raw"]["values"]]}
    if file.get("git"):
        override["file"]["git"] = {"git_repository": _git(ctx, file["git"]["git_repository"]),
                                   "paths": list(file["git"]["paths"])}
    return {"source": built, "arguments": list(body.get("arguments", [])),
            "allow_cluster_wide_resources": body.get("allow_cluster_wide_resources", False),
            "values_override": override, "timeout_sec": body.get("timeout_sec", 600),
            "auto_deploy": body.get("auto_deploy", True)}


def build_terraform(ctx, body, env):
    """The platform's payload (terraform_files_source, terraform_variables_source, provider_version, ...);
    the earlier flat fields (git_repository, engine_version, tfvars_files) are read when the nested ones are
    absent, and records carry both, the flat ones mirroring the nested ones."""
    files = body.get("terraform_files_source") or {"git_repository": body["git_repository"]}
    repository = _git(ctx, files["git_repository"])
    variables = body.get("terraform_variables_source") or {}
    paths = list(variables.get("tf_var_file_paths", body.get("tfvars_files", [])))
    sent = body.get("provider_version") or {}
    version = {"read_from_terraform_block": sent.get("read_from_terraform_block", False)}
    if sent.get("explicit_version") or not version["read_from_terraform_block"]:
        version["explicit_version"] = sent.get("explicit_version") or body.get("engine_version") or "1.9.8"
    resources = {name: (body.get("job_resources") or {}).get(name, default)
                 for name, default in (("cpu_milli", 500), ("ram_mib", 512), ("gpu", 0), ("storage_gib", 1))}
    backend = body.get("backend") or {}
    out = {"terraform_files_source": {"git_repository": repository},
           "terraform_variables_source": {"tf_var_file_paths": paths,
                                          "tf_vars": [_tf_var(var) for var in variables.get("tf_vars", [])]},
           "backend": {"user_provided": {}} if "user_provided" in backend else {"kubernetes": {}},
           "engine": body.get("engine", "TERRAFORM"),
           "provider_version": version, "timeout_sec": body.get("timeout_sec", 1800), "job_resources": resources,
           "use_cluster_credentials": body.get("use_cluster_credentials", False),
           "auto_deploy": body.get("auto_deploy", True),
           "git_repository": repository, "engine_version": version.get("explicit_version", ""), "tfvars_files": paths}
    if body.get("action_extra_arguments"):
        out["action_extra_arguments"] = body["action_extra_arguments"]
    return out


def _secret_tf_values(body):
    """key -> value of a Terraform payload's secret variables: kept privately (records never show them), for
    the export of the state with its secrets."""
    tf_vars = (body.get("terraform_variables_source") or {}).get("tf_vars", [])
    return {var["key"]: var.get("value", "") for var in tf_vars if var.get("secret")}


def _tf_var(var):
    """A Terraform variable as records show it: a secret one without its value."""
    secret = var.get("secret", False)
    return {"key": var["key"], "secret": secret, **({} if secret else {"value": var.get("value", "")})}


BUILDERS = {"application": build_application, "container": build_container, "database": build_database,
            "job": build_job, "helm": build_helm, "terraform": build_terraform}


REGISTRY_FIELDS = ("id", "name", "kind", "url")


def view(rt, entry):
    """A service record as replies show it. A container's `registry` block is its registry as it is now, read
    by id at each reply (never a copy that a later edit of the registry would leave stale), after `registry_id`."""
    data = entry.data
    if entry.meta["kind"] != "container":
        return data
    registry = rt.store.registries.find(data["registry_id"], entry.org)
    block = {k: registry.data[k] for k in REGISTRY_FIELDS} if registry is not None else data.get("registry")
    out = {}
    for name, value in data.items():
        if name == "registry":                     # a copy kept by an older state file: the live one wins
            continue
        out[name] = value
        if name == "registry_id" and block is not None:
            out["registry"] = block
    return out


# ---------------------------------------------------------------- lookups
def service(ctx, kind, ident=None):
    if ident is None:
        ident = next(value for name, value in ctx.params.items() if name in ITEM_PARAMS)
    entry = ctx.rt.store.services.find(ident, ctx.org)
    if entry is None or entry.meta["kind"] != kind:
        raise not_found(kind, ident)
    return entry


def commits_of(rt, entry):
    """The last 100 commits of a service's repository (newest first), with ISO dates: a sequence that makes
    a commit when it is read (world/commits.py), empty for a service without a repository."""
    repository = repository_of(entry.data)
    if not repository:
        return NO_COMMITS
    return rt.fake.commits(repository["url"], repository["branch"], 100, entry.meta["created"])


# ---------------------------------------------------------------- generic handlers
def create(ctx, kind):
    rt, body = ctx.rt, ctx.body
    env = rt.store.environments.get(ctx.params["env_id"], ctx.org)
    if rt.store.services.name_taken(env.id, body["name"]):
        raise conflict(f"a service named {body['name']!r} already exists in environment {env.id}")
    ident = rt.new_id()
    data = {"id": ident, **rt.stamp(ctx.now), "environment": {"id": env.id}, "name": body["name"],
            **({"description": body["description"]} if body.get("description") is not None else {}),
            "service_type": BY_PATH[kind].type, "icon_uri": f"{ICON_BASE}/{kind}.svg", **BUILDERS[kind](ctx, body, env)}
    secrets = _secret_tf_values(body) if kind == "terraform" else None
    entry = Entry(data, ctx.org, env.id, private={"tf_vars": secrets} if secrets else None,
                  meta={"kind": kind, "type": BY_PATH[kind].type, "created": ctx.now})
    rt.store.services.add(entry)
    rt.bump(entry)
    _count_registry(ctx, data, +1)
    variables.add_built_ins(ctx, entry, env)
    return view(rt, entry)


def list_services(ctx, kind):
    env = ctx.rt.store.environments.get(ctx.params["env_id"], ctx.org)
    return page(ctx, ctx.rt.store.services.view(env.id, kind), lambda entry: view(ctx.rt, entry))


def get(ctx, kind):
    return view(ctx.rt, service(ctx, kind))


def edit(ctx, kind):
    rt, body = ctx.rt, ctx.body
    entry = service(ctx, kind)
    if "name" in body and rt.store.services.name_taken(entry.parent, body["name"], exclude=entry.id):
        raise conflict(f"a service named {body['name']!r} already exists in this environment")
    rebuilt = BUILDERS[kind](ctx, {**_request_view(entry.data, body), **body},
                             rt.store.environments.find(entry.parent))
    _count_registry(ctx, entry.data, -1)
    merge(entry.data, body, ("name", "description"))
    for name in EDITABLE[kind]:
        if name in body and name in rebuilt:
            entry.data[name] = rebuilt[name]
    if kind == "terraform":                        # the flat fields mirror the nested ones: all follow
        entry.data.update(rebuilt)
        if "terraform_variables_source" in body:
            entry.private = {**(entry.private or {}), "tf_vars": _secret_tf_values(body)}
    _count_registry(ctx, entry.data, +1)
    touch(rt, entry, ctx.now)
    return view(rt, entry)


def _request_view(data, body):
    """A record seen as the create payload that would produce it (for rebuilding on edit); the deployed
    commit is kept by `_git`. A Terraform edit sent with the earlier flat fields rebuilds from those."""
    out = dict(data)
    for flat, nested in (("git_repository", "terraform_files_source"), ("engine_version", "provider_version")):
        if nested in out and flat in body and nested not in body:
            out.pop(nested)
    if "tfvars_files" in body and "terraform_variables_source" not in body and "terraform_variables_source" in out:
        out["terraform_variables_source"] = {**out["terraform_variables_source"],
                                             "tf_var_file_paths": body["tfvars_files"]}
    return out


def delete(ctx, kind):
    rt = ctx.rt
    entry = service(ctx, kind)
    rt.lifecycle.cancel(entry.parent, ctx.now, target=entry.id)
    rt.deployments.start(ctx, entry, "DELETE")
    rt.pump()
    _count_registry(ctx, entry.data, -1)
    variables.remove_built_ins(ctx, entry)
    rt.store.delete("services", entry.id)


def _count_registry(ctx, data, step):
    registry_id = data.get("registry_id") or ((data.get("source") or {}).get("image") or {}).get("registry_id")
    registry = ctx.rt.store.registries.find(registry_id, ctx.org) if registry_id else None
    if registry is not None:
        registry.data["associated_services_count"] = max(0, registry.data["associated_services_count"] + step)


def status(ctx, kind):
    entry = service(ctx, kind)
    out = ctx.rt.deployments.read_status(entry, ctx.now)
    request = ctx.rt.lifecycle.latest(entry.id)
    if request is not None and request.outcome is None:    # under way: the reply moves with the clock
        ctx.cacheable = False
    return out


def history(ctx, kind):
    deployments = ctx.rt.deployments
    return page(ctx, deployments.history(service(ctx, kind)),
                lambda request: deployments.history_item(request, ctx.now))


def action(verb):
    def handler(ctx, kind):
        rt = ctx.rt
        entry = service(ctx, kind)
        if verb == "redeploy" and entry.meta.get("deployed_rev") is None:
            raise conflict(f"{kind} {entry.id} was never deployed: deploy it before a redeploy")
        commit = None
        if verb in ("deploy", "redeploy") and repository_of(entry.data):
            commit = _commit(ctx, entry, verb)
        request = rt.deployments.start(ctx, entry, "DEPLOY" if verb == "redeploy" else verb.upper(), commit)
        return rt.deployments.accepted(request, entry, ctx.now)
    return handler


def _commit(ctx, entry, verb):
    """The commit a deploy pins: the one named (by its id or a prefix of it), else the newest; a redeploy pins
    the deployed one again. Only that commit is made; an id none of the last 100 has is pinned as it is."""
    commits = commits_of(ctx.rt, entry)
    if verb == "redeploy":
        wanted = repository_of(entry.data).get("deployed_commit_id")
    else:
        wanted = ctx.body.get("git_commit_id")
    if wanted is None:
        return commits[0]
    found = commits.position(wanted, prefix=True)
    if found is not None:
        return commits[found]
    return {"created_at": iso(ctx.now), "git_commit_id": wanted, "tag": "", "message": "",
            "author_name": "", "author_avatar_url": "", "commit_page_url": ""}


def operations():
    out = {}
    for kind, title in ((row.path, row.title) for row in SERVICE_KINDS):
        for name, fn in (("create", create), ("list", list_services), ("get", get), ("edit", edit),
                         ("delete", delete)):
            op = f"list{title}s" if name == "list" else f"{name}{title}"
            out[op] = bind(fn, kind)
        out[f"get{title}Status"] = bind(status, kind)
        out[f"list{title}DeploymentHistory"] = bind(history, kind)
        for verb in ("deploy", "redeploy", "stop", "restart"):
            out[f"{verb}{title}"] = bind(action(verb), kind)
    return out


HANDLERS = operations()
