"""Create the fixtures' records through the handlers, as API calls would: a world as the fixtures
describe it (`fresh_world`)."""

from mockserver.api.handlers import HANDLERS
from mockserver.api.handlers.common import optional
from mockserver.api.handlers.history import add_backups
from mockserver.api.handlers.services import commits_of
from mockserver.api.handlers.variables import SECRETS, VARIABLES, visible
from mockserver.core.errors import ApiError
from mockserver.core.kinds import SERVICE_KINDS, WITH_VARIABLES
from mockserver.core.settings import parse_rate
from mockserver.document.operations import SPEC_PARAM_NAMES
from mockserver.world.auth import Token
from mockserver.world.deployments import repository_of
from mockserver.world.fixtures import NESTED, timestamp
from mockserver.world.runtime import Context, Runtime
from mockserver.world.store import Entry

SERVICES = {kind.plural: kind.title for kind in SERVICE_KINDS}
# the path parameter of the operations that create a variable or a secret at each level
LEVEL_PARAMS = {"Project": "projectId", "Environment": "environmentId",
                **{kind.title: SPEC_PARAM_NAMES.get((kind.path, "environmentVariable"), kind.param)
                   for kind in WITH_VARIABLES}}
LEVEL_SCOPES = {"Project": "PROJECT", "Environment": "ENVIRONMENT"}     # a service's scope is its type
ORG_RECORDS = (("container_registries", "createContainerRegistry"), ("credentials", "createAwsCredentials"),
               ("labels_groups", "createLabelsGroup"))


