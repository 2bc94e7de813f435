"""Fixtures from recorded replies: what the platform's replies showed, as a fixtures document.

`Harvest.take(operation, params, status, reply)` keeps the records a 2xx reply shows (the latest
version of each, by id), forgets those a DELETE removed, and notes the services a status read showed
DEPLOYED or whose record shows a deployed commit. `Harvest.document(spec)` puts them into a fresh world
the way fixtures load (through the handlers, parents before children, overrides and aliases last),
then writes that world with world/export.py: the fixture format, the fields each record's create request
declares, loading back with `mockserver serve --fixtures DIR` and passing `mockserver check`. A record the
mock's rules refuse is left out and named in the document's head, with the reason.

What is kept: organizations, clusters, projects, environments, the six service kinds, variables and
secrets at every level (own records, overrides and aliases; never built-ins), container registries,
labels groups and webhooks. Secret values never: secrets, registry keys and passwords and webhook
secrets are `<fill in: ...>` placeholders. Webhooks are kept disabled, so that the mock never sends
its events to the platform's receivers. The world gets the mock's four tokens (admin, reader,
writer, deployer) on the first organization, never the token the recording used.

Nothing is made up silently (`Unsent`): a field a record's fixtures would hold that the platform did not
send (a cluster's region, a default the mock fills in) is left out where the fixtures do without it, and
kept where they need it (a name); either way a comment above the record says so.
"""

import re

import yaml

from mockserver.api.replay import LEVEL_PARAMS, Loader, fresh_world
from mockserver.calls.journal import SECRET_FIELDS
from mockserver.core.clock import Clock
from mockserver.core.errors import ApiError
from mockserver.core.kinds import SERVICE_KINDS
from mockserver.core.settings import Settings
from mockserver.world.export import HEADER, export_fixtures, project

SERVICE_SCHEMAS = {kind.title: kind.plural for kind in SERVICE_KINDS}
KINDS = {"Organization": "organizations", "CurrentOrganization": "organizations", "Cluster": "clusters",
         "Project": "projects", "Environment": "environments", "Variable": "variables", "Secret": "secrets",
         "ContainerRegistry": "registries", "LabelsGroup": "labels_groups", "Webhook": "webhooks",
         **dict.fromkeys(SERVICE_SCHEMAS, "services")}
OWNER_PARAMS = {"projectId": "project", "environmentId": "environment", "app_id": "service",
                "applicationId": "service", "containerId": "service", "jobId": "service", "helmId": "service",
                "terraformId": "service"}
ORG_PARAMS = ("organizationId", "org_id")
TOKENS = (("admin", "mock-admin-token", "Admin"), ("reader", "mock-read-token", "Read"),
          ("writer", "mock-write-token", "Write"), ("deployer", "mock-deploy-token", "Deploy"))
CLOUD_PROVIDERS = ("CLOUDA", "CLOUDB", "CLOUDC", "ON_PREMISE")
CLUSTER_FIELDS = ("name", "description", "region", "version", "is_default", "production")
SECRET_CONFIG = {"CLOUDA_CR": ("secret_access_key",), "CLOUDB_CR": ("cloudb_secret_key",),
                 "CLOUDC_ARTIFACT_REGISTRY": ("json_credentials",)}
EDITABLE_MODES = ("DEVELOPMENT", "PRODUCTION", "STAGING")


def _holds_key(value, key):
    if isinstance(value, dict):
        return key in value or any(_holds_key(item, key) for item in value.values())
    return isinstance(value, list) and any(_holds_key(item, key) for item in value)


def placeholder(what):
    return f"<fill in: {what}>"


def _item_schema(schema):
    """The component a reply's schema names, and whether it is a list of them (`XList` -> X)."""
    name = (schema or {}).get("$ref", "").rsplit("/", 1)[-1]
    if name.endswith("List") and name[:-4] in KINDS:
        return name[:-4], True
    return name, False


