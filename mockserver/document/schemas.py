"""Component schemas of the API document, as Python literals.

`build.py` turns these tables into `openapi.yaml`. Field names, types, enums and
read-only markers follow the spec; where the spec is silent the shapes follow
`docs/decisions.md`. Vendor names stay neutral (CLOUDA_CR, PUBLICHUB_CR, ...).
"""

from mockserver.core.kinds import SERVICE_TYPES
from mockserver.document.ids import FIXED_REGISTRY_URLS, IDS

# ---------------------------------------------------------------- enums
SERVICE_STATES = [
    "BUILDING", "BUILD_ERROR", "CANCELED", "CANCELING", "DELETED", "DELETE_ERROR",
    "DELETE_QUEUED", "DELETING", "DEPLOYED", "DEPLOYING", "DEPLOYMENT_ERROR",
    "DEPLOYMENT_QUEUED", "EXECUTING", "QUEUED", "READY", "RECAP", "RESTARTED",
    "RESTARTING", "RESTART_ERROR", "RESTART_QUEUED", "STOPPED", "STOPPING",
    "STOP_ERROR", "STOP_QUEUED", "WAITING_DELETING", "WAITING_RESTARTING",
    "WAITING_RUNNING", "WAITING_STOPPING",
]
CLUSTER_STATES = [
    "BUILDING", "BUILD_ERROR", "CANCELED", "CANCELING", "DELETED", "DELETE_ERROR",
    "DELETE_QUEUED", "DELETING", "DEPLOYED", "DEPLOYING", "DEPLOYMENT_ERROR",
    "DEPLOYMENT_QUEUED", "DRY_RUN", "QUEUED", "READY", "STOPPED", "STOPPING",
    "STOP_ERROR", "STOP_QUEUED", "RESTART_QUEUED", "RESTARTING", "RESTARTED",
    "RESTART_ERROR", "INVALID_CREDENTIALS",
]
DEPLOYMENT_STATUSES = ["NEVER_DEPLOYED", "OUT_OF_DATE", "UP_TO_DATE"]
SERVICE_TYPES = list(SERVICE_TYPES)
SCOPES = ["APPLICATION", "BUILT_IN", "ENVIRONMENT", "PROJECT", "CONTAINER", "JOB", "HELM", "TERRAFORM"]
VARIABLE_TYPES = ["VALUE", "ALIAS", "OVERRIDE", "BUILT_IN", "FILE"]
EDITABLE_MODES = ["DEVELOPMENT", "PRODUCTION", "STAGING"]
ENV_MODES = ["DEVELOPMENT", "PREVIEW", "PRODUCTION", "STAGING"]
REGISTRY_KINDS = [
    "CLOUDA_CR", "PUBLIC_CLOUDA_CR", "CLOUDB_CR", "PUBLICHUB_CR", "CODEHOST1_CR",
    "CODEHOST1_ENTERPRISE_CR", "CODEHOST2_CR", "CLOUDC_ARTIFACT_REGISTRY", "CLOUDE_CR",
    "GENERIC_CR", "CLOUDD_CR",
]
# The spec's three kinds, and the platform's other names for the same events (delivered under the name subscribed)
WEBHOOK_EVENTS = ["DEPLOYMENT_STARTED", "DEPLOYMENT_SUCCEEDED", "DEPLOYMENT_FAILED", "DEPLOYMENT_CANCELLED",
                  "DEPLOYMENT_SUCCESSFUL", "DEPLOYMENT_FAILURE"]
# A webhook's target as the platform takes it: http or https; a host name (labels of letters, digits, - and _, the
# last one starting with a letter or _, so that no number a resolver would read as an IPv4 address passes for a
# name), an IPv4 address or an [IPv6] one; a port of 1-65535; no credentials; a path without spaces or control
# characters. world/webhooks.py says why a URL is refused, and refuses link-local and metadata addresses besides.
_OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
IPV4 = rf"{_OCTET}(?:\.{_OCTET}){{3}}"
_HEX = "[0-9A-Fa-f]{1,4}"
IPV6 = "(?:" + "|".join([
    f"(?:{_HEX}:){{7}}{_HEX}", f"(?:{_HEX}:){{1,7}}:", f"(?:{_HEX}:){{1,6}}:{_HEX}",
    f"(?:{_HEX}:){{1,5}}(?::{_HEX}){{1,2}}", f"(?:{_HEX}:){{1,4}}(?::{_HEX}){{1,3}}",
    f"(?:{_HEX}:){{1,3}}(?::{_HEX}){{1,4}}", f"(?:{_HEX}:){{1,2}}(?::{_HEX}){{1,5}}",
    f"{_HEX}:(?::{_HEX}){{1,6}}", f":(?:(?::{_HEX}){{1,7}}|:)", f"::[Ff]{{4}}:{IPV4}",
]) + ")(?:%25[0-9A-Za-z._~-]+)?"
_LABEL_END = "(?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"
HOST_NAME = rf"(?:[A-Za-z0-9_]{_LABEL_END}\.)*[A-Za-z_]{_LABEL_END}\.?"
PORT = "(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])"
WEBHOOK_TARGET = rf"^https?://(?:{IPV4}|\[{IPV6}\]|{HOST_NAME})(?::{PORT})?(?:[/?#][^\x00-\x20\x7f]*)?$"
GIT_PROVIDERS = ["CODEHOST1", "CODEHOST2"]
ICON_BASE = "https://console.platform.example/assets/services"
ACTIONS = ["DEPLOY", "DELETE", "RESTART", "STOP", "UNKNOWN"]
ACTION_STATUSES = ["QUEUED", "ONGOING", "SUCCESS", "ERROR", "CANCELED", "CANCELING", "NEVER"]
STEP_NAMES = [
    "REGISTRY_CREATE_REPOSITORY", "GIT_CLONE", "BUILD_QUEUEING", "BUILD", "DEPLOYMENT_QUEUEING",
    "DEPLOYMENT", "ROUTER_DEPLOYMENT", "MIRROR_IMAGE", "EXECUTING",
]
STEP_STATUSES = ["SUCCESS", "ERROR", "CANCEL", "SKIP"]
TRIGGER_ACTIONS = ["DEPLOY", "DELETE", "RESTART", "STOP", "UNINSTALL"]
ORIGINS = ["API", "CLI", "CONSOLE", "GIT"]
STAGE_STATUSES = ["QUEUED", "ONGOING", "DONE", "ERROR", "SKIPPED", "CANCELED"]
DATABASE_VERSIONS = {
    "POSTGRESQL": ["13", "14", "15", "16", "17"],
    "MYSQL": ["8.0", "8.4"],
    "MONGODB": ["6.0", "7.0", "8.0"],
    "REDIS": ["6", "7"],
}
PROTOCOLS = ["HTTP", "GRPC", "TCP", "UDP"]
# every plan the platform names; FREE, PROFESSIONAL and BUSINESS are the ones every published client accepts
PLANS = ["FREE", "PROFESSIONAL", "BUSINESS", "TEAM", "ENTERPRISE"]
WEEKDAYS = ["MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY", "SATURDAY", "SUNDAY"]
CLOUD_PROVIDERS = ["CLOUDA", "CLOUDB", "CLOUDC", "ON_PREMISE"]


