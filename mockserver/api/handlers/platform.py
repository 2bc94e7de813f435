"""Organization-level resources: clusters (status, lock, upgrade), container registries,
labels groups, cloud credentials, webhooks, and Terraform variables file discovery."""

from mockserver.api.handlers.common import check_org, merge, optional, page, touch
from mockserver.core.clock import iso
from mockserver.core.errors import ApiError, conflict
from mockserver.document.ids import FIXED_REGISTRY_URLS
from mockserver.document.schemas import REGISTRY_CONFIG_OUT, REGISTRY_SECRET_CONFIG
from mockserver.world.deployments import cluster_lock, next_version
from mockserver.world.store import Entry
from mockserver.world.webhooks import target_problem

RETURNED_CONFIG = tuple(REGISTRY_CONFIG_OUT["properties"])


# ---------------------------------------------------------------- clusters
def list_clusters(ctx):
    check_org(ctx, ctx.params["organizationId"])
    return page(ctx, ctx.rt.store.clusters.view(ctx.org), lambda entry: _current(ctx, entry))


def _cluster(ctx):
    return ctx.rt.store.clusters.get(ctx.params["clusterId"], ctx.org)


def _current(ctx, entry):
    """The cluster record with the status its upgrades give it now."""
    entry.data["status"] = ctx.rt.deployments.cluster_status(entry, ctx.now)["status"]
    return entry.data


def get_cluster(ctx):
    return _current(ctx, _cluster(ctx))


def cluster_status(ctx):
    return ctx.rt.deployments.read_cluster_status(_cluster(ctx), ctx.now)


def lock_cluster(ctx):
    rt, body = ctx.rt, ctx.body
    entry = _cluster(ctx)
    ttl = body.get("ttl_in_days")
    ttl = None if ttl is None else int(ttl)          # a number of whole days: 5.0 is 5
    public = {"reason": body["reason"]}
    optional(public, "ttl_in_days", ttl)
    owner = rt.fake.person_of(ctx.token.name if ctx.token else "fixtures")
    public.update(cluster_id=entry.id, locked_at=iso(ctx.now), owner_name=owner)
    entry.meta["lock"] = {"public": public, "expires": ctx.now + ttl * 86400 if ttl else None}
    return public


def unlock_cluster(ctx):
    entry = _cluster(ctx)
    if cluster_lock(entry, ctx.now) is None:
        raise ApiError(404, f"cluster {entry.id} is not locked")
    entry.meta["lock"] = None


def upgrade_cluster(ctx):
    rt = ctx.rt
    entry = _cluster(ctx)
    lock = cluster_lock(entry, ctx.now)
    if lock is not None:
        raise conflict(f"cluster {entry.id} is locked ({lock['reason']}); unlock it first")
    if rt.lifecycle.busy(entry.id, ctx.now):
        raise conflict(f"cluster {entry.id} is already being upgraded")
    if next_version(entry.data["version"]) is None:
        raise conflict(f"cluster {entry.id} already runs the latest Kubernetes version {entry.data['version']}")
    rt.deployments.start_cluster_upgrade(ctx, entry)
    return rt.deployments.cluster_status(entry, ctx.now)


# ---------------------------------------------------------------- container registries
def _registry_record(ctx, body, data):
    kind = body["kind"]
    url = body.get("url") or FIXED_REGISTRY_URLS.get(kind)
    config = body.get("config") or {}
    data.update(name=body["name"], kind=kind, url=url,
                config={k: v for k, v in config.items() if k in RETURNED_CONFIG})
    optional(data, "description", body.get("description"))
    return {k: v for k, v in config.items() if k in REGISTRY_SECRET_CONFIG}


def create_registry(ctx):
    rt, body = ctx.rt, ctx.body
    check_org(ctx, ctx.params["organizationId"])
    if rt.store.registries.name_taken(ctx.org, body["name"]):
        raise conflict(f"a container registry named {body['name']!r} already exists")
    data = {"id": rt.new_id(), **rt.stamp(ctx.now), "associated_services_count": 0}
    secrets = _registry_record(ctx, body, data)
    rt.store.registries.add(Entry(data, ctx.org, ctx.org, private=secrets))
    return data


def refuse_unsupported_kind(body):
    """CLOUDD_CR is refused with its own message before schema validation names the enum."""
    if isinstance(body, dict) and body.get("kind") == "CLOUDD_CR":
        raise ApiError(400, "body.kind: CLOUDD_CR is no longer supported", [("body.kind", "no longer supported")])


def list_registries(ctx):
    check_org(ctx, ctx.params["organizationId"])
    return page(ctx, ctx.rt.store.registries.view(ctx.org))


def _registry(ctx):
    check_org(ctx, ctx.params["organizationId"])
    return ctx.rt.store.registries.get(ctx.params["containerRegistryId"], ctx.org)


def get_registry(ctx):
    return _registry(ctx).data


def edit_registry(ctx):
    rt, body = ctx.rt, ctx.body
    entry = _registry(ctx)
    if rt.store.registries.name_taken(ctx.org, body["name"], exclude=entry.id):
        raise conflict(f"a container registry named {body['name']!r} already exists")
    entry.private = _registry_record(ctx, body, entry.data)
    touch(rt, entry, ctx.now)
    return entry.data


def delete_registry(ctx):
    entry = _registry(ctx)
    if entry.data["associated_services_count"]:
        raise conflict(f"container registry {entry.id} is used by {entry.data['associated_services_count']} "
                       "service(s)")
    ctx.rt.store.delete("registries", entry.id)


