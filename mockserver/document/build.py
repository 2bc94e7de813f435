"""Build `openapi.yaml` from the schema and operation tables.

    python -m mockserver.document.build         # rewrite mockserver/document/openapi.yaml
    python -m mockserver.document.build --check  # exit 1 if the file is out of date

The YAML file is what the server loads and serves; this module only writes it, so that
the six service kinds and seven variable levels stay identical by construction.
A test keeps the committed file in step with these tables.
"""

import copy
import sys

import yaml

from mockserver.core.kinds import SERVICE_KINDS
from mockserver.document.ids import IDS
from mockserver.document.operations import (
    EXAMPLE_TARGETS,
    PARAM_EXAMPLES,
    PATH_PARAM,
    REQUEST_EXAMPLES,
    all_operations,
)
from mockserver.document.schemas import (
    BASE,
    BASE_REQUIRED,
    DATABASE_VERSIONS,
    GIT_REPOSITORY,
    HELM_SOURCE,
    ICON_BASE,
    JOB_SOURCE,
    REFERENCE,
    SCHEMAS,
    TF_VARIABLES_SOURCE,
    enum,
    integer,
    obj,
    page_list,
    ref,
    s,
    uuid,
)
from mockserver.document.spec import DOCUMENT

ERRORS = {
    400: ("BadRequest", "Bad Request", "The request failed validation; the message names every failed check"),
    401: ("Unauthorized", "Unauthorized", "Missing, invalid or expired credentials"),
    403: ("Forbidden", "Forbidden", "The token's scopes do not allow this operation"),
    404: ("NotFound", "Not Found", "Unknown resource, or a resource of another organization"),
    409: ("Conflict", "Conflict", "Name already taken, or an action already in progress"),
    413: ("PayloadTooLarge", "Payload Too Large", "The request body is larger than the server accepts"),
    415: ("UnsupportedMediaType", "Unsupported Media Type", "The request body is not JSON"),
    429: ("TooManyRequests", "Too Many Requests", "The token's rate limit is exhausted"),
    500: ("InternalServerError", "Internal Server Error", "Injected by a scenario; never raised otherwise"),
    502: ("BadGateway", "Bad Gateway", "Injected by a scenario; never raised otherwise"),
    503: ("ServiceUnavailable", "Service Unavailable", "Injected by a scenario; never raised otherwise"),
    504: ("GatewayTimeout", "Gateway Timeout", "Injected by a scenario; never raised otherwise"),
}
RATE_HEADERS = {
    "X-RateLimit-Limit": ("Requests allowed in the current window", 1000),
    "X-RateLimit-Remaining": ("Requests left in the current window", 998),
    "X-RateLimit-Reset": ("Unix time (seconds) at which the window resets", 1795687200),
}


def service_schemas():
    """Response records of the six service kinds, derived from their create payloads."""
    out = {}
    for row in SERVICE_KINDS:
        kind, title, service_type, request = row.path, row.title, row.type, row.request
        if kind == "database":
            props = {"name": s("orders-db"), "description": s("Orders database"),
                     "type": enum(list(DATABASE_VERSIONS), "POSTGRESQL"), "version": s("16"),
                     "mode": enum(["MANAGED", "CONTAINER"], "CONTAINER"), "accessibility": enum(["PRIVATE", "PUBLIC"]),
                     "cpu": integer(500), "memory": integer(512), "storage": integer(10),
                     "host": s("orders-db.e4a6c8b0.internal"), "port": integer(5432)}
            required = ["name", "type", "version", "mode", "accessibility", "cpu", "memory", "storage", "host", "port"]
        else:
            props = copy.deepcopy(SCHEMAS[request]["properties"])
            for name in ("name", "description", "image_name", "tag"):
                if name in props:
                    props[name].pop("minLength", None)
            for sub in props.values():          # a request may send null; a record leaves the field out
                sub.pop("nullable", None)
            if "git_repository" in props:
                props["git_repository"] = GIT_REPOSITORY
            required = list(SCHEMAS[request].get("required", []))
            required += RECORD_EXTRAS.get(kind, {}).get("required", [])
            props.update(RECORD_EXTRAS.get(kind, {}).get("properties", {}))
        props.update(service_type=enum([service_type]), icon_uri=s(f"{ICON_BASE}/{kind}.svg", format="uri"))
        out[title] = obj({**BASE, "environment": REFERENCE, **props},
                         BASE_REQUIRED + ["environment", "service_type", "icon_uri"] + required)
        out[f"{title}List"] = page_list(title)
    return out


