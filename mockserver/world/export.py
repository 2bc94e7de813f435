"""Export a runtime's state as a fixtures document (`GET /_mock/state/export`).

The document has the shape `fixtures.read_fixtures` reads, so a world built through the API
can be committed and loaded back with `--fixtures`. Each record keeps its id and the fields
that the request schema of the operation creating it declares (read-only fields, and fields
the record leaves empty, are left out), taken from the API document rather than from a list
here, so new request fields export without a change. Keys follow the schema's order and
records their creation order: loading an export and exporting again gives the same bytes.

Secrets (secret values, registry passwords and keys, credentials' secret keys, webhook
secrets, secret Terraform variables) export as `<fill in: ...>` placeholders unless
`include_secrets` is set. Built-in
variables are the platform's and are not exported; overrides and aliases are, with
`override_of` / `alias_of` naming what they point to (an id, or a built-in's key). API
tokens are the mock's own credentials and export as they are.
"""

import yaml

from mockserver.core.clock import iso
from mockserver.core.kinds import SERVICE_KINDS
from mockserver.world.fixtures import CLUSTER_FIELDS, ORG_KEYS

HEADER = ("# Fixtures exported from the mock's state (GET /_mock/state/export).\n"
          "# Load them with `mockserver serve --fixtures DIR`; check them with `mockserver check --fixtures DIR`.\n")
PLACEHOLDER_NOTE = "# Secrets are placeholders: replace every '<fill in: ...>' value before use.\n"
CLEAR_NOTE = "# WARNING: this export holds secrets in clear. Do not commit it.\n"

ORG_FIELDS = ("id", "name", "description", "plan")
CLUSTER_ORDER = ("id", "name", "description", "region", "cloud_provider", "version", "is_default", "production",
                 "status")
ORG_TABLES = {"container_registries": "registries", "credentials": "credentials", "labels_groups": "labels_groups"}
# Where an entry's private values belong in its create payload: at the top, or inside a field.
PRIVATE_IN = {"registries": "config"}
# What names a record in a placeholder.
NAMED_BY = {"registries": "name", "credentials": "name", "labels_groups": "name", "webhooks": "target_url"}
OWN_TYPES = ("VALUE", "FILE")

assert set(CLUSTER_ORDER) == CLUSTER_FIELDS, "export and fixtures disagree on the fields of a cluster"