def list_tfvars(ctx):
    check_org(ctx, ctx.params["organizationId"])
    repository = ctx.body["git_repository"]
    root = repository.get("root_path", "/").strip("/")
    files = ctx.rt.fake.tfvars(f"{repository['url']}#{repository.get('branch', 'main')}")
    for item in files:
        item["source"] = f"{root}/{item['source']}" if root else item["source"]
    return {"results": files}


# ---------------------------------------------------------------- simple organization records
def simple(table, param, noun, build, unique="name", org_param="organizationId"):
    """create/list/get/edit/delete for a record that lives directly under the organization."""

    def create(ctx):
        rt = ctx.rt
        check_org(ctx, ctx.params[org_param])
        if unique and rt.store.tables[table].name_taken(ctx.org, ctx.body[unique]):
            raise conflict(f"a {noun} named {ctx.body[unique]!r} already exists")
        data, private = build(ctx, {"id": rt.new_id(), **rt.stamp(ctx.now)}, None)
        rt.store.tables[table].add(Entry(data, ctx.org, ctx.org, private=private))
        return data

    def listing(ctx):
        check_org(ctx, ctx.params[org_param])
        return page(ctx, ctx.rt.store.tables[table].view(ctx.org))

    def one(ctx):
        check_org(ctx, ctx.params[org_param])
        return ctx.rt.store.tables[table].get(ctx.params[param], ctx.org)

    def edit(ctx):
        entry = one(ctx)
        if unique and unique in ctx.body and ctx.rt.store.tables[table].name_taken(
                ctx.org, ctx.body[unique], exclude=entry.id):
            raise conflict(f"a {noun} named {ctx.body[unique]!r} already exists")
        entry.data, entry.private = build(ctx, entry.data, entry.private)
        touch(ctx.rt, entry, ctx.now)
        return entry.data

    def delete(ctx):
        ctx.rt.store.delete(table, one(ctx).id)

    return create, listing, lambda ctx: one(ctx).data, edit, delete


def build_labels(ctx, data, private):
    body = ctx.body
    data.update(name=body["name"], associated_items_count=data.get("associated_items_count", 0),
                labels=[{"key": label["key"], "value": label["value"],
                         "propagate_to_cloud_provider": label.get("propagate_to_cloud_provider", False)}
                        for label in body["labels"]])
    return data, private


def build_credentials(ctx, data, private):
    """Create sets the key pair; an edit changes only `name` and `role_arn` (the spec's editable fields): other
    fields sent are ignored, as read-only fields are. What was never given is left out, not null."""
    body = ctx.body
    editing = private is not None
    merge(data, body, ("name", "role_arn") if editing else ("name", "access_key_id", "role_arn"))
    data["object_type"] = "AWS"
    private = dict(private or {})
    if not editing and "secret_access_key" in body:
        private["secret_access_key"] = body["secret_access_key"]
    return data, private


def refuse_bad_target(body, allow_link_local=True):
    """A target_url the platform would not take is a 400 naming it, before schema validation says it less clearly
    (link-local and metadata addresses are the handler's to refuse: whether they are allowed is an option)."""
    if isinstance(body, dict) and isinstance(body.get("target_url"), str):
        problem = target_problem(body["target_url"], allow_link_local)
        if problem is not None:
            raise ApiError(400, f"body.target_url: {problem}", [("body.target_url", problem)])


def build_webhook(ctx, data, private):
    body = ctx.body
    refuse_bad_target(body, ctx.rt.settings.webhook_allow_link_local)
    data.update(organization={"id": ctx.org}, target_url=body["target_url"], events=list(body["events"]),
                enabled=body.get("enabled", True), kind="STANDARD")
    optional(data, "description", body.get("description"))
    private = dict(private or {})
    if "target_secret" in body:
        private["target_secret"] = body["target_secret"]
    data["target_secret_set"] = bool(private.get("target_secret"))
    return data, private


LABELS = simple("labels_groups", "labelsGroupId", "labels group", build_labels)
CREDENTIALS = simple("credentials", "credentialsId", "credentials", build_credentials)
WEBHOOKS = simple("webhooks", "webhookId", "webhook", build_webhook, unique=None, org_param="org_id")



def delete_webhook(ctx):
    """The webhook deleted, and its deliveries still to be attempted ended (world/webhooks.py, `cancel`)."""
    WEBHOOKS[4](ctx)
    ctx.rt.webhooks.cancel(ctx.params["webhookId"])


# checks that run on the raw body before schema validation, for clearer messages
PRECHECKS = {"createContainerRegistry": refuse_unsupported_kind, "editContainerRegistry": refuse_unsupported_kind,
             "createWebhook": refuse_bad_target, "editWebhook": refuse_bad_target}

HANDLERS = {
    "listClusters": list_clusters, "getCluster": get_cluster, "getClusterStatus": cluster_status,
    "lockCluster": lock_cluster, "unlockCluster": unlock_cluster, "upgradeCluster": upgrade_cluster,
    "createContainerRegistry": create_registry, "listContainerRegistries": list_registries,
    "getContainerRegistry": get_registry, "editContainerRegistry": edit_registry,
    "deleteContainerRegistry": delete_registry, "listTfVarsFilesFromGitRepo": list_tfvars,
}
for title, table in (("LabelsGroup", LABELS), ("AwsCredentials", CREDENTIALS), ("Webhook", WEBHOOKS)):
    plural = {"LabelsGroup": "LabelsGroups", "AwsCredentials": "AwsCredentials", "Webhook": "Webhooks"}[title]
    for name, fn in zip((f"create{title}", f"list{plural}", f"get{title}", f"edit{title}", f"delete{title}"), table):
        HANDLERS[name] = fn
HANDLERS["deleteWebhook"] = delete_webhook