# ---------------------------------------------------------------- helpers
ABSENT = {"not": {}}        # a field that must not be there


def one_of(**branches):
    """Exactly one of these fields: each branch a whole object with its field and without the others
    (so generators can build each branch on its own, and a handler can trust the field it finds)."""
    return {"oneOf": [obj({**{other: ABSENT for other in branches if other != name}, name: schema}, [name])
                      for name, schema in branches.items()]}


def ref(name):
    return {"$ref": f"#/components/schemas/{name}"}


def obj(props, required=(), **extra):
    schema = {"type": "object", "properties": props}
    if required:
        schema["required"] = list(required)
    schema.update(extra)
    return schema


def arr(items, **extra):
    return {"type": "array", "items": items, **extra}


def s(example=None, **kw):
    schema = {"type": "string", **kw}
    if example is not None:
        schema["example"] = example
    return schema


def uuid(example=None, **kw):
    return s(example or IDS["project"], format="uuid", **kw)


def ro(schema):
    return {**schema, "readOnly": True}


def nullable(schema):
    return {**schema, "nullable": True}


def integer(example=None, **kw):
    schema = {"type": "integer", **kw}
    if example is not None:
        schema["example"] = example
    return schema


def boolean(example=None):
    schema = {"type": "boolean"}
    if example is not None:
        schema["example"] = example
    return schema


def enum(values, example=None):
    return {"type": "string", "enum": list(values), "example": example or values[0]}


def datetime(**kw):
    return s("2026-11-20T09:30:00.000000Z", format="date-time", **kw)


def results(item):
    return obj({"results": arr(ref(item))}, ["results"])


PAGINATION = obj({"page": integer(1, minimum=1), "page_size": integer(20, minimum=1, maximum=100),
                  "total_count": integer(42, minimum=0), "total_pages": integer(3, minimum=0)},
                 ["page", "page_size", "total_count", "total_pages"])


def page_list(item):
    """A list that may be asked for one page (`page`, `page_size`): then `pagination` comes next to `results`."""
    return obj({"results": arr(ref(item)), "pagination": PAGINATION}, ["results"])


def paged(item):
    return obj(
        {"page": integer(1, minimum=1), "page_size": integer(20, minimum=1), "results": arr(ref(item))},
        ["page", "page_size", "results"],
    )


BASE = {"id": ro(uuid()), "created_at": ro(datetime()), "updated_at": ro(datetime())}
BASE_REQUIRED = ["id", "created_at", "updated_at"]
NAME = s("storefront", minLength=1, maxLength=255)
DESCRIPTION = s("Customer facing web shop", maxLength=1024)
REFERENCE = obj({"id": uuid()}, ["id"])
GIT_URL = s("https://git.example.com/acme/storefront.git", pattern="^https://")
GIT_REPOSITORY_REQUEST = obj(
    {
        "url": GIT_URL,
        "branch": s("main", minLength=1, maxLength=255),
        "root_path": s("/", maxLength=255),
        "provider": enum(GIT_PROVIDERS, "CODEHOST1"),
    },
    ["url"],
)
# provider: inferred from the URL's host when not sent, absent when it cannot be; deployed_commit_id: once deployed
GIT_REPOSITORY = obj({**GIT_REPOSITORY_REQUEST["properties"],
                      "deployed_commit_id": s("4f0c2a9d1e7b3c5a8f6d2e4b1a3c5d7e9f0b2a4c")},
                     ["url", "branch", "root_path"])
PORT = obj(
    {
        "id": ro(uuid()),
        "name": s("http", maxLength=63),
        "internal_port": integer(8080, minimum=1, maximum=65535),
        "external_port": integer(443, minimum=1, maximum=65535),
        "protocol": enum(PROTOCOLS, "HTTP"),
        "publicly_accessible": boolean(True),
    },
    ["internal_port"],
)
RESOURCES = {
    "cpu": integer(500, minimum=10, maximum=64000, description="millicores"),
    "memory": integer(512, minimum=16, maximum=262144, description="MiB"),
    "min_running_instances": integer(1, minimum=0, maximum=1000),
    "max_running_instances": integer(2, minimum=1, maximum=1000),
}
IMAGE_SOURCE = obj(
    {"registry_id": uuid(IDS["registry"]), "image_name": s("acme/worker", minLength=1, maxLength=255),
     "tag": s("1.4.2", minLength=1, maxLength=128)},
    ["registry_id", "image_name", "tag"],
)
VARIABLE_DESCRIPTION = nullable(s("Set by the release pipeline", maxLength=255))
# ---- jobs and Helm services: the platform's nested payloads (one source kind each, docs/guide/api-behaviour.md)
DOCKERFILE_PATH = s("Dockerfile", minLength=1, maxLength=255)
JOB_DOCKER_REQUEST = obj({"git_repository": GIT_REPOSITORY_REQUEST, "dockerfile_path": DOCKERFILE_PATH},
                         ["git_repository"])