class Harvest:
    def __init__(self):
        self.records = {kind: {} for kind in set(KINDS.values())}
        self.parents = {}                        # record id -> (kind of owner, owner id) where the reply showed it
        self.deployed = set()
        self.skipped = []

    # ------------------------------------------------------------ taking replies
    def take(self, operation, params, status, reply):
        """Keep what one reply showed (a 2xx reply of a documented operation; anything else is ignored)."""
        if operation is None or not 200 <= status < 300:
            return
        if operation.method == "DELETE":
            self._forget(params)
            return
        name, listed = _item_schema(operation.responses.get(status))
        if name in ("ServiceStatus", "ServiceStatusList"):
            statuses = reply.get("results", []) if name.endswith("List") else [reply]
            for item in statuses:
                if isinstance(item, dict) and item.get("state") == "DEPLOYED":
                    self.deployed.add(item.get("id"))
            return
        kind = KINDS.get(name)
        if kind is None or not isinstance(reply, dict):
            return
        if name == "CurrentOrganization":       # the caller's organization, and those the token sees
            items = [reply, *reply.get("results", [])]
        else:
            items = reply.get("results", []) if listed else [reply]
        for item in items:
            if isinstance(item, dict) and isinstance(item.get("id"), str):
                self._keep(kind, item, params)

    def _keep(self, kind, item, params):
        record = {key: value for key, value in item.items() if key not in SECRET_FIELDS and key != "results"}
        if kind == "services" and _holds_key(record, "deployed_commit_id"):   # the platform shows it once deployed
            self.deployed.add(record["id"])
        if kind == "secrets" or record.get("is_secret"):
            record.pop("value", None)           # never kept, even if a reply showed one
        self.records[kind][record["id"]] = record
        owner = next(((OWNER_PARAMS[name], value) for name, value in params.items() if name in OWNER_PARAMS), None)
        org = next((params[name] for name in ORG_PARAMS if name in params), None)
        if owner is not None:
            self.parents[record["id"]] = owner
        elif org is not None:
            self.parents[record["id"]] = ("organization", org)

    def _forget(self, params):
        ident = list(params.values())[-1] if params else None
        for table in self.records.values():
            table.pop(ident, None)

    # ------------------------------------------------------------ writing
    def document(self, spec):
        """The records as a fixtures YAML document (a str), made through a world of their own."""
        builder = Builder(self, spec)
        rt = builder.build()
        head = ("# Fixtures recorded from the platform's replies (mockserver record --fixtures-out).\n"
                "# Load them with `mockserver serve --fixtures DIR`; check them with "
                "`mockserver check --fixtures DIR`.\n"
                "# Webhooks are kept disabled: the mock sends no event to the platform's receivers.\n"
                "# A field the platform did not send is left out, or, where the fixtures need one, kept and said so "
                "above its record.\n")
        head += "".join(f"# left out: {line}\n" for line in self.skipped)
        text = export_fixtures(rt, spec)
        text = text[len(HEADER):] if text.startswith(HEADER) else text
        notes = "".join(line + "\n" for line in text.splitlines() if line.startswith("#"))
        document = yaml.safe_load(text)
        unsent = Unsent(self, spec, builder.sent)
        unsent.strip(document)
        return head + notes + unsent.comment(yaml.dump(document, Dumper=Dumper, sort_keys=False, allow_unicode=True,
                                                       width=100))


class Dumper(yaml.SafeDumper):
    """Safe YAML, with multi-line strings as literal blocks (as world/export.py writes them)."""


Dumper.add_representer(str, lambda dumper, value: dumper.represent_scalar(
    "tag:yaml.org,2002:str", value, style="|" if "\n" in value else None))
# Keys of a fixtures record that hold other records or say what the recording saw, not fields of the record.
STRUCTURE = frozenset({"id", "clusters", "projects", "environments", "variables", "secrets", "container_registries",
                       "credentials", "labels_groups", "webhooks", "override_of", "alias_of", "deployed", "backups",
                       "custom_domains", "deployment_rule", *(kind.plural for kind in SERVICE_KINDS)})
