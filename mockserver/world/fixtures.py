"""Fixture files: the state a fresh mock starts from.

`read_fixtures(dir, spec)` reads every `*.yaml` of a folder, merges their top-level
keys (an organization whose id appears in several files is one organization: its lists are
joined in file order), and checks each entry against the request schema of the API operation that would
create it; every problem is reported (file, entry and message) before anything loads. Only
regular files are read (a FIFO or a device would block or never end), at most 64 MiB for the
whole folder, each document within the bounds of core/yamlbound.py (depth), and the folder's
documents together expanding to at most 64 MiB and 100,000 nodes added by aliases.
`api/replay.py` then creates the records through the same handlers as API calls, so
the platform's rules (unique names, registry kinds, variable scopes) hold. A problem names its file, the line
of the record it is about and that record; a record that refers to another the fixtures do not hold (an
environment's cluster, a service's container registry) is reported before any record is created, at the
record that refers, with the ones it may have meant.
"""

import difflib
import os
import stat
from datetime import datetime
from pathlib import Path

import yaml

from mockserver.core import yamlbound
from mockserver.core.errors import StartupError
from mockserver.core.kinds import SERVICE_KINDS
from mockserver.core.settings import parse_rate
from mockserver.world.auth import GRANTS
from mockserver.world.webhooks import target_problem

FIXTURE_BYTES = yamlbound.FIXTURE_BYTES     # all the files of a folder together
ORG_KEYS = {"container_registries": ("ContainerRegistryRequest", "createContainerRegistry"),
            "credentials": ("CredentialsRequest", "createAwsCredentials"),
            "labels_groups": ("LabelsGroupRequest", "createLabelsGroup"),
            "webhooks": ("WebhookRequest", "createWebhook")}
NESTED = {"id", "deployed", "variables", "secrets", "backups", "custom_domains", "environments", "deployment_rule",
          "override_of", "alias_of"}
CLUSTER_FIELDS = {"id", "name", "description", "region", "cloud_provider", "version", "is_default", "production",
                  "status"}


def folder_problem(folder):
    """A fixtures path that names a file (or something else) instead of a folder: the line that says so, or None
    (a missing folder is read_fixtures' to report)."""
    path = Path(folder)
    if path.exists() and not path.is_dir():
        return (f"fixtures: {path}: not a folder (it is a file): --fixtures (or check DIR) names the folder that "
                f"holds the fixture YAML files")
    return None


class FixtureError(StartupError, ValueError):
    """Every problem of a fixtures folder. `problems` may quote the files (what `mockserver check` prints);
    `quiet` names only files and kinds of problem, for a caller who named a folder but may not read it."""

    def __init__(self, problems, quiet=None):
        super().__init__("\n".join(problems))
        self.problems = problems
        self.quiet = quiet if quiet is not None else problems

    def lines(self):
        return [f"fixtures: {problem}" for problem in self.problems]


class _Problems:
    """Problems as they are found: each in full, and its kind in a few words that quote nothing."""

    def __init__(self):
        self.full, self.kinds = [], {}

    def add(self, full, where, kind):
        self.full.append(full)
        self.kinds[(where, kind)] = self.kinds.get((where, kind), 0) + 1

    def error(self):
        quiet = [f"{where}: {kind}" + (f" ({count} times)" if count > 1 else "")
                 for (where, kind), count in self.kinds.items()]
        return FixtureError(self.full, quiet)


class _Unreadable(Exception):
    """A fixture file that is not read: the problem, in words that quote nothing of it."""


def read_fixtures(folder, spec):
    """The merged fixtures of every *.yaml of a folder, or FixtureError naming every problem."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FixtureError([f"{folder}: fixtures folder not found"])
    data: dict[str, list | tuple[int, float]] = {"organizations": [], "tokens": []}   # and rate_limit
    problems = _Problems()
    files = sorted(folder.glob("*.yaml")) + sorted(folder.glob("*.yml"))
    if not files:
        problems.add(f"{folder}: no *.yaml fixture files", folder, "no *.yaml fixture files")
    budget = FIXTURE_BYTES
    expansion = yamlbound.Expansion(FIXTURE_BYTES, what="a fixtures folder's files together")
    places: dict = {}                           # id of a record's dict (and a key of it) -> "file:line"
    for path in files:
        try:
            text = _read_file(path, budget)
            budget -= len(text)
            node, raw = yamlbound.compose(text, max_bytes=FIXTURE_BYTES, expansion=expansion)
            _place(node, raw, path, places)
            raw = raw or {}
        except _Unreadable as error:
            problems.add(f"{path}: {error}", path.name, str(error))
            continue
        except yamlbound.BoundError as error:
            problems.add(f"{path}:{error.line or '?'}: {error.problem}", path.name, error.problem)
            continue
        except yaml.YAMLError as error:
            mark = getattr(error, "problem_mark", None)
            line = mark.line + 1 if mark else "?"
            problems.add(f"{path}:{line}: not valid YAML: {getattr(error, 'problem', error)}", path.name,
                         f"not valid YAML (line {line})")
            continue
        _take(raw, path, spec, data, problems, places)
    data["organizations"] = _merge_organizations(data["organizations"], problems)
    if not problems.full:                       # records of the right shape: what they refer to
        for record, key, problem in reference_problems(data["organizations"]):
            where = places.get((id(record), key)) or places.get(id(record), folder)
            problems.add(f"{where}: {problem}", "fixtures", "a record refers to one the fixtures do not hold")
    if problems.full:
        raise problems.error()
    return data


def _read_file(path, budget):
    """The bytes of a fixture file: a regular file (never a FIFO or a device, which could block or never
    end), read no further than what is left of the folder's bound."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as error:
        raise _Unreadable(f"cannot be read: {error.strerror or error}") from None
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise _Unreadable("not a regular file")
        data = handle.read(budget + 1)
    if len(data) > budget:
        raise _Unreadable(f"the folder's files are larger than {yamlbound.size_text(FIXTURE_BYTES)} together "
                          "(the bound of a fixtures folder)")
    return data