JOB_DOCKER = obj({"git_repository": GIT_REPOSITORY, "dockerfile_path": DOCKERFILE_PATH},
                 ["git_repository", "dockerfile_path"])
JOB_SOURCE_REQUEST = one_of(image=IMAGE_SOURCE, docker=JOB_DOCKER_REQUEST)
JOB_SOURCE = one_of(image=IMAGE_SOURCE, docker=JOB_DOCKER)
JOB_COMMAND = {"arguments": arr(s("--full", maxLength=1024), maxItems=100),
               "entrypoint": s("/app/report", minLength=1, maxLength=1024)}
JOB_CRON = obj({"scheduled_at": s("0 3 * * *", minLength=1, maxLength=64), **JOB_COMMAND}, ["scheduled_at"])
# a cron job, or a lifecycle job (one or more events), never both
LIFECYCLE = ("on_start", "on_stop", "on_delete")
JOB_SCHEDULE = {"oneOf": [
    obj({"cronjob": JOB_CRON, **dict.fromkeys(LIFECYCLE, ABSENT)}, ["cronjob"]),
    {"anyOf": [obj({"cronjob": ABSENT, **{other: obj(JOB_COMMAND) for other in LIFECYCLE}}, [event])
               for event in LIFECYCLE]},
], "example": {"cronjob": {"scheduled_at": "0 3 * * *"}}}
HELM_REPOSITORY_ID = "5d7f9b1d-3f5a-4c7e-9b1d-3f5a7c9e1b3d"
HELM_GIT_SOURCE = obj({"url": GIT_URL, "branch": s("main", minLength=1, maxLength=255),
                       "root_path": s("/charts/ingress", maxLength=255), "git_token_id": uuid()}, ["url"])
HELM_CHART = {"chart_name": s("ingress-nginx", minLength=1, maxLength=255),
              "chart_version": s("4.11.3", minLength=1, maxLength=64)}
# the Helm repository's id as `repository_id`, or as `repository` (the platform's other name for it)
HELM_REPOSITORY_IDS = {"repository_id": uuid(HELM_REPOSITORY_ID), "repository": uuid(HELM_REPOSITORY_ID)}
HELM_REPOSITORY_SOURCE = {"anyOf": [obj({**HELM_REPOSITORY_IDS, **HELM_CHART}, [name, "chart_name", "chart_version"])
                                    for name in HELM_REPOSITORY_IDS]}
HELM_SOURCE_REQUEST = one_of(git_repository=HELM_GIT_SOURCE, helm_repository=HELM_REPOSITORY_SOURCE)
HELM_SOURCE = one_of(git_repository=GIT_REPOSITORY,
                     helm_repository=obj({"repository_id": uuid(HELM_REPOSITORY_ID), "chart_name": s("ingress-nginx"),
                                          "chart_version": s("4.11.3")},
                                         ["repository_id", "chart_name", "chart_version"]))
# ---- Terraform services: the platform's payload
TF_ENGINES = ["TERRAFORM", "OPEN_TOFU"]
TF_VARIABLES_SOURCE_REQUEST = obj({
    "tf_var_file_paths": arr(s("env/production.tfvars", minLength=1, maxLength=1024), maxItems=100),
    "tf_vars": arr(obj({"key": s("region", minLength=1, maxLength=255), "value": s("eu-west-3", maxLength=65536),
                        "secret": boolean(False)}, ["key", "value"]), maxItems=200),
})
TF_VARIABLES_SOURCE = obj({
    "tf_var_file_paths": arr(s("env/production.tfvars")),
    "tf_vars": arr(obj({"key": s("region"), "value": s("eu-west-3", description="left out when secret"),
                        "secret": boolean(False)}, ["key", "secret"])),
}, ["tf_var_file_paths", "tf_vars"])
TF_BACKEND = one_of(kubernetes=obj({}), user_provided=obj({}))
TF_PROVIDER_VERSION = obj({"read_from_terraform_block": boolean(False),
                           "explicit_version": s("1.9.8", minLength=1, maxLength=32)})
TF_JOB_RESOURCES = obj({"cpu_milli": integer(500, minimum=10, maximum=64000),
                        "ram_mib": integer(512, minimum=16, maximum=262144),
                        "gpu": integer(0, minimum=0, maximum=16), "storage_gib": integer(1, minimum=1, maximum=1024)})
HELM_PAIRS = arr(arr(s("controller.replicaCount", maxLength=4096), minItems=2, maxItems=2,
                     example=["controller.replicaCount", "2"]), maxItems=200)
HELM_VALUES_OVERRIDE = obj({
    "set": HELM_PAIRS, "set_string": HELM_PAIRS, "set_json": HELM_PAIRS,
    "file": obj({
        "raw": obj({"values": arr(obj({"name": s("override.yaml", minLength=1, maxLength=255),
                                       "content": s("controller:\n  replicaCount: 2\n", maxLength=65536)},
                                      ["name", "content"]), maxItems=20)}, ["values"]),
        "git": obj({"git_repository": HELM_GIT_SOURCE, "paths": arr(s("values/production.yaml"), minItems=1)},
                   ["git_repository", "paths"]),
    }),
})
INTERPOLATION = nullable(boolean(False))
STATUS_DETAILS = obj({"action": enum(ACTIONS, "DEPLOY"), "status": enum(ACTION_STATUSES, "QUEUED"),
                      "sub_action": enum(["NONE"], "NONE")})