SCHEMAS = {"projects": "ProjectRequest", "environments": "EnvironmentRequest", "variables": "VariableRequest",
           "secrets": "VariableRequest", "registries": "ContainerRegistryRequest",
           "labels_groups": "LabelsGroupRequest", "webhooks": "WebhookRequest"}
NAMED = {"organizations": {"name"}, "clusters": {"name"}}   # what the fixtures need of the records loaded directly


class Unsent:
    """The fields of a fixtures document that the platform did not send: `strip` leaves out those the fixtures
    do without and notes them all; `comment` writes the notes above their records."""

    def __init__(self, harvest, spec, sent):
        self.spec, self.notes = spec, {}
        self.index = {ident: (kind, record) for kind, table in harvest.records.items()
                      for ident, record in table.items()}
        self.index.update(sent)

    def strip(self, value):
        if isinstance(value, dict):
            if isinstance(value.get("id"), str) and value["id"] in self.index:
                self.record(value, *self.index[value["id"]])
            for item in value.values():
                self.strip(item)
        elif isinstance(value, list):
            for item in value:
                self.strip(item)

    def record(self, exported, kind, sent):
        needed = self.needed(kind, sent)
        left, made, kept = [], [], []
        for path, value in missing(exported, sent):
            if "." not in path and path not in needed:
                exported.pop(path)
                left.append(path)
            elif "." not in path:
                made.append(f"{path} {value!r}")
            else:
                kept.append(f"{path} {value!r}")
        parts = [f"{', '.join(left)}: left out, the mock fills in its own" if left else "",
                 f"{', '.join(made)}: made up here, the fixtures need one" if made else "",
                 f"{', '.join(kept)}: the mock's own" if kept else ""]
        if any(parts):
            self.notes[exported["id"]] = f"{kind.removesuffix('s').replace('_', ' ')} {exported['id']}: not sent " \
                                         f"by the platform: {'; '.join(part for part in parts if part)}"

    def needed(self, kind, sent):
        if kind in NAMED:
            return NAMED[kind]
        schema = SCHEMAS.get(kind) or f"{str(sent.get('service_type', '')).title()}Request"
        return set((self.spec.components.get(schema) or {}).get("required", ()))

    def comment(self, text):
        """The YAML text with each note on the line above its record's id."""
        for ident, note in self.notes.items():
            found = re.search(rf"^( *)(- )?id: ['\"]?{re.escape(ident)}['\"]?$", text, re.MULTILINE)
            if found:
                text = f"{text[:found.start()]}{found[1]}# {note}\n{text[found.start():]}"
        return text


def missing(exported, sent, path=""):
    """(path, value) of what `exported` holds that `sent` does not (placeholders and structure aside)."""
    out = []
    for key, value in exported.items():
        if (not path and key in STRUCTURE) or isinstance(value, str) and value.startswith("<fill in:"):
            continue
        if not isinstance(sent, dict) or sent.get(key) is None:
            out.append((f"{path}{key}", value))
        elif isinstance(value, dict):
            out += missing(value, sent[key], f"{path}{key}.")
        elif isinstance(value, list) and isinstance(sent[key], list) and len(value) == len(sent[key]):
            out += [found for index, item in enumerate(value) if isinstance(item, dict)
                    for found in missing(item, sent[key][index], f"{path}{key}[{index}].")]
    return out


