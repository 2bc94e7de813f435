"""The flows a parity run walks (contract/parity.py): the built-in one, or one replayed from a file.

A flow is a list of `Step`s. The built-in flow (`BUILT_IN`) is a table: it reads what exists
(the organization, its clusters, the first project, environment, application and registry it
lists), then, when writes are allowed, walks the spec's operations in the order a client uses
them: create a project, an environment, an application, variables (an override among them) and a
secret, deploy and poll to the end, then a database, a registry, a labels group and a webhook;
two calls that must fail show the error body. Everything it creates is deleted at the end, in
reverse order (contract/parity.py), through the delete operation the document links to each create.

Paths and bodies hold `{name}` placeholders: ids a step saved (`save`: the id of the record a
reply is; `pick`: the id of the first record a list shows, the record of the same name on the
mock), and `{run}` (the run's name: every record it creates is named after it), `{secret}` (a
value made for the run, never printed) and `{git_url}` (the repository the application builds from).

`load_flow(path, upstream)` reads a HAR file (what `mockserver record --har` writes) or a journal
(`GET /_mock/calls`) as a flow: its recorded ids are mapped to each side's as the run goes.
"""

import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlsplit

import orjson
import yaml

from mockserver.calls.journal import REDACTED
from mockserver.contract.drift import UUID_TEXT
from mockserver.core.errors import ApiError, StartupError
from mockserver.core.kinds import WITH_VARIABLES
from mockserver.core.paths import without_api_prefix

PLACEHOLDER = re.compile(r"\{(\w+)\}")
UUIDS = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
NOWHERE = "00000000-0000-4000-8000-000000000000"        # an id no platform holds: the 404 step
DEPLOY_ENDS = ("DEPLOYED", "BUILD_ERROR", "DEPLOYMENT_ERROR", "CANCELED")
ENDS = DEPLOY_ENDS + ("STOPPED", "STOP_ERROR", "RESTARTED", "RESTART_ERROR", "DELETED", "DELETE_ERROR", "READY")


@dataclass(frozen=True)
class Step:
    method: str
    path: str
    body: object = None
    query: dict = None
    save: str = None          # placeholder that takes the id of the record the reply is
    pick: str = None          # placeholder that takes the id of the first record a list shows
    poll: tuple = ()          # states that end a status read repeated until one of them shows
    recorded: object = None   # (replayed flows) the recorded reply's JSON body, for the ids it created
    status: int = None        # (replayed flows) the recorded status

    @property
    def writes(self):
        return self.method not in ("GET", "HEAD", "OPTIONS")


def S(method, path, body=None, **extra):
    return Step(method, path, body, **extra)


PROJECT = {"name": "{run}", "description": "made by mockserver parity; deleted at the end of the run"}
ENVIRONMENT = {"name": "{run}-env", "mode": "DEVELOPMENT", "cluster_id": "{cluster}"}
APPLICATION = {"name": "{run}-app", "git_repository": {"url": "{git_url}", "branch": "main"}, "build_mode": "DOCKER",
               "dockerfile_path": "Dockerfile", "cpu": 250, "memory": 256, "min_running_instances": 1,
               "max_running_instances": 1,
               "ports": [{"internal_port": 8080, "external_port": 443, "protocol": "HTTP",
                          "publicly_accessible": True}]}
DATABASE = {"name": "{run}-db", "type": "POSTGRESQL", "version": "16", "mode": "CONTAINER", "accessibility": "PRIVATE",
            "cpu": 250, "memory": 256, "storage": 10}
REGISTRY = {"name": "{run}-registry", "kind": "GENERIC_CR", "url": "https://registry.parity.example",
            "description": "made by mockserver parity", "config": {"username": "parity", "password": "{secret}"}}
LABELS = {"name": "{run}-labels",
          "labels": [{"key": "purpose", "value": "parity", "propagate_to_cloud_provider": False}]}
WEBHOOK = {"target_url": "https://hooks.parity.example/{run}", "events": ["DEPLOYMENT_SUCCEEDED"], "enabled": False,
           "description": "made by mockserver parity"}

