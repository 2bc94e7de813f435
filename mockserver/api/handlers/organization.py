"""Organization, projects, environments and deployment rules."""

from mockserver.api.handlers.common import check_org, merge, page, touch
from mockserver.core.errors import ApiError, conflict, not_found
from mockserver.world.store import Entry

DEFAULT_RULE = {"auto_stop": False, "auto_deploy": True, "timezone": "UTC", "start_time": "08:00",
                "stop_time": "20:00",
                "weekdays": ["MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY", "SATURDAY", "SUNDAY"]}


def get_organization(ctx):
    """The caller's organization, and in `results` the organizations its token sees (the platform's list)."""
    data = ctx.rt.store.organizations.get(ctx.org, ctx.org).data
    return {**data, "results": [data]}


def get_organization_by_id(ctx):
    check_org(ctx, ctx.params["organizationId"])
    return ctx.rt.store.organizations.get(ctx.org, ctx.org).data


# ---------------------------------------------------------------- projects
def project_view(rt, entry):
    """A project record with the counts the platform computes on read."""
    environments = rt.store.environments.children.get(entry.id)
    if not environments:
        return {**entry.data, **NO_COUNTS}
    children = rt.store.services.children
    return {**entry.data, "associated_environments_count": len(environments),
            "associated_services_count": sum([len(children.get(env_id, ())) for env_id in environments])}


NO_COUNTS = {"associated_environments_count": 0, "associated_services_count": 0}   # a project without environments


def list_projects(ctx):
    check_org(ctx, ctx.params["org_id"])
    rt, projects = ctx.rt, ctx.rt.store.projects.view(ctx.org)
    if "page" in ctx.query or "page_size" in ctx.query:
        return page(ctx, projects, lambda entry: project_view(rt, entry))
    environments = rt.store.environments.children    # the whole list, one comprehension: no call per project
    return {"results": [{**entry.data, **NO_COUNTS} if entry.id not in environments else project_view(rt, entry)
                        for entry in projects]}


def create_project(ctx):
    rt, body = ctx.rt, ctx.body
    check_org(ctx, ctx.params["org_id"])
    if rt.store.projects.name_taken(ctx.org, body["name"]):
        raise conflict(f"a project named {body['name']!r} already exists in this organization")
    data = {"id": rt.new_id(), **rt.stamp(ctx.now), "name": body["name"], "organization": {"id": ctx.org}}
    if body.get("description") is not None:
        data["description"] = body["description"]
    entry = rt.store.projects.add(Entry(data, ctx.org, ctx.org))
    rt.bump(entry)
    return project_view(rt, entry)


def get_project(ctx):
    return project_view(ctx.rt, ctx.rt.store.projects.get(ctx.params["projectId"], ctx.org))


def edit_project(ctx):
    rt, body = ctx.rt, ctx.body
    entry = rt.store.projects.get(ctx.params["projectId"], ctx.org)
    if rt.store.projects.name_taken(ctx.org, body["name"], exclude=entry.id):
        raise conflict(f"a project named {body['name']!r} already exists in this organization")
    merge(entry.data, body, ("name", "description"))
    touch(rt, entry, ctx.now)
    return project_view(rt, entry)


def delete_project(ctx):
    rt = ctx.rt
    entry = rt.store.projects.get(ctx.params["projectId"], ctx.org)
    for env in rt.store.environments.under(entry.id):
        _drop_environment(ctx, env)
    rt.store.delete("projects", entry.id)


# ---------------------------------------------------------------- environments
def list_environments(ctx):
    project = ctx.rt.store.projects.get(ctx.params["project_id"], ctx.org)
    return page(ctx, ctx.rt.store.environments.view(project.id))