class Builder:
    """A world made of harvested records, created through the handlers as fixtures are."""

    def __init__(self, harvest, spec):
        self.harvest, self.spec, self.records = harvest, spec, harvest.records
        self.components = spec.components
        self.org_of = {}                         # record id -> organization id
        self.sent = {}                           # id -> (kind, what the platform sent) of records made up here

    def build(self):
        organizations = self.organizations()
        tokens = [{"name": name, "value": value, "organization": organizations[0]["id"], "scopes": [scope]}
                  for name, value, scope in TOKENS] if organizations else []
        rt = fresh_world(Settings(clock="manual"), Clock("manual"), {"organizations": organizations,
                                                                     "tokens": tokens})
        self.loader = Loader(rt)
        rt.reserved_ids = frozenset(ident for table in self.records.values() for ident in table)
        try:
            self.fill()
        finally:
            rt.reserved_ids = frozenset()
        return rt

    # ------------------------------------------------------------ organizations and clusters
    def organizations(self):
        """The organizations as fixtures (with their clusters): those seen, and those records name."""
        orgs = dict(self.records["organizations"])
        self.resolve(orgs)
        for ident in set(self.org_of.values()) - set(orgs):
            orgs[ident] = {"id": ident, "name": f"organization {ident[:8]}"}
            self.sent[ident] = ("organizations", {"id": ident})
        clusters = {ident: dict(record) for ident, record in self.records["clusters"].items()}
        for env in self.records["environments"].values():        # a cluster only an environment named
            ident = env.get("cluster_id")
            if isinstance(ident, str) and ident not in clusters:
                provider = env.get("cloud_provider") or {}
                clusters[ident] = {"id": ident, "cloud_provider": provider.get("provider"),
                                   "name": env.get("cluster_name") or provider.get("cluster") or f"cluster {ident[:8]}"}
                self.sent[ident] = ("clusters", {"id": ident, "cloud_provider": provider.get("provider"),
                                                 "name": env.get("cluster_name") or provider.get("cluster")})
                self.org_of[ident] = self.org_of.get(env["id"])
        states = self.spec.components["Cluster"]["properties"]["status"]["enum"]
        plans = self.spec.components["Organization"]["properties"]["plan"]["enum"]      # the document's plans
        out = []
        for org in orgs.values():
            doc = {"id": org["id"], "name": org.get("name") or f"organization {org['id'][:8]}"}
            if org.get("description"):
                doc["description"] = org["description"]
            if org.get("plan") in plans:
                doc["plan"] = org["plan"]
            doc["clusters"] = [self.cluster(record, states) for ident, record in clusters.items()
                               if self.org_of.get(ident) == org["id"]]
            out.append(doc)
        return out

    @staticmethod
    def cluster(record, states):
        doc = {"id": record["id"], **{name: record[name] for name in CLUSTER_FIELDS if record.get(name) is not None}}
        doc.setdefault("name", f"cluster {record['id'][:8]}")
        if record.get("cloud_provider") in CLOUD_PROVIDERS:
            doc["cloud_provider"] = record["cloud_provider"]
        if record.get("status") in states:
            doc["status"] = record["status"]
        doc["version"] = str(doc.get("version", "1.31"))
        return doc

    def resolve(self, orgs):
        """The organization of every record: from its own reference, its owner's, or the path it was read at."""
        parents = self.harvest.parents
        for kind in ("clusters", "registries", "labels_groups", "webhooks", "projects"):
            for ident, record in self.records[kind].items():
                owner = (record.get("organization") or {}).get("id")
                if owner is None and parents.get(ident, (None,))[0] == "organization":
                    owner = parents[ident][1]
                if owner is None and len(orgs) == 1:
                    owner = next(iter(orgs))
                if owner is not None:
                    self.org_of[ident] = owner
        for ident, env in self.records["environments"].items():
            project = (env.get("project") or {}).get("id")
            owner = (env.get("organization") or {}).get("id") or self.org_of.get(project)
            if owner is not None:
                self.org_of[ident] = owner
                self.org_of.setdefault(project, owner)
        for ident in self.records["services"]:
            env = self.environment_of("service", ident)
            if env in self.org_of:
                self.org_of[ident] = self.org_of[env]
        self.registries_of_containers()

    def registries_of_containers(self):
        """A registry that only a container's record showed becomes a record of its own."""
        for ident, service in self.records["services"].items():
            registry = service.get("registry")
            if isinstance(registry, dict) and registry.get("id") and registry["id"] not in self.records["registries"]:
                self.records["registries"][registry["id"]] = dict(registry)
                if ident in self.org_of:
                    self.org_of[registry["id"]] = self.org_of[ident]

    # ------------------------------------------------------------ owners
    def environment_of(self, kind, ident):
        if kind == "environment":
            return ident
        if kind == "service":
            return ((self.records["services"].get(ident) or {}).get("environment") or {}).get("id")
        return None

    def project_of(self, kind, ident):
        if kind == "project":
            return ident
        env = self.environment_of(kind, ident)
        return ((self.records["environments"].get(env) or {}).get("project") or {}).get("id")

    def owner(self, record):
        """The id of what owns a variable or secret: its scope says its level, the list it was read in where."""
        kind, ident = self.harvest.parents.get(record["id"], (None, None))
        scope = record.get("scope")
        if kind is None or scope == "BUILT_IN":
            return None
        if scope == "PROJECT":
            return self.project_of(kind, ident)
        if scope == "ENVIRONMENT":
            return self.environment_of(kind, ident)
        return ident if kind == "service" else None

    def owned(self, kind, parent):
        """Records of `kind` whose organization is known (others are left out, and said so)."""
        for ident, record in self.records[kind].items():
            if ident in self.org_of:
                yield record
            else:
                self.skip(f"{kind[:-1].replace('_', ' ')} {record.get('name', ident)}",
                          f"its {parent} was never read")

    # ------------------------------------------------------------ records
    def fill(self):
        self.pending = []
        self.variables_by_owner = {}
        for table in ("variables", "secrets"):
            for record in self.records[table].values():
                owner = self.owner(record)
                if owner is not None:
                    self.variables_by_owner.setdefault(owner, []).append((table, record))
        self.fill_records()

    def fill_records(self):
        for record in self.owned("registries", "organization"):
            self.registry(record)
        for record in self.owned("labels_groups", "organization"):
            org = self.org_of[record["id"]]
            self.create(org, "createLabelsGroup", "LabelsGroupRequest", {"organizationId": org}, record,
                        f"labels group {record.get('name')}")
        for record in self.owned("projects", "organization"):
            self.project(record)
        self.derived()
        self.loader.finish_deployments()
        for record in self.owned("webhooks", "organization"):
            self.webhook(record)

    def registry(self, record):
        org = self.org_of[record["id"]]
        config = {key: value for key, value in (record.get("config") or {}).items() if value is not None}
        for key in SECRET_CONFIG.get(record.get("kind"), ()):
            config.setdefault(key, placeholder(f"{key} of registry {record.get('name')}"))
        self.create(org, "createContainerRegistry", "ContainerRegistryRequest", {"organizationId": org}, record,
                    f"registry {record.get('name')}", {"config": config} if config else None)

    def webhook(self, record):
        org = self.org_of[record["id"]]
        extra = {"enabled": False}
        if record.get("target_secret_set"):
            extra["target_secret"] = placeholder(f"target_secret of webhook {record.get('target_url')}")
        self.create(org, "createWebhook", "WebhookRequest", {"org_id": org}, record,
                    f"webhook {record.get('target_url')}", extra)

    def project(self, record):
        org = self.org_of[record["id"]]
        if self.create(org, "createProject", "ProjectRequest", {"org_id": org}, record,
                       f"project {record.get('name')}") is None:
            return
        self.variables(org, "Project", record["id"])
        for env in self.records["environments"].values():
            if (env.get("project") or {}).get("id") == record["id"]:
                self.environment(org, env)

    def environment(self, org, record):
        what = f"environment {record.get('name')}"
        extra = {}
        if record.get("mode") not in EDITABLE_MODES:
            extra["mode"] = "DEVELOPMENT"
            if record.get("mode") is not None:
                self.skip(f"the mode of {what}", f"{record['mode']} cannot be asked for on create: DEVELOPMENT")
        if self.create(org, "createEnvironment", "EnvironmentRequest", {"project_id": record["project"]["id"]},
                       record, what, extra) is None:
            return
        self.variables(org, "Environment", record["id"])
        for service in self.records["services"].values():
            if (service.get("environment") or {}).get("id") == record["id"]:
                self.service(org, record["id"], service)

    def service(self, org, env, record):
        title = str(record.get("service_type", "")).title()
        if title not in SERVICE_SCHEMAS:
            self.skip(f"service {record.get('name')}", f"unknown service type {record.get('service_type')!r}")
            return
        if self.create(org, f"create{title}", f"{title}Request", {"env_id": env}, record,
                       f"{title.lower()} {record.get('name')}") is None:
            return
        if title != "Database":
            self.variables(org, title, record["id"])
        if record["id"] in self.harvest.deployed:
            self.loader.deployed.append(self.loader.rt.store.services.find(record["id"]))

    def variables(self, org, level, owner):
        """Own variables and secrets of an owner now; overrides and aliases once everything exists."""
        for table, record in self.variables_by_owner.get(owner, ()):
            word = "Variable" if table == "variables" else "Secret"
            if table == "variables" and record.get("is_secret"):
                self.skip(f"variable {record.get('key')}", "a secret variable (its value is never kept)")
                continue
            if record.get("variable_type") in ("OVERRIDE", "ALIAS"):
                self.pending.append((org, table, word, owner, record))
                continue
            extra = {"value": placeholder(f"secret {record.get('key')}")} if table == "secrets" else \
                {"value": record.get("value") or ""}
            self.create(org, f"create{level}{word}", "VariableRequest", {LEVEL_PARAMS[level]: owner}, record,
                        f"{word.lower()} {record.get('key')}", extra)

    def derived(self):
        for org, table, word, owner, record in self.pending:
            kind = "override" if record["variable_type"] == "OVERRIDE" else "alias"
            target = record.get(f"{'overridden' if kind == 'override' else 'aliased'}_{word.lower()}") or {}
            reference = target.get("id") if self.loader.rt.store.tables[table].find(target.get("id")) else \
                target.get("key")
            if kind == "override":
                value = (record.get("value") or "") if table == "variables" else placeholder(f"secret {record['key']}")
                body = {"value": value, "override_scope": record["scope"], "override_parent_id": owner}
            else:
                body = {"key": record["key"], "alias_scope": record["scope"], "alias_parent_id": owner}
            body.update({key: record[key] for key in ("description", "enable_interpolation_in_file")
                         if record.get(key) is not None})
            self.attempt(f"{word.lower()} {kind} {record.get('key')}", lambda: self.loader.call(
                org, f"create{word}{kind.title()}",
                {f"{word.lower()}Id": self.loader.target(table, org, owner, reference)}, {"id": record["id"], **body}))

    # ------------------------------------------------------------ one record
    def create(self, org, operation, schema, params, record, what, extra=None):
        """Create one record through its handler, as fixtures do (its create request checked first); None
        when the document or the mock's rules refuse it."""
        body = project(record, {"$ref": f"#/components/schemas/{schema}"}, self.components)
        body.update(extra or {})
        errors = self.spec.request_validator(schema).errors(body, "body")
        if errors:
            return self.skip(what, f"{errors[0][0]}: {errors[0][1]}")
        return self.attempt(what, lambda: self.loader.call(org, operation, params, {"id": record["id"], **body}))

    def attempt(self, what, action):
        try:
            return action()
        except (ApiError, LookupError, TypeError, ValueError) as error:   # a record the mock's rules refuse
            self.loader.rt.fake.pin(None)
            return self.skip(what, getattr(error, "message", None) or f"{type(error).__name__}: {error}")

    def skip(self, what, why):
        self.harvest.skipped.append(f"{what}: {why}")
        return None