# what a service's record carries beyond its create payload
RECORD_EXTRAS = {
    "application": {"properties": {}, "required": ["build_mode", "dockerfile_path", "cpu", "memory",
                                                   "min_running_instances", "max_running_instances", "ports",
                                                   "auto_deploy"]},
    "container": {"properties": {"registry": obj({"id": uuid(IDS["registry"]), "name": s("acme-hub"),
                                                  "kind": s("PUBLICHUB_CR"),
                                                  "url": s("https://registry.publichub.example")},
                                                 ["id", "name", "kind", "url"])},
                  "required": ["registry", "cpu", "memory", "min_running_instances", "max_running_instances",
                               "ports", "arguments"]},
    "job": {"properties": {"source": JOB_SOURCE, "job_type": enum(["CRON", "LIFECYCLE"], "CRON")},
            "required": ["job_type", "cpu", "memory", "max_nb_restart", "max_duration_seconds", "auto_deploy"]},
    "helm": {"properties": {"source": HELM_SOURCE},
             "required": ["arguments", "allow_cluster_wide_resources", "values_override", "timeout_sec",
                          "auto_deploy"]},
    "terraform": {"properties": {"terraform_files_source": obj({"git_repository": GIT_REPOSITORY}, ["git_repository"]),
                                 "terraform_variables_source": TF_VARIABLES_SOURCE},
                  "required": ["terraform_files_source", "terraform_variables_source", "backend", "engine",
                               "provider_version", "timeout_sec", "job_resources", "use_cluster_credentials",
                               "auto_deploy", "git_repository", "engine_version", "tfvars_files"]},
}


def headers(*names):
    return {name: {"$ref": f"#/components/headers/{name}"} for name in names}


def components():
    error_responses = {}
    for status, (name, phrase, description) in ERRORS.items():
        example = {"status": status, "error": phrase, "message": description}
        response = {"description": description,
                    "content": {"application/json": {"schema": ref("Error"), "example": example}}}
        if status != 401:
            response["headers"] = headers(*RATE_HEADERS)
        if status == 429:
            response["headers"]["Retry-After"] = {"$ref": "#/components/headers/Retry-After"}
        if status == 405:
            continue
        error_responses[name] = response
    header_defs = {name: {"description": text, "required": True, "schema": integer(example, minimum=0)}
                   for name, (text, example) in RATE_HEADERS.items()}
    header_defs["Retry-After"] = {"description": "Seconds until the window resets", "required": True,
                                  "schema": integer(42, minimum=0)}
    return {
        "securitySchemes": {
            "Token": {"type": "apiKey", "in": "header", "name": "Authorization",
                      "description": "An API token: `Token <value>` (also accepted as `Bearer <value>`)"},
            "Bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT",
                       "description": "An HS256 JWT with `sub` and `exp`, or an API token"},
        },
        "headers": header_defs,
        "responses": error_responses,
        "schemas": {**SCHEMAS, **service_schemas()},
    }


def error_statuses(op):
    statuses = [400, 401, 403, 404, 429, 500, 502, 503, 504]
    if op.request:
        statuses += [413, 415]
    if op.method in ("POST", "PUT", "DELETE"):
        statuses.append(409)
    return sorted(statuses)


def operation(op):
    names = PATH_PARAM.findall(op.path)
    targets = EXAMPLE_TARGETS.get(op.operation_id) or [PARAM_EXAMPLES[name] for name in names]
    params = [{"name": name, "in": "path", "required": True,
               "schema": {"type": "string", "format": "uuid"},
               "example": IDS[target]} for name, target in zip(names, targets, strict=True)]
    params += op.query
    success = {"description": op.summary or "Success", "headers": headers(*RATE_HEADERS)}
    if op.response:
        success["content"] = {"application/json": {"schema": ref(op.response)}}
    if op.links:
        success["links"] = op.links
    responses = {str(op.status): success}
    for status in error_statuses(op):
        responses[str(status)] = {"$ref": f"#/components/responses/{ERRORS[status][0]}"}
    out = {"operationId": op.operation_id, "summary": op.summary, "tags": [op.tag], "x-scope": op.scope}
    if params:
        out["parameters"] = params
    if op.request:
        media = {"schema": ref(op.request)}
        if op.operation_id in REQUEST_EXAMPLES:
            media["example"] = REQUEST_EXAMPLES[op.operation_id]
        out["requestBody"] = {"required": op.body_required, "content": {"application/json": media}}
    out["responses"] = responses
    return out


def document():
    paths = {}
    for op in all_operations():
        paths.setdefault(op.path, {})[op.method.lower()] = operation(op)
    return {
        "openapi": "3.0.3",
        "info": {
            "title": "Infrastructure Deployment Platform API (mock)",
            "version": "1.0.0",
            "description": (
                "Organizations, projects, environments, services, clusters, variables and secrets, "
                "container registries, labels and webhooks. Served by the mock server; every request "
                "is validated against this document and every reply conforms to it."),
        },
        "servers": [{"url": "/"}],
        "security": [{"Token": []}, {"Bearer": []}],
        "tags": [{"name": name} for name in sorted({op.tag for op in all_operations()})],
        "paths": paths,
        "components": components(),
    }


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data):
        return True


def render():
    header = "# Generated by `python -m mockserver.document.build` from schemas.py and operations.py.\n"
    return header + yaml.dump(document(), Dumper=_Dumper, sort_keys=False, width=110, allow_unicode=True)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    text = render()
    if "--check" in argv:
        if DOCUMENT.read_text() != text:
            print(f"{DOCUMENT} is out of date: run python -m mockserver.document.build", file=sys.stderr)
            return 1
        return 0
    DOCUMENT.write_text(text)
    print(f"wrote {DOCUMENT} ({len(text.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