def create_environment(ctx):
    rt, body = ctx.rt, ctx.body
    project = rt.store.projects.get(ctx.params["project_id"], ctx.org)
    cluster = _cluster(ctx, body)
    name = body["name"]
    if rt.store.environments.name_taken(project.id, name):
        raise conflict(f"an environment named {name!r} already exists in project {project.id} "
                       "(names are case-insensitive)")
    data = {
        "id": rt.new_id(), **rt.stamp(ctx.now), "name": name, "organization": {"id": ctx.org},
        "project": {"id": project.id},
        "cloud_provider": {"provider": cluster.data["cloud_provider"], "cluster": cluster.data["name"]},
        "mode": body.get("mode", "DEVELOPMENT"), "cluster_id": cluster.id, "cluster_name": cluster.data["name"],
        "last_updated_by": rt.user_id(ctx.token.name if ctx.token else "fixtures"),
    }
    entry = rt.store.environments.add(Entry(data, ctx.org, project.id))
    rt.bump(entry)
    rule = {"id": rt.new_id(), **rt.stamp(ctx.now), "environment": {"id": entry.id}, **DEFAULT_RULE}
    rule["weekdays"] = list(rule["weekdays"])
    rt.store.deployment_rules.add(Entry(rule, ctx.org, entry.id))
    return data


def _cluster(ctx, body):
    store = ctx.rt.store
    wanted = [body[key] for key in ("cluster_id", "cluster") if key in body]
    for ident in wanted:
        store.clusters.get(ident, ctx.org)
    if len(set(wanted)) > 1:
        raise ApiError(400, "cluster and cluster_id name different clusters; send one of them",
                       [("body.cluster", "differs from body.cluster_id")])
    if wanted:
        return store.clusters.get(wanted[0], ctx.org)
    clusters = store.clusters.under(ctx.org)
    default = next((c for c in clusters if c.data.get("is_default")), clusters[0] if clusters else None)
    if default is None:
        raise not_found("cluster", "(default)")
    return default


def get_environment(ctx):
    return ctx.rt.store.environments.get(ctx.params["environmentId"], ctx.org).data


def edit_environment(ctx):
    rt, body = ctx.rt, ctx.body
    entry = rt.store.environments.get(ctx.params["environmentId"], ctx.org)
    if "name" in body and rt.store.environments.name_taken(entry.parent, body["name"], exclude=entry.id):
        raise conflict(f"an environment named {body['name']!r} already exists in this project")
    merge(entry.data, body, ("name", "mode"))
    entry.data["last_updated_by"] = rt.user_id(ctx.token.name)
    touch(rt, entry, ctx.now)
    return entry.data


def delete_environment(ctx):
    entry = ctx.rt.store.environments.get(ctx.params["environmentId"], ctx.org)
    _drop_environment(ctx, entry)


def _drop_environment(ctx, env):
    rt = ctx.rt
    rt.lifecycle.cancel(env.id, ctx.now)
    for service in rt.store.services.under(env.id):
        rt.lifecycle.forget(service.id)
    rt.store.delete("environments", env.id)


# ---------------------------------------------------------------- deployment rules
def _rule(ctx):
    env = ctx.rt.store.environments.get(ctx.params["environmentId"], ctx.org)
    return ctx.rt.store.deployment_rules.under(env.id)[0]


def get_deployment_rule(ctx):
    return _rule(ctx).data


def edit_deployment_rule(ctx):
    entry = _rule(ctx)
    merge(entry.data, ctx.body, ("auto_stop", "auto_deploy", "timezone", "start_time", "stop_time", "weekdays"))
    touch(ctx.rt, entry, ctx.now)
    return entry.data


HANDLERS = {
    "getOrganization": get_organization, "getOrganizationById": get_organization_by_id,
    "listProjects": list_projects, "createProject": create_project, "getProject": get_project,
    "editProject": edit_project, "deleteProject": delete_project,
    "listEnvironments": list_environments, "createEnvironment": create_environment,
    "getEnvironment": get_environment, "editEnvironment": edit_environment,
    "deleteEnvironment": delete_environment,
    "getDeploymentRule": get_deployment_rule, "editDeploymentRule": edit_deployment_rule,
}