STEPS = obj(
    {
        "total_duration_sec": integer(12, minimum=0),
        "total_computing_duration_sec": integer(12, minimum=0),
        "details": arr(obj({"step_name": enum(STEP_NAMES, "REGISTRY_CREATE_REPOSITORY"),
                            "status": enum(STEP_STATUSES, "SUCCESS"),
                            "duration_sec": integer(1, minimum=0)})),
    }
)
SERVICE_IDENTIFIER = obj({"service_id": uuid(IDS["application"]), "service_type": enum(SERVICE_TYPES),
                          "name": s("web")})
COMMIT = obj(
    {
        "created_at": datetime(), "git_commit_id": s("4f0c2a9d1e7b3c5a8f6d2e4b1a3c5d7e9f0b2a4c"),
        "tag": s("v1.4.2"), "message": s("Fix checkout rounding"), "author_name": s("Dana Reyes"),
        "author_avatar_url": s("https://avatars.example.com/dana.png"),
        "commit_page_url": s("https://git.example.com/acme/storefront/commit/4f0c2a9d"),
    },
    ["created_at", "git_commit_id"],
)
REGISTRY_CONFIG_OUT = obj({k: s() for k in (
    "username", "region", "cloudb_access_key", "cloudb_project_id", "access_key_id", "role_arn",
    "cloude_tenant_id", "cloude_subscription_id", "cloude_application_id", "cloude_application_object_id")})
REGISTRY_CONFIG_IN_FIELDS = (
    "access_key_id", "secret_access_key", "region", "cloudb_access_key", "cloudb_secret_key",
    "cloudb_project_id", "json_credentials", "username", "password", "role_arn", "cloude_tenant_id",
    "cloude_subscription_id",
)
REGISTRY_REQUIRED_CONFIG = {
    "CLOUDA_CR": ["region", "access_key_id", "secret_access_key"],
    "CLOUDB_CR": ["region", "cloudb_access_key", "cloudb_secret_key"],
    "CLOUDC_ARTIFACT_REGISTRY": ["region", "json_credentials"],
}
REGISTRY_SECRET_CONFIG = ("secret_access_key", "cloudb_secret_key", "json_credentials", "password")


def registry_variant(kind):
    config = obj({k: s(minLength=1) for k in REGISTRY_CONFIG_IN_FIELDS}, REGISTRY_REQUIRED_CONFIG.get(kind, ()))
    url = (s(FIXED_REGISTRY_URLS[kind], enum=[FIXED_REGISTRY_URLS[kind]]) if kind in FIXED_REGISTRY_URLS
           else s("https://registry.acme.example", pattern="^https://", maxLength=2048))
    required = ["name", "kind"] + (["config"] if kind in REGISTRY_REQUIRED_CONFIG else [])
    if kind not in FIXED_REGISTRY_URLS:
        required.append("url")
    return obj({"name": NAME, "kind": enum([kind]), "description": DESCRIPTION, "url": url, "config": config},
               required)


REQUEST_REGISTRY_KINDS = [k for k in REGISTRY_KINDS if k != "CLOUDD_CR"]