READS = (
    S("GET", "/organization", save="org"),
    S("GET", "/organization/{org}/cluster", pick="cluster"),
    S("GET", "/cluster/{cluster}"),
    S("GET", "/cluster/{cluster}/status"),
    S("GET", "/organization/{org}/project", pick="some_project"),
    S("GET", "/project/{some_project}"),
    S("GET", "/project/{some_project}/environment", pick="some_env"),
    S("GET", "/environment/{some_env}"),
    S("GET", "/environment/{some_env}/status"),
    S("GET", "/environment/{some_env}/deploymentQueue"),
    S("GET", "/environment/{some_env}/database/status"),
    S("GET", "/environment/{some_env}/application", pick="some_app"),
    S("GET", "/application/{some_app}"),
    S("GET", "/application/{some_app}/status"),
    S("GET", "/application/{some_app}/environmentVariable"),
    S("GET", "/application/{some_app}/secret"),
    S("GET", "/organization/{org}/containerRegistry", pick="some_registry"),
    S("GET", "/organization/{org}/containerRegistry/{some_registry}"),
    S("GET", "/organization/{org}/labelsGroups"),
    S("GET", "/organization/{org}/webhook"),
    S("GET", f"/project/{NOWHERE}"),
)
WRITES = (
    S("POST", "/organization/{org}/project", PROJECT, save="project"),
    S("POST", "/organization/{org}/project", {"description": "a project without a name is refused"}),
    S("GET", "/project/{project}"),
    S("PUT", "/project/{project}", {**PROJECT, "description": "edited by mockserver parity"}),
    S("POST", "/project/{project}/environmentVariable", {"key": "PARITY_REGION", "value": "eu"}, save="project_var"),
    S("POST", "/project/{project}/environment", ENVIRONMENT, save="env"),
    S("GET", "/environment/{env}"),
    S("PUT", "/environment/{env}", {"name": "{run}-env", "mode": "STAGING"}),
    S("POST", "/variable/{project_var}/override", {"value": "us", "override_scope": "ENVIRONMENT",
                                                   "override_parent_id": "{env}"}, save="override"),
    S("GET", "/environment/{env}/environmentVariable"),
    S("POST", "/environment/{env}/application", APPLICATION, save="app"),
    S("GET", "/application/{app}"),
    S("POST", "/application/{app}/environmentVariable", {"key": "PARITY_MODE", "value": "nightly"}, save="variable"),
    S("GET", "/application/{app}/environmentVariable/{variable}"),
    S("PUT", "/application/{app}/environmentVariable/{variable}", {"key": "PARITY_MODE", "value": "weekly"}),
    S("POST", "/application/{app}/secret", {"key": "PARITY_SECRET", "value": "{secret}"}, save="secret"),
    S("GET", "/application/{app}/secret"),
    S("POST", "/application/{app}/deploy", {}),
    S("GET", "/application/{app}/status", poll=DEPLOY_ENDS),
    S("GET", "/application/{app}/deploymentHistory"),
    S("GET", "/application/{app}/log", query={"tail": "10"}),
    S("GET", "/environment/{env}/status"),
    S("GET", "/environment/{env}/deploymentQueue"),
    S("POST", "/environment/{env}/database", DATABASE, save="database"),
    S("GET", "/database/{database}"),
    S("GET", "/environment/{env}/database/status"),
    S("POST", "/organization/{org}/containerRegistry", REGISTRY, save="registry"),
    S("GET", "/organization/{org}/containerRegistry/{registry}"),
    S("POST", "/organization/{org}/labelsGroups", LABELS, save="labels"),
    S("GET", "/organization/{org}/labelsGroups/{labels}"),
    S("POST", "/organization/{org}/webhook", WEBHOOK, save="webhook"),
    S("GET", "/organization/{org}/webhook/{webhook}"),
)
BUILT_IN = READS + WRITES


# ---------------------------------------------------------------- cleaning up what a step created
OVERRIDE_OWNERS = {"PROJECT": "project", "ENVIRONMENT": "environment",
                   **{kind.type: kind.path for kind in WITH_VARIABLES}}
FAMILIES = {"Variable": "environmentVariable", "Secret": "secret"}


def delete_path(spec, operation, params, body, reply):
    """The path that deletes what a create made: the delete operation the document links to it, or for an
    override or alias the record's path under the place it was put (None when nothing deletes it)."""
    raw = spec.document["paths"][operation.template][operation.method.lower()]["responses"].get(str(operation.status))
    for link in (raw or {}).get("links", {}).values():
        if link["operationId"].startswith("delete") and link["operationId"] in spec.operations:
            values = {name: _link_value(source, params, reply) for name, source in link["parameters"].items()}
            if None not in values.values():
                template = spec.operations[link["operationId"]].template
                return PLACEHOLDER.sub(lambda match: str(values.get(match[1], match[0])), template)
    return _derived_path(operation, params, body, reply)


def _link_value(source, params, reply):
    if source == "$response.body#/id":
        return reply.get("id") if isinstance(reply, dict) else None
    if source.startswith("$request.path."):
        return params.get(source[len("$request.path."):])
    return None


def _derived_path(operation, params, body, reply):
    name = operation.operation_id
    if not isinstance(reply, dict) or "id" not in reply:
        return None
    word = "Variable" if "Variable" in name else "Secret"
    if name.startswith("create") and name.endswith(("Override", "Alias")):     # the place is in the body
        kind = "override" if name.endswith("Override") else "alias"
        owner = OVERRIDE_OWNERS.get((body or {}).get(f"{kind}_scope"))
        parent = (body or {}).get(f"{kind}_parent_id")
    elif name.startswith(("override", "alias")):                              # the service of the path
        owner, parent = operation.template.split("/")[1], params.get(operation.params[0])
    else:
        return None
    if owner is None or parent is None:
        return None
    return f"/{owner}/{parent}/{FAMILIES[word]}/{reply['id']}"