def export_fixtures(rt, spec, include_secrets=False):
    """The runtime's state as a fixtures YAML document (a str)."""
    document = Exporter(rt, spec, include_secrets).document()
    head = HEADER + (CLEAR_NOTE if include_secrets else PLACEHOLDER_NOTE)
    return head + yaml.dump(document, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


class _Dumper(yaml.SafeDumper):
    """Safe YAML, with multi-line strings (Helm values, file variables) as literal blocks."""


def _text(dumper, value):
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


_Dumper.add_representer(str, _text)


def project(value, schema, components):
    """The part of `value` that `schema` (an OpenAPI request schema) declares, in the schema's key order."""
    schema = _resolve(schema, components)
    if isinstance(value, dict):
        properties = _properties(value, schema, components)
        return {name: project(value[name], sub, components) for name, sub in properties.items()
                if value.get(name) is not None and not _resolve(sub, components).get("readOnly")}
    if isinstance(value, list) and "items" in schema:
        return [project(item, schema["items"], components) for item in value]
    return value


def _properties(value, schema, components):
    """Declared properties: the schema's own, its allOf parts' and those of the oneOf/anyOf branch that fits."""
    out = dict(schema.get("properties", {}))
    for part in schema.get("allOf", ()):
        out.update(_properties(value, _resolve(part, components), components))
    branches = [_resolve(b, components) for b in schema.get("oneOf") or schema.get("anyOf") or ()]
    branches = [b for b in branches if "properties" in b or "allOf" in b]
    if branches:
        out.update(_properties(value, _branch(value, branches), components))
    return out


def _resolve(schema, components):
    while "$ref" in schema:
        schema = components[schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def _branch(value, branches):
    """The branch of a oneOf that fits the value: its required fields present, its forbidden ones
    (`not: {}`) absent, and its enum-valued properties (type, kind ...) admitting the value."""
    for branch in branches:
        properties = branch.get("properties", {})
        fixed = {name: sub["enum"] for name, sub in properties.items() if "enum" in sub}
        forbidden = [name for name, sub in properties.items() if sub == {"not": {}}]
        if (all(value.get(name) in allowed for name, allowed in fixed.items() if name in value)
                and all(name in value for name in branch.get("required", ()))
                and not any(name in value for name in forbidden)):
            return branch
    return branches[0]


class Exporter:
    def __init__(self, rt, spec, include_secrets):
        self.rt, self.store, self.include = rt, rt.store, include_secrets
        self.components = spec.document.get("components", {}).get("schemas", {})
        self.now = rt.clock.now()

    def fields(self, schema, view):
        return {"id": view["id"], **project(view, {"$ref": f"#/components/schemas/{schema}"}, self.components)}

    def secret(self, value, what):
        return value if self.include else f"<fill in: {what}>"

    def with_private(self, table, entry):
        """The record as its create payload saw it: public fields plus its private values (or placeholders)."""
        view = dict(entry.data)
        private = {key: self.secret(value, f"{key} of {self.store.tables[table].noun} "
                                            f"{entry.data.get(NAMED_BY.get(table, 'name'))}")
                   for key, value in (entry.private or {}).items()}
        inside = PRIVATE_IN.get(table)
        if inside:
            view[inside] = {**(view.get(inside) or {}), **private}
        else:
            view.update(private)
        return view

    # ------------------------------------------------------------ the document
    def document(self):
        out: dict[str, list | str] = {
            "organizations": [self.organization(org) for org in self.store.organizations.rows.values()],
            "tokens": [self.token(token) for token in self.rt.tokens.values()]}
        limiter = self.rt.limiter
        out["rate_limit"] = f"{limiter.limit}/{_number(limiter.window)}"
        return out

    def organization(self, org):
        out = {name: org.data[name] for name in ORG_FIELDS if org.data.get(name) is not None}
        clusters = [self.cluster(entry) for entry in self.store.clusters.under(org.id)]
        if clusters:
            out["clusters"] = clusters
        for key, table in ORG_TABLES.items():
            items = [self.fields(ORG_KEYS[key][0], self.with_private(table, entry))
                     for entry in self.store.tables[table].under(org.id)]
            if items:
                out[key] = items
        projects = [self.project(entry) for entry in self.store.projects.under(org.id)]
        if projects:
            out["projects"] = projects
        webhooks = [self.fields(ORG_KEYS["webhooks"][0], self.with_private("webhooks", entry))
                    for entry in self.store.webhooks.under(org.id)]
        if webhooks:
            out["webhooks"] = webhooks
        return out

    def cluster(self, entry):
        """A cluster as it stands; an upgrade under way is not kept (it exports on its current version)."""
        busy = self.rt.lifecycle.busy(entry.id, self.now)
        status = "DEPLOYED" if busy else self.rt.deployments.cluster_status(entry, self.now)["status"]
        data = {**entry.data, "status": status}
        return {name: data[name] for name in CLUSTER_ORDER if data.get(name) is not None}

    def project(self, entry):
        out = self.fields("ProjectRequest", entry.data)
        self.variables(out, entry, f"project {entry.data['name']}")
        environments = [self.environment(env) for env in self.store.environments.under(entry.id)]
        if environments:
            out["environments"] = environments
        return out

    def environment(self, entry):
        out = self.fields("EnvironmentRequest", entry.data)
        rules = [rule for rule in self.store.deployment_rules.under(entry.id) if "rev" in rule.meta]
        if rules:                              # only a rule someone set (an untouched one is the default)
            out["deployment_rule"] = project(rules[0].data, {"$ref": "#/components/schemas/DeploymentRuleRequest"},
                                             self.components)
        self.variables(out, entry, f"environment {entry.data['name']}")
        services = self.store.services.under(entry.id)
        for kind in SERVICE_KINDS:
            items = [self.service(service, kind.request) for service in services if service.meta["kind"] == kind.path]
            if items:
                out[kind.plural] = items
        return out

    def service(self, entry, schema):
        out = self.fields(schema, self.with_tf_values(entry) if entry.meta["kind"] == "terraform" else entry.data)
        deployed = entry.meta.get("deployed_rev")
        if deployed is not None and deployed >= 0:
            out["deployed"] = True
        backups = len(self.store.backups.under(entry.id))
        if backups:
            out["backups"] = backups
        domains = [self.fields("CustomDomainRequest", d.data) for d in self.store.custom_domains.under(entry.id)]
        if domains:
            out["custom_domains"] = domains
        self.variables(out, entry, f"{entry.meta['kind']} {entry.data['name']}")
        return out

    def with_tf_values(self, entry):
        """A Terraform service's record with the values of its secret variables (or placeholders) back in
        place: the create payload requires a value for every variable."""
        source = entry.data.get("terraform_variables_source")
        if not source or not any(var.get("secret") for var in source.get("tf_vars", ())):
            return entry.data
        kept = (entry.private or {}).get("tf_vars", {})
        tf_vars = [{**var, "value": self.secret(kept.get(var["key"], ""), f"secret Terraform variable {var['key']} "
                                                                          f"of terraform {entry.data['name']}")}
                   if var.get("secret") else var for var in source["tf_vars"]]
        return {**entry.data, "terraform_variables_source": {**source, "tf_vars": tf_vars}}

    def variables(self, out, owner, where):
        """Own variables and secrets first, then overrides and aliases (the order loading creates them in)."""
        for table in ("variables", "secrets"):
            entries = [e for e in self.store.tables[table].under(owner.id) if e.data["variable_type"] != "BUILT_IN"]
            entries.sort(key=lambda e: e.data["variable_type"] not in OWN_TYPES)
            items = [self.variable(table, entry, where) for entry in entries]
            if items:
                out[table] = items

    def variable(self, table, entry, where):
        view = dict(entry.data)
        kind = view["variable_type"]
        if table == "secrets" and kind != "ALIAS":
            view["value"] = self.secret(entry.private["value"], f"secret {view['key']} of {where}")
        if kind == "ALIAS":
            view.pop("value", None)
        if kind in ("OVERRIDE", "ALIAS"):
            view.pop("mount_path", None)
        out = self.fields("VariableRequest", view)
        if kind in ("OVERRIDE", "ALIAS"):
            target = self.store.tables[table].find(entry.meta["target"])
            reference = target.data["key"] if target.data["variable_type"] == "BUILT_IN" else target.id
            out[f"{kind.lower()}_of"] = reference
        return out

    def token(self, token):
        out = {"name": token.name, "value": token.value, "organization": token.organization,
               "scopes": list(token.scopes)}
        if token.expires_at is not None:
            out["expires_at"] = iso(token.expires_at)
        if token.rate_limit is not None:
            out["rate_limit"] = f"{token.rate_limit[0]}/{_number(token.rate_limit[1])}"
        return out


def _number(seconds):
    return int(seconds) if float(seconds).is_integer() else seconds