# ---------------------------------------------------------------- schemas
SCHEMAS = {
    "Error": obj(
        {
            "status": integer(400), "error": s("Bad Request"),
            "message": s("body.name: 'name' is a required property"),
            "details": arr(obj({"location": s("body.name"), "message": s("'name' is a required property")},
                               ["location", "message"])),
        },
        ["status", "error", "message"],
    ),
    "Reference": REFERENCE,
    "Organization": obj({**BASE, "name": s("Acme"), "description": s("Acme Corporation"),
                         "plan": enum(PLANS, "BUSINESS"), "owner": uuid(IDS["user"])},
                        BASE_REQUIRED + ["name", "plan", "owner"]),
    # GET /organization: the caller's organization record, and `results`, the organizations the token sees
    "CurrentOrganization": obj({**BASE, "name": s("Acme"), "description": s("Acme Corporation"),
                                "plan": enum(PLANS, "BUSINESS"), "owner": uuid(IDS["user"]),
                                "results": arr(ref("Organization"))},
                               BASE_REQUIRED + ["name", "plan", "owner", "results"]),
    "ProjectRequest": obj({"name": NAME, "description": DESCRIPTION}, ["name"]),
    "Project": obj({**BASE, "name": NAME, "description": DESCRIPTION, "organization": REFERENCE,
                    "associated_environments_count": integer(2, minimum=0),
                    "associated_services_count": integer(6, minimum=0)},
                   BASE_REQUIRED + ["name", "organization", "associated_environments_count",
                                    "associated_services_count"]),
    "ProjectList": page_list("Project"),
    "EnvironmentRequest": obj(
        {"name": s("production", minLength=1, maxLength=255), "mode": enum(EDITABLE_MODES, "PRODUCTION"),
         "cluster_id": uuid(IDS["cluster"]), "cluster": uuid(IDS["cluster"])},
        ["name"],
    ),
    "EnvironmentEditRequest": obj({"name": s("production", minLength=1, maxLength=255),
                                   "mode": enum(EDITABLE_MODES, "PRODUCTION")}),
    "Environment": obj(
        {
            **BASE, "name": s("production"), "organization": REFERENCE, "project": REFERENCE,
            "cloud_provider": obj({"provider": s("CLOUDA"), "cluster": s("acme-prod-eu")}, ["provider", "cluster"]),
            "mode": enum(ENV_MODES, "PRODUCTION"), "cluster_id": uuid(IDS["cluster"]),
            "cluster_name": s("acme-prod-eu"), "last_updated_by": uuid(IDS["user"]),
        },
        BASE_REQUIRED + ["name", "organization", "project", "cloud_provider", "mode", "cluster_id"],
    ),
    "EnvironmentList": page_list("Environment"),
    "EnvironmentStatus": obj(
        {"id": uuid(IDS["environment"]), "state": enum(SERVICE_STATES, "DEPLOYED"),
         "last_deployment_date": datetime(), "last_deployment_state": enum(SERVICE_STATES),
         "deployment_request_id": uuid()},
        ["id", "state"],
    ),
    "DeploymentQueueItem": obj(
        {
            "identifier": obj({"deployment_request_id": uuid(), "environment_id": uuid(IDS["environment"])}),
            "auditing_data": obj({"triggered_by": s("mock-deploy-token"), "origin": enum(ORIGINS, "API")}),
            "trigger_action": enum(TRIGGER_ACTIONS, "DEPLOY"),
            "stages": arr(obj({
                "name": s("DEPLOY"), "status": enum(STAGE_STATUSES, "QUEUED"),
                "services": arr(obj({
                    "identifier": SERVICE_IDENTIFIER, "status": enum(SERVICE_STATES, "DEPLOYMENT_QUEUED"),
                    "icon_uri": s("app://platform-console/application"),
                    "details": obj({"job_type": enum(["CRON", "LIFECYCLE"], "CRON")}, ["job_type"]),
                })),
            })),
        }
    ),
    "DeploymentQueue": page_list("DeploymentQueueItem"),
    "DeploymentRuleRequest": obj({
        "auto_stop": boolean(False), "auto_deploy": boolean(True), "timezone": s("Europe/Paris", maxLength=64),
        "start_time": s("08:00", pattern="^([01][0-9]|2[0-3]):[0-5][0-9]$"),
        "stop_time": s("20:00", pattern="^([01][0-9]|2[0-3]):[0-5][0-9]$"),
        "weekdays": arr(enum(WEEKDAYS), uniqueItems=True),
    }),
    "DeploymentRule": obj(
        {**BASE, "environment": REFERENCE, "auto_stop": boolean(False), "auto_deploy": boolean(True),
         "timezone": s("Europe/Paris"), "start_time": s("08:00"), "stop_time": s("20:00"),
         "weekdays": arr(enum(WEEKDAYS))},
        BASE_REQUIRED + ["environment", "auto_stop", "auto_deploy", "timezone", "weekdays"],
    ),
    "ServiceStatus": obj(
        {
            "id": uuid(IDS["application"]), "state": enum(SERVICE_STATES, "DEPLOYED"),
            "service_deployment_status": enum(DEPLOYMENT_STATUSES, "UP_TO_DATE"),
            "is_part_last_deployment": boolean(True), "status_details": STATUS_DETAILS,
            "deployment_request_id": uuid(), "deployment_requests_count": integer(3, minimum=0),
            "last_deployment_date": datetime(), "steps": STEPS, "execution_id": s("a7c9e1b3-1"),
        },
        ["id", "state", "service_deployment_status"],
    ),
    "ServiceStatusList": page_list("ServiceStatus"),
    "DeployRequest": obj({"git_commit_id": s("4f0c2a9d1e7b3c5a8f6d2e4b1a3c5d7e9f0b2a4c", minLength=1,
                                             maxLength=64)}),
    "EmptyRequest": obj({}),
    "DeploymentRecord": obj(
        {
            "id": uuid(), "status": enum(["QUEUED"]), "application_id": uuid(IDS["application"]),
            "service_id": uuid(IDS["application"]), "created_at": datetime(),
            "state": enum(SERVICE_STATES, "DEPLOYMENT_QUEUED"),
            "service_deployment_status": enum(DEPLOYMENT_STATUSES, "OUT_OF_DATE"),
            "status_details": STATUS_DETAILS, "deployment_request_id": uuid(),
            "deployment_requests_count": integer(4, minimum=1), "is_part_last_deployment": boolean(True),
        },
        ["id", "status", "service_id", "created_at", "deployment_requests_count", "is_part_last_deployment"],
    ),
    "DeploymentHistoryItem": obj(
        {
            "identifier": obj({"name": s("web"), "service_id": uuid(IDS["application"]),
                               "service_type": enum(SERVICE_TYPES), "execution_id": s("a7c9e1b3-1"),
                               "deployment_request_id": uuid()}),
            "status": enum(SERVICE_STATES, "DEPLOYED"), "trigger_action": enum(TRIGGER_ACTIONS, "DEPLOY"),
            "auditing_data": obj({"created_at": datetime(), "updated_at": datetime(),
                                  "triggered_by": s("mock-deploy-token"), "origin": enum(ORIGINS, "API")}),
            "details": obj({"commit": COMMIT}, ["commit"]), "status_details": STATUS_DETAILS,
            "icon_uri": s("app://platform-console/application"), "total_duration": s("PT12S"),
        },
        ["identifier", "status"],
    ),
    "DeploymentHistory": page_list("DeploymentHistoryItem"),
    "DeploymentHistoryPage": paged("DeploymentHistoryItem"),
    "LogLine": obj({"id": uuid(), "created_at": datetime(), "message": s("Listening on :8080"),
                    "pod_name": s("web-7d9f8b6c4-x2k9p"), "version": s("4f0c2a9d")},
                   ["id", "created_at", "message"]),
    "LogList": page_list("LogLine"),
    # ------------------------------------------------------------ services
    "ApplicationRequest": obj(
        {"name": s("web", minLength=1, maxLength=255), "description": DESCRIPTION,
         "git_repository": GIT_REPOSITORY_REQUEST, "build_mode": enum(["DOCKER"]),
         "dockerfile_path": s("Dockerfile", maxLength=255), **RESOURCES, "ports": arr(PORT, maxItems=20),
         "healthchecks": obj({probe: obj({"path": s("/healthz", maxLength=1024),
                                          "port": integer(8080, minimum=1, maximum=65535)})
                              for probe in ("readiness_probe", "liveness_probe")}),
         "auto_deploy": boolean(True)},
        ["name", "git_repository"],
    ),
    "ContainerRequest": obj(
        {"name": s("worker", minLength=1, maxLength=255), "description": DESCRIPTION,
         **IMAGE_SOURCE["properties"], **RESOURCES, "ports": arr(PORT, maxItems=20),
         "arguments": arr(s("--verbose")), "entrypoint": nullable(s("/app/worker"))},
        ["name", "registry_id", "image_name", "tag"],
    ),
    "DatabaseRequest": {
        "oneOf": [
            obj({"name": s("orders-db", minLength=1, maxLength=255), "description": DESCRIPTION,
                 "type": enum([db_type]), "version": enum(versions, versions[-1]),
                 "mode": enum(["MANAGED", "CONTAINER"], "CONTAINER"),
                 "accessibility": enum(["PRIVATE", "PUBLIC"]),
                 "cpu": RESOURCES["cpu"], "memory": RESOURCES["memory"],
                 "storage": integer(10, minimum=1, maximum=65536, description="GiB")},
                ["name", "type", "version", "mode"])
            for db_type, versions in DATABASE_VERSIONS.items()
        ],
        "discriminator": {"propertyName": "type"},
    },
    "DatabaseEditRequest": obj({"name": s("orders-db", minLength=1, maxLength=255), "description": DESCRIPTION,
                                "accessibility": enum(["PRIVATE", "PUBLIC"]), "cpu": RESOURCES["cpu"],
                                "memory": RESOURCES["memory"],
                                "storage": integer(10, minimum=1, maximum=65536)}),
    "JobRequest": obj(
        {"name": s("nightly-report", minLength=1, maxLength=255), "description": DESCRIPTION,
         "source": JOB_SOURCE_REQUEST, "schedule": JOB_SCHEDULE, "cpu": RESOURCES["cpu"], "memory": RESOURCES["memory"],
         "max_nb_restart": integer(0, minimum=0, maximum=10),
         "max_duration_seconds": integer(300, minimum=1, maximum=86400), "auto_deploy": boolean(True)},
        ["name", "source", "schedule"],
    ),
    "HelmRequest": obj(
        {"name": s("ingress", minLength=1, maxLength=255), "description": DESCRIPTION,
         "source": HELM_SOURCE_REQUEST, "arguments": arr(s("--wait", maxLength=1024), maxItems=100),
         "allow_cluster_wide_resources": boolean(False), "values_override": HELM_VALUES_OVERRIDE,
         "timeout_sec": integer(600, minimum=1, maximum=7200), "auto_deploy": boolean(True)},
        ["name", "source"],
    ),
    "TerraformRequest": obj(
        {"name": s("infra", minLength=1, maxLength=255), "description": DESCRIPTION,
         "terraform_files_source": obj({"git_repository": HELM_GIT_SOURCE}, ["git_repository"]),
         "terraform_variables_source": TF_VARIABLES_SOURCE_REQUEST,
         "backend": TF_BACKEND, "engine": enum(TF_ENGINES), "provider_version": TF_PROVIDER_VERSION,
         "timeout_sec": integer(1800, minimum=1, maximum=86400), "job_resources": TF_JOB_RESOURCES,
         "use_cluster_credentials": boolean(False),
         "action_extra_arguments": {"type": "object", "additionalProperties": arr(s("-lock=false", maxLength=1024)),
                                    "example": {"apply": ["-lock=false"]}},
         "auto_deploy": boolean(True),
         # the mock's earlier flat fields, still accepted: git_repository, engine_version, tfvars_files
         "git_repository": GIT_REPOSITORY_REQUEST, "engine_version": s("1.9.8", maxLength=32),
         "tfvars_files": arr(s("env/production.tfvars"))},
        ["name"],
        anyOf=[{"type": "object", "required": ["terraform_files_source"]},
               {"type": "object", "required": ["git_repository"]}],
    ),
    # ------------------------------------------------------------ variables and secrets
    "VariableReference": obj({"id": uuid(), "key": s("DATABASE_URL"), "value": s("postgres://orders"),
                              "mount_path": s("/etc/app/config.json"), "scope": enum(SCOPES, "PROJECT"),
                              "variable_type": enum(VARIABLE_TYPES, "VALUE")},
                             ["id", "key", "value", "scope", "variable_type"]),
    "SecretReference": obj({"id": uuid(), "key": s("API_KEY"), "mount_path": s("/etc/app/key"),
                            "scope": enum(SCOPES, "PROJECT"), "variable_type": enum(VARIABLE_TYPES, "VALUE"),
                            "description": VARIABLE_DESCRIPTION, "enable_interpolation_in_file": INTERPOLATION},
                           ["id", "key", "scope", "variable_type", "description", "enable_interpolation_in_file"]),
    "VariableRequest": obj(
        {"key": s("DATABASE_URL", minLength=1, maxLength=255, pattern="^[A-Za-z_][A-Za-z0-9_.-]*$"),
         "value": s("postgres://orders.internal:5432/orders", maxLength=65536),
         "mount_path": nullable(s("/etc/app/config.json", pattern="^/", maxLength=1024)),
         "description": VARIABLE_DESCRIPTION, "enable_interpolation_in_file": INTERPOLATION},
        ["key", "value"],
    ),
    "VariableEditRequest": obj(
        {"key": s("DATABASE_URL", minLength=1, maxLength=255, pattern="^[A-Za-z_][A-Za-z0-9_.-]*$"),
         "value": s("postgres://orders.internal:5432/orders", maxLength=65536),
         "description": VARIABLE_DESCRIPTION, "enable_interpolation_in_file": INTERPOLATION},
        ["key", "value"],
    ),
    "OverrideRequest": obj(
        {"value": s("postgres://orders-staging.internal:5432/orders", maxLength=65536),
         "override_scope": enum(SCOPES, "APPLICATION"),
         "override_parent_id": uuid(IDS["application_generic_overrides"]),
         "description": VARIABLE_DESCRIPTION, "enable_interpolation_in_file": INTERPOLATION},
        ["value", "override_scope", "override_parent_id"],
    ),
    "AliasRequest": obj(
        {"key": s("DB_URL", minLength=1, maxLength=255, pattern="^[A-Za-z_][A-Za-z0-9_.-]*$"),
         "alias_scope": enum(SCOPES, "APPLICATION"), "alias_parent_id": uuid(IDS["application_variable_overrides"]),
         "description": VARIABLE_DESCRIPTION, "enable_interpolation_in_file": INTERPOLATION},
        ["key", "alias_scope", "alias_parent_id"],
    ),
    "ServiceOverrideRequest": obj(
        {"value": s("debug", maxLength=65536), "description": VARIABLE_DESCRIPTION,
         "enable_interpolation_in_file": INTERPOLATION},
        ["value"],
    ),
    "ServiceAliasRequest": obj(
        {"key": s("LOCAL_DB_URL", minLength=1, maxLength=255, pattern="^[A-Za-z_][A-Za-z0-9_.-]*$"),
         "description": VARIABLE_DESCRIPTION, "enable_interpolation_in_file": INTERPOLATION},
        ["key"],
    ),
    "Variable": obj(
        {
            "id": ro(uuid()), "created_at": ro(datetime()), "updated_at": ro(datetime()),
            "key": s("DATABASE_URL"), "value": nullable(s("postgres://orders.internal:5432/orders")),
            "scope": enum(SCOPES, "PROJECT"), "variable_type": enum(VARIABLE_TYPES, "VALUE"),
            "is_secret": boolean(False), "mount_path": s("/etc/app/config.json"),
            "overridden_variable": ref("VariableReference"), "aliased_variable": ref("VariableReference"),
            "service_id": uuid(IDS["application"]), "service_name": s("web"),
            "service_type": enum(SERVICE_TYPES), "owned_by": s("PLATFORM"),
            "description": VARIABLE_DESCRIPTION, "enable_interpolation_in_file": INTERPOLATION,
        },
        ["id", "created_at", "updated_at", "key", "value", "scope", "variable_type", "is_secret"],
    ),
    "VariableList": page_list("Variable"),
    "Secret": obj(
        {
            "id": ro(uuid()), "created_at": ro(datetime()), "updated_at": ro(datetime()), "key": s("API_KEY"),
            "scope": enum(SCOPES, "PROJECT"), "variable_type": enum(VARIABLE_TYPES, "VALUE"),
            "mount_path": s("/etc/app/key"), "overridden_secret": ref("SecretReference"),
            "aliased_secret": ref("SecretReference"), "service_id": uuid(IDS["application"]),
            "service_name": s("web"), "service_type": enum(SERVICE_TYPES),
            "owned_by": s("PLATFORM"), "description": VARIABLE_DESCRIPTION,
            "enable_interpolation_in_file": INTERPOLATION,
        },
        ["id", "created_at", "updated_at", "key", "scope", "variable_type"],
    ),
    "SecretList": page_list("Secret"),
    # ------------------------------------------------------------ organization-level resources
    "ContainerRegistryRequest": {
        "oneOf": [registry_variant(kind) for kind in REQUEST_REGISTRY_KINDS],
        "discriminator": {"propertyName": "kind"},
    },
    "ContainerRegistry": obj(
        {**BASE, "name": NAME, "kind": enum(REGISTRY_KINDS, "GENERIC_CR"), "description": DESCRIPTION,
         "url": s("https://registry.acme.example"),
         "cluster": obj({"id": uuid(IDS["cluster"]), "name": s("acme-prod-eu")}),
         "associated_services_count": integer(1, minimum=0), "config": REGISTRY_CONFIG_OUT},
        BASE_REQUIRED + ["name", "kind", "url", "associated_services_count", "config"],
    ),
    "ContainerRegistryList": page_list("ContainerRegistry"),
    "TfVarsRequest": obj(
        {"git_repository": obj({"url": GIT_URL, "provider": enum(["CODEHOST1", "CODEHOST2", "GENERIC"], "GENERIC"),
                                "branch": s("main", maxLength=255), "root_path": s("/", maxLength=255),
                                "git_token_id": uuid()}, ["url"]),
         "mode": obj({"type": enum(["AutoDiscover"])}, ["type"])},
        ["git_repository", "mode"],
    ),
    "TfVarsFile": obj({"source": s("env/production.tfvars"),
                       "variables": {"type": "object", "additionalProperties": {"type": "string"},
                                     "example": {"region": "eu-west-3"}}},
                      ["source", "variables"]),
    "TfVarsFileList": results("TfVarsFile"),
    "Cluster": obj(
        {**BASE, "name": s("acme-prod-eu"), "description": s("Production cluster"),
         "region": s("eu-west-3"), "cloud_provider": enum(CLOUD_PROVIDERS), "kubernetes": enum(["MANAGED"]),
         "version": s("1.31"), "is_default": boolean(True), "production": boolean(True),
         "status": enum(CLUSTER_STATES, "DEPLOYED")},
        BASE_REQUIRED + ["name", "region", "cloud_provider", "version", "status"],
    ),
    "ClusterList": page_list("Cluster"),
    "ClusterLockRequest": obj({"reason": s("Maintenance window", minLength=1, maxLength=1024),
                               "ttl_in_days": {"type": "number", "multipleOf": 1, "minimum": 1, "maximum": 365,
                                               "example": 2,
                                               "description": "whole days (5 or 5.0)"}},
                              ["reason"]),
    "ClusterLock": obj(
        {"reason": s("Maintenance window"), "ttl_in_days": integer(2), "cluster_id": uuid(IDS["cluster"]),
         "locked_at": datetime(), "owner_name": s("Dana Reyes")},
        ["reason", "cluster_id", "locked_at", "owner_name"],
    ),
    "ClusterStatus": obj(
        {"cluster_id": uuid(IDS["cluster"]), "status": enum(CLUSTER_STATES, "DEPLOYED"), "is_deployed": boolean(True),
         "next_k8s_available_version": s("1.32"), "last_execution_id": s("c1a5e7d9-3"),
         "cluster_lock": ref("ClusterLock"), "last_deployment_date": datetime(),
         "reason": s("Kubernetes upgrade from 1.31 to 1.32 requested by mock-deploy-token")},
        ["cluster_id", "status", "is_deployed", "reason"],
    ),
    "LabelsGroupRequest": obj(
        {"name": s("cost-center", minLength=1, maxLength=255),
         "labels": arr(obj({"key": s("team", minLength=1, maxLength=63), "value": s("checkout", maxLength=63),
                            "propagate_to_cloud_provider": boolean(True)}, ["key", "value"]), maxItems=50)},
        ["name", "labels"],
    ),
    "LabelsGroup": obj(
        {**BASE, "name": s("cost-center"),
         "labels": arr(obj({"key": s("team"), "value": s("checkout"), "propagate_to_cloud_provider": boolean(True)},
                           ["key", "value", "propagate_to_cloud_provider"])),
         "associated_items_count": integer(0, minimum=0)},
        BASE_REQUIRED + ["name", "labels", "associated_items_count"],
    ),
    "LabelsGroupList": page_list("LabelsGroup"),
    "CredentialsRequest": obj(
        {"name": s("ci-deployer", minLength=1, maxLength=255),
         "access_key_id": s("AKIAMOCKEXAMPLE00001", minLength=1, maxLength=128),
         "secret_access_key": s("example-secret", minLength=1, maxLength=256, writeOnly=True),
         "role_arn": s("arn:clouda:iam::123456789012:role/deployer", minLength=1, maxLength=2048)},
        ["name"],
    ),
    "CredentialsEditRequest": obj(
        {"name": s("ci-deployer", minLength=1, maxLength=255),
         "role_arn": s("arn:clouda:iam::123456789012:role/deployer", minLength=1, maxLength=2048)},
        ["name", "role_arn"],
    ),
    "Credentials": obj({**BASE, "name": s("ci-deployer"), "access_key_id": s("AKIAMOCKEXAMPLE00001"),
                        "role_arn": s("arn:clouda:iam::123456789012:role/deployer"),
                        "object_type": enum(["AWS"])},
                       BASE_REQUIRED + ["name", "object_type"]),
    "CredentialsList": page_list("Credentials"),
    "WebhookRequest": obj(
        {"target_url": s("https://hooks.acme.example/deployments", pattern=WEBHOOK_TARGET, maxLength=2048,
                         description="http(s)://host[:port][/path]: a host name, an IPv4 address or an [IPv6] one, "
                                     "a port of 1-65535, no credentials; link-local and cloud metadata addresses are "
                                     "refused"),
         "events": arr(enum(WEBHOOK_EVENTS), minItems=1, uniqueItems=True), "enabled": boolean(True),
         "description": s("Deployment notifications for the on-call channel", maxLength=1024),
         "target_secret": s("whsec-example", minLength=1, maxLength=256, writeOnly=True)},
        ["target_url", "events"],
    ),
    "Webhook": obj(
        {**BASE, "organization": REFERENCE, "target_url": s("https://hooks.acme.example/deployments"),
         "events": arr(enum(WEBHOOK_EVENTS)), "enabled": boolean(True), "description": s("On-call notifications"),
         "kind": enum(["STANDARD"]), "target_secret_set": boolean(True)},
        BASE_REQUIRED + ["target_url", "events", "enabled", "kind", "target_secret_set"],
    ),
    "WebhookList": page_list("Webhook"),
    "CommitList": page_list("Commit"),
    "Commit": COMMIT,
    "DatabaseBackup": obj({**BASE, "name": s("orders-db-2026-11-20"), "message": s("Daily backup"),
                           "status": ref("ServiceStatus")}, BASE_REQUIRED + ["name", "status"]),
    "DatabaseBackupPage": paged("DatabaseBackup"),
    "CustomDomainRequest": obj(
        {"domain": s("shop.acme.example", minLength=1, maxLength=253,
                     pattern="^([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\\.)+[A-Za-z]{2,63}$"),
         "generate_certificate": boolean(True), "use_cdn": boolean(False)},
        ["domain"],
    ),
    "CustomDomain": obj(
        {**BASE, "domain": s("shop.acme.example"), "generate_certificate": boolean(True), "use_cdn": boolean(False),
         "validation_domain": s("f6a8c0e2.validation.platform.example"),
         "status": enum(["VALIDATION_PENDING"])},
        BASE_REQUIRED + ["domain", "generate_certificate", "use_cdn", "validation_domain", "status"],
    ),
    "CustomDomainList": page_list("CustomDomain"),
}