# ---------------------------------------------------------------- replayed flows
class FlowError(StartupError, ValueError):
    """A flow file that cannot be read (one line naming the file and the problem)."""


def load_flow(path, upstream):
    """A HAR file or a journal (`GET /_mock/calls`) as steps, in the order recorded. Control API calls
    are left out; a status read repeated until a state is one step polled until that state."""
    try:
        with open(path, "rb") as handle:
            document = yaml.safe_load(handle) if str(path).endswith((".yaml", ".yml")) else orjson.loads(handle.read())
    except (OSError, ValueError, yaml.YAMLError) as error:
        raise FlowError(f"{path}: cannot read the flow: {getattr(error, 'strerror', None) or error}") from None
    if isinstance(document, dict) and isinstance(document.get("log"), dict):
        entries = [_from_har(entry, upstream) for entry in document["log"].get("entries", [])]
    elif isinstance(document, dict) and isinstance(document.get("results"), list):
        entries = [_from_journal(call) for call in document["results"]]
    elif isinstance(document, list):
        entries = [_from_journal(call) for call in document]
    else:
        raise FlowError(f"{path}: neither a HAR file ({{log: {{entries}}}}) nor a journal ({{results: [calls]}})")
    steps = [step for step in entries if step is not None and not step.path.startswith("/_mock")]
    if not steps:
        raise FlowError(f"{path}: the flow holds no API call")
    return _polls(steps)


def _from_har(entry, upstream):
    try:
        request, response = entry["request"], entry.get("response", {})
        url = urlsplit(request["url"])
        base = urlsplit(upstream).path.rstrip("/")
        path = url.path[len(base):] if base and url.path.startswith(base + "/") else url.path
        query = dict(parse_qsl(url.query, keep_blank_values=True))
        text = (request.get("postData") or {}).get("text")
        reply = (response.get("content") or {}).get("text")
        return Step(request["method"].upper(), path, _parse(text), query or None,
                    recorded=_parse(reply), status=response.get("status"))
    except (KeyError, TypeError, AttributeError) as error:
        raise FlowError(f"a HAR entry without {error}") from None


def _from_journal(call):
    try:
        return Step(call["method"].upper(), call["path"], _secret_values(call.get("body")),
                    call.get("query") or None, recorded=call.get("response"), status=call.get("status"))
    except (KeyError, TypeError, AttributeError) as error:
        raise FlowError(f"a journal call without {error}") from None


def _parse(text):
    if not text:
        return None
    try:
        return _secret_values(orjson.loads(text))
    except orjson.JSONDecodeError:
        return None


def _secret_values(value):
    """Redacted values (the journal's and the HAR's) become the run's own secret."""
    if value == REDACTED:
        return "{secret}"
    if isinstance(value, dict):
        return {key: _secret_values(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_secret_values(item) for item in value]
    return value


def _polls(steps):
    """Repeated reads of one status (a client polling) become one step polled until the state last recorded."""
    out = []
    for step in steps:
        previous = out[-1] if out else None
        state = step.recorded.get("state") if isinstance(step.recorded, dict) else None
        if (previous is not None and step.method == "GET" and previous.method == "GET" and step.path == previous.path
                and step.path.endswith("/status") and state is not None):
            out[-1] = Step(step.method, step.path, None, step.query, poll=(state,) if state in ENDS else (),
                           recorded=step.recorded, status=step.status)
        else:
            out.append(step)
    return out


def recorded_ids(step):
    """The id a recorded create made (None for other steps)."""
    if step.writes and step.method == "POST" and isinstance(step.recorded, dict) and step.status and \
            200 <= step.status < 300 and UUID_TEXT.match(str(step.recorded.get("id", ""))):
        return step.recorded["id"]
    return None


def load_mapping(path):
    """A mapping file: YAML or JSON `{platform id: mock id}` for ids a flow names that both sides hold."""
    try:
        with open(path, "rb") as handle:
            mapping = yaml.safe_load(handle) or {}
    except (OSError, yaml.YAMLError) as error:
        raise FlowError(f"{path}: cannot read the mapping: {getattr(error, 'strerror', None) or error}") from None
    if not isinstance(mapping, dict) or not all(UUID_TEXT.match(str(key)) and UUID_TEXT.match(str(value))
                                                for key, value in mapping.items()):
        raise FlowError(f"{path}: a mapping is `platform-id: mock-id`, one pair a line, both uuids")
    return {str(key): str(value) for key, value in mapping.items()}


def operation_of(spec, step):
    """The documented operation a step calls (placeholders stand for ids), or None."""
    path = PLACEHOLDER.sub(NOWHERE, step.path)
    path = without_api_prefix(path)
    try:
        return spec.match(step.method, path)[0]
    except ApiError:
        return None