class Loader:
    def __init__(self, rt):
        self.rt = rt
        self.started = rt.clock.now()
        self.now = self.started - 7 * 86400     # fixtures were created a week before start-up
        self.deployed = []
        self.derived = []                       # overrides and aliases, created after everything else

    def call(self, org, operation, params, body):
        ident = body.get("id")
        clean = {k: v for k, v in body.items() if k not in NESTED}
        if ident:
            self.rt.fake.pin(ident)
        token = Token(name="fixtures", value="", organization=org, scopes=["Admin"])
        return HANDLERS[operation](Context(self.rt, org=org, token=token, params=params, body=clean, now=self.now))

    def load(self, organizations):
        self.rt.reserved_ids = frozenset(_ids(organizations))
        try:
            self._load(organizations)
        finally:
            self.rt.reserved_ids = frozenset()

    def _load(self, organizations):
        rt = self.rt
        for org in organizations:
            oid = org["id"]
            data = {"id": oid, **rt.stamp(self.now), "name": org["name"], "plan": org.get("plan", "FREE"),
                    "owner": rt.user_id(f"owner of {org['name']}")}
            if org.get("description") is not None:
                data["description"] = org["description"]
            rt.store.organizations.add(Entry(data, oid, None))
            rt.default_org = rt.default_org or oid
            for cluster in org.get("clusters", []):
                data = {"id": cluster.get("id") or rt.new_id(), **rt.stamp(self.now), "name": cluster["name"],
                        "region": cluster.get("region", "eu-west-3"),
                        "cloud_provider": cluster.get("cloud_provider", "CLOUDA"), "kubernetes": "MANAGED",
                        "version": str(cluster.get("version", "1.31")), "is_default": cluster.get("is_default", False),
                        "production": cluster.get("production", False), "status": cluster.get("status", "DEPLOYED")}
                optional(data, "description", cluster.get("description"))
                rt.store.clusters.add(Entry(data, oid, oid))
                if cluster.get("lock"):                 # a cluster locked from the start (no ttl: until unlocked)
                    self.call(oid, "lockCluster", {"clusterId": data["id"]}, cluster["lock"])
            for key, operation in ORG_RECORDS:
                for item in org.get(key, []):
                    self.call(oid, operation, {"organizationId": oid}, item)
            for project in org.get("projects", []):
                self.project(oid, project)
        self.finish_derived()
        self.finish_deployments()
        for org in organizations:                # after the deployments: their past events are not delivered
            for item in org.get("webhooks", []):
                self.call(org["id"], "createWebhook", {"org_id": org["id"]}, item)

    def project(self, org, project):
        data = self.call(org, "createProject", {"org_id": org}, project)
        self.variables(org, "Project", data["id"], project)
        for env in project.get("environments", []):
            env_data = self.call(org, "createEnvironment", {"project_id": data["id"]}, env)
            self.variables(org, "Environment", env_data["id"], env)
            if "deployment_rule" in env:
                self.call(org, "editDeploymentRule", {"environmentId": env_data["id"]}, env["deployment_rule"])
            for key, title in SERVICES.items():
                for service in env.get(key, []):
                    self.service(org, title, env_data["id"], service)

    def service(self, org, title, env_id, service):
        data = self.call(org, f"create{title}", {"env_id": env_id}, service)
        entry = self.rt.store.services.find(data["id"])
        if title != "Database":
            self.variables(org, title, data["id"], service)
        for domain in service.get("custom_domains", []):
            self.call(org, "createHelmCustomDomain", {"helmId": data["id"]}, domain)
        if service.get("backups"):
            add_backups(self.rt, entry, int(service["backups"]), self.started)
        if service.get("deployed"):
            self.deployed.append(entry)

    def variables(self, org, level, owner_id, owner):
        for key, word in (("variables", "Variable"), ("secrets", "Secret")):
            for item in owner.get(key, []):
                if "override_of" in item or "alias_of" in item:
                    self.derived.append((org, key, word, LEVEL_SCOPES.get(level, level.upper()), owner_id, item))
                else:
                    self.call(org, f"create{level}{word}", {LEVEL_PARAMS[level]: owner_id}, item)

    def finish_derived(self):
        """Overrides and aliases, once everything they may point to exists (built-ins included)."""
        for org, table, word, scope, owner_id, item in self.derived:
            kind = "override" if "override_of" in item else "alias"
            target = self.target(table, org, owner_id, item[f"{kind}_of"])
            if kind == "override":
                body = {"value": item["value"], "override_scope": scope, "override_parent_id": owner_id}
            else:
                body = {"key": item["key"], "alias_scope": scope, "alias_parent_id": owner_id}
            body.update({k: item[k] for k in ("id", "description", "enable_interpolation_in_file") if k in item})
            self.call(org, f"create{word}{kind.title()}", {f"{word.lower()}Id": target}, body)

    def target(self, table, org, owner_id, reference):
        """`override_of` / `alias_of`: a record's id, or the key of a built-in the owner sees."""
        rows = self.rt.store.tables[table]
        if rows.find(reference, org) is not None:
            return reference
        owner = self.rt.store.services.find(owner_id) or self.rt.store.environments.find(owner_id) or \
            self.rt.store.projects.find(owner_id)
        family = VARIABLES if table == "variables" else SECRETS
        for entry in visible(self.rt, family, owner):
            if entry.data["key"] == reference and entry.data["variable_type"] == "BUILT_IN":
                return entry.id
        raise ApiError(400, f"{table} of {owner_id}: nothing to point to: {reference!r} is neither the id of a "
                            f"record nor the key of a built-in {family.reference}")

    def finish_deployments(self):
        """Services marked `deployed` start DEPLOYED: their first deploy ran an hour before start-up."""
        rt = self.rt
        earlier = self.started - 3600
        for entry in self.deployed:
            ctx = Context(rt, org=entry.org, now=earlier,
                          token=Token(name="fixtures", value="", organization=entry.org, scopes=["Admin"]))
            commit = commits_of(rt, entry)[0] if repository_of(entry.data) else None
            rt.deployments.start(ctx, entry, "DEPLOY", commit)
        rt.lifecycle.pump(self.started)


def _ids(value):
    """Every `id` the fixtures give a record, at any depth."""
    if isinstance(value, dict):
        if isinstance(value.get("id"), str):
            yield value["id"]
        for item in value.values():
            yield from _ids(item)
    elif isinstance(value, list):
        for item in value:
            yield from _ids(item)


def fresh_world(settings, clock, fixtures, scenarios=None, budget=None):
    """A new world holding what the fixtures (read by fixtures.read_fixtures) describe."""
    rt = Runtime(settings, clock, scenarios, budget)
    load(rt, fixtures)
    return rt


def load(rt, data):
    """The fixtures' rate limit, organizations with everything in them, and tokens, into a world."""
    if rt.settings.rate_limit is None and "rate_limit" in data:
        rt.limiter.limit, rt.limiter.window = data["rate_limit"]
    Loader(rt).load(data["organizations"])
    for item in data["tokens"]:
        rt.add_token(Token(name=item["name"], value=item["value"], organization=item["organization"],
                           scopes=list(item["scopes"]),
                           expires_at=timestamp(item["expires_at"]) if "expires_at" in item else None,
                           rate_limit=parse_rate(item["rate_limit"]) if "rate_limit" in item else None))