def _place(node, value, path, places):
    """Note "file:line" of every mapping of a document and of each of its keys (by the id of the dict it was built
    into)."""
    if isinstance(node, yaml.MappingNode) and isinstance(value, dict):
        places.setdefault(id(value), f"{path}:{node.start_mark.line + 1}")
        for key, child in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value in value:
                places.setdefault((id(value), key.value), f"{path}:{key.start_mark.line + 1}")
                _place(child, value[key.value], path, places)
    elif isinstance(node, yaml.SequenceNode) and isinstance(value, list):
        for child, item in zip(node.value, value, strict=False):
            _place(child, item, path, places)


def reference_problems(organizations):
    """(record, key, problem) for each record that refers to a cluster or a container registry its organization does
    not hold: the replay would refuse it with a bare "not found"."""
    for org in organizations:
        if not isinstance(org, dict):
            continue
        clusters = {c.get("id"): c.get("name") for c in org.get("clusters", []) if isinstance(c, dict)}
        registries = {r.get("id"): r.get("name") for r in org.get("container_registries", []) if isinstance(r, dict)}
        for env, where in _environments(org):
            for key in ("cluster_id", "cluster"):
                if key in env and env[key] not in clusters:
                    yield env, key, _dangling(f"{where}: {key}", env[key], "cluster", org, clusters)
            for kind in SERVICE_KINDS:
                for service in env.get(kind.plural, []):
                    image = service.get("image") if isinstance(service.get("image"), dict) else {}
                    for holder in (service, image):
                        ident = holder.get("registry_id")
                        if ident is not None and ident not in registries:
                            yield holder, "registry_id", _dangling(
                                f"{where} {kind.plural[:-1]} {service.get('name')}: registry_id", ident,
                                "container registry", org, registries)


def _environments(org):
    for project in org.get("projects", []):
        for env in project.get("environments", []):
            yield env, f"organization {org.get('name')} project {project.get('name')} environment {env.get('name')}"


def _dangling(where, ident, noun, org, held):
    near = difflib.get_close_matches(str(ident), [str(key) for key in held if key], n=1, cutoff=0.6)
    meant = f" (did you mean {near[0]} ({held[near[0]]})?)" if near else ""
    listed = ", ".join(f"{name} ({key or 'no id'})" for key, name in held.items()) or "none"
    return (f"{where} {ident!r}: {noun} {ident} not found: organization {org.get('name')} holds no such {noun}"
            f"{meant}; it holds: {listed}")


def _take(raw, path, spec, data, problems, places):
    """One file's document into `data`: organizations and tokens checked and added, rate_limit read."""
    if not isinstance(raw, dict):
        problems.add(f"{path}: top level must be a mapping", path.name, "top level must be a mapping")
        return
    for key, value in raw.items():
        if key in ("organizations", "tokens"):
            if not isinstance(value, list):
                problems.add(f"{path}: {key} must be a list", path.name, f"{key} must be a list")
                continue
            for item in value:
                try:
                    item_problems = _check_org(item, spec) if key == "organizations" else _check_token(item)
                except (AttributeError, TypeError, KeyError):     # a list where a mapping belongs, or the reverse
                    item_problems = ["has a part of the wrong shape (a list, a mapping or a value misplaced)"]
                name = item.get("name", "?") if isinstance(item, dict) else "?"
                for problem in item_problems:
                    problems.add(f"{places.get(id(item), path)}: {key}[{name}] {problem}", path.name,
                                 f"an entry of {key} does not match the API's request schemas")
            data[key] += value
        elif key == "rate_limit":
            try:
                data["rate_limit"] = parse_rate(value)
            except ValueError as error:
                problems.add(f"{path}: rate_limit: {error}", path.name, "rate_limit is not N/WINDOW")
        else:
            problems.add(f"{path}: unknown top-level key {key!r} (expected organizations, tokens, rate_limit)",
                         path.name, "an unknown top-level key (expected organizations, tokens, rate_limit)")


def _merge_organizations(organizations, problems):
    """Entries with the same id are one organization: lists are joined, other fields must agree."""
    out: list = []
    by_id: dict[object, dict] = {}              # id, as the YAML wrote it -> the merged organization
    for org in organizations:
        first = by_id.get(org.get("id")) if isinstance(org, dict) else None
        if first is None:
            if isinstance(org, dict) and "id" in org:
                org = by_id[org["id"]] = dict(org)
            out.append(org)
            continue
        for key, value in org.items():
            if isinstance(value, list):
                first[key] = list(first.get(key, [])) + value
            elif key not in first:
                first[key] = value
            elif first[key] != value:
                problems.add(f"organization {org['id']}: {key} differs between fixture files "
                             f"({first[key]!r}, {value!r})", "fixtures", "organizations with one id differ "
                             "between files")
    return out


def _check(spec, schema, entry, where):
    if not isinstance(entry, dict):
        return [f"{where}: must be a mapping"]
    body = {k: v for k, v in entry.items() if k not in NESTED}
    validator = spec.request_validator(schema)
    return [f"{loc.replace('body', where, 1)}: {msg}" for loc, msg in validator.errors(body, "body")]


def _check_org(org, spec):
    if not isinstance(org, dict):
        return ["must be a mapping"]
    out = [] if isinstance(org.get("id"), str) and isinstance(org.get("name"), str) else ["needs id and name"]
    for cluster in org.get("clusters", []):
        unknown = set(cluster) - CLUSTER_FIELDS - {"lock"}      # a lock is state, not a field export keeps
        if unknown or "name" not in cluster:
            out.append(f"cluster {cluster.get('name', '?')}: needs a name; unknown fields {sorted(unknown)}")
        if "lock" in cluster:
            out += _check(spec, "ClusterLockRequest", cluster["lock"], f"cluster {cluster.get('name')}.lock")
    for key, (schema, _) in ORG_KEYS.items():
        for item in org.get(key, []):
            out += _check_webhook(spec, item) if key == "webhooks" else _check(spec, schema, item, key)
    for project in org.get("projects", []):
        out += _check(spec, "ProjectRequest", project, f"project {project.get('name')}")
        out += _check_variables(spec, project, f"project {project.get('name')}")
        for env in project.get("environments", []):
            where = f"environment {env.get('name')}"
            out += _check(spec, "EnvironmentRequest", env, where)
            out += _check_variables(spec, env, where)
            if "deployment_rule" in env:
                out += _check(spec, "DeploymentRuleRequest", env["deployment_rule"], f"{where}.deployment_rule")
            for kind in SERVICE_KINDS:
                key, schema = kind.plural, kind.request
                for service in env.get(key, []):
                    out += _check(spec, schema, service, f"{key[:-1]} {service.get('name')}")
                    out += _check_variables(spec, service, f"{key[:-1]} {service.get('name')}")
                    for domain in service.get("custom_domains", []):
                        out += _check(spec, "CustomDomainRequest", domain, "custom_domains")
    return out


def _check_webhook(spec, item):
    """A webhook entry, its target_url refused in the API's words (the schema's pattern would quote a regex).
    Link-local and metadata targets are the handlers' to refuse, as an option of `serve` may allow them."""
    out = _check(spec, "WebhookRequest", item, "webhooks")
    url = item.get("target_url") if isinstance(item, dict) else None
    problem = target_problem(url, allow_link_local=True) if isinstance(url, str) else None
    if problem is None:
        return out
    return [f"webhooks.target_url: {problem}"] + [p for p in out if not p.startswith("webhooks.target_url:")]


def _check_variables(spec, owner, where):
    out = []
    for key in ("variables", "secrets"):
        for item in owner.get(key, []):
            if isinstance(item, dict) and "alias_of" in item:      # an alias takes its value from its target
                item = {"value": "", **item}
            if isinstance(item, dict) and "override_of" in item and "alias_of" in item:
                out.append(f"{where}.{key}: {item.get('key')}: override_of and alias_of exclude each other")
            out += _check(spec, "VariableRequest", item, f"{where}.{key}")
    return out


def _check_token(token):
    if not isinstance(token, dict):
        return ["must be a mapping"]
    out = [f"needs {field}" for field in ("name", "value", "organization", "scopes") if field not in token]
    out += [f"unknown scope {s!r} (expected one of {', '.join(GRANTS)})" for s in token.get("scopes", [])
            if s not in GRANTS]
    if "expires_at" in token:
        try:
            timestamp(token["expires_at"])
        except ValueError:
            out.append(f"expires_at {token['expires_at']!r} is not an ISO 8601 date-time")
    if "rate_limit" in token:
        try:
            parse_rate(token["rate_limit"])
        except ValueError as error:
            out.append(str(error))
    return out


def timestamp(value):
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, datetime):
        return value.timestamp()
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
