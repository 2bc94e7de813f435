"""The operation table of the API document: one row per operation.

A row is `Op(method, path, operation_id, scope, status, response, request, ...)`.
`scope` is the token scope the operation needs (read, write or deploy, see world/auth.py);
`status` the success status (docs/decisions.md, "Status codes": 200 read, 201 create, 202 work that
goes on after the reply, 204 delete). Service kinds and variable levels are rows
generated from small tables so that every kind gets the same operations.
"""

import re
from dataclasses import dataclass, field

from mockserver.core.kinds import BY_PATH, SERVICE_KINDS, WITH_VARIABLES
from mockserver.document.ids import IDS

PATH_PARAM = re.compile(r"{(\w+)}")


@dataclass
class Op:
    method: str
    path: str
    operation_id: str
    scope: str
    status: int
    response: str | None
    request: str | None = None
    body_required: bool = True
    tag: str = ""
    summary: str = ""
    query: list = field(default_factory=list)
    links: dict = field(default_factory=dict)


EDIT_REQUESTS = {"database": "DatabaseEditRequest"}
# Path parameter names the spec gives for particular operations (kept as the spec writes them).
SPEC_PARAM_NAMES = {
    ("application", "deploy"): "app_id", ("application", "status"): "app_id",
    ("application", "log"): "app_id", ("application", "environmentVariable"): "app_id",
    ("application", "secret"): "app_id", ("database", "deploy"): "db_id",
}
ACTIONS = ("deploy", "redeploy", "stop", "restart")
# links from a service's create to the operations only its kind has
EXTRA_LINKS = {
    "application": (("GetApplicationLogs", "getApplicationLogs", "app_id"),),
    "database": (("UninstallDatabase", "uninstallDatabase", "databaseId"),
                 ("ListDatabaseBackups", "listDatabaseBackups", "databaseId")),
    "job": (("ListJobCommits", "listJobCommits", "jobId"),),
    "helm": (("CreateHelmCustomDomain", "createHelmCustomDomain", "helmId"),
             ("ListHelmCustomDomains", "listHelmCustomDomains", "helmId"),
             ("ListHelmDeploymentHistoryV2", "listHelmDeploymentHistoryV2", "helmId")),
}

PARAM_EXAMPLES = {
    "org_id": "organization", "organizationId": "organization", "project_id": "project", "projectId": "project",
    "env_id": "environment", "environmentId": "environment", "app_id": "application",
    "applicationId": "application", "containerId": "container", "db_id": "database", "databaseId": "database",
    "jobId": "job", "helmId": "helm", "terraformId": "terraform", "clusterId": "cluster",
    "containerRegistryId": "registry", "labelsGroupId": "labels_group", "credentialsId": "credentials",
    "webhookId": "webhook", "variableId": "variable", "environmentVariableId": "variable", "secretId": "secret",
    "customDomainId": "custom_domain",
}

# Operations whose examples act on records of their own (fixtures/targets.yaml, ids.py), one key of
# IDS per path parameter in order. Contract testers send creates and edits first, then reads, then
# deletes (in path order, each also deleting every record of its kind an earlier request path named), so:
# what an example stops or upgrades is nothing another example uses; what a delete example removes,
# and every parent of it, is named by no other example; creates go to an environment where their
# example names are free; overrides and aliases go to services that own nothing (docs/decisions.md,
# "Contract testers and the examples").
VARIABLE_LEVELS = ("project", "environment", *(kind.path for kind in WITH_VARIABLES))


def example_targets():
    out = {"deleteProject": ("project_delete",), "deleteEnvironment": ("environment_delete",),
           "createEnvironment": ("examples_project",), "upgradeCluster": ("cluster_upgrade",),
           "unlockCluster": ("cluster_locked",),
           "deleteContainerRegistry": ("organization", "registry_delete"),
           "deleteLabelsGroup": ("organization", "labels_group_delete"),
           "deleteAwsCredentials": ("organization", "credentials_delete"),
           "deleteWebhook": ("organization", "webhook_delete"),
           "uninstallDatabase": ("database_uninstall",),
           "createHelmCustomDomain": ("helm_variables",), "getHelmCustomDomain": ("helm_variables", "custom_domain"),
           "deleteHelmCustomDomain": ("custom_domain_owner", "custom_domain_delete")}
    for kind, title in ((row.path, row.title) for row in SERVICE_KINDS):
        out[f"create{title}"] = ("examples_environment",)
        out[f"delete{title}"] = (f"{kind}_delete",)
        for action in ACTIONS[1:]:
            out[f"{action}{title}"] = (f"{kind}_{action}",)
    for level in VARIABLE_LEVELS:
        title = level.capitalize()
        owner = {"project": "examples_project", "environment": "examples_environment"}.get(
            level, f"{level}_variables")
        for word in ("Variable", "Secret"):
            out[f"get{title}{word}"] = out[f"edit{title}{word}"] = (owner, f"{level}_{word.lower()}")
            out[f"delete{title}{word}"] = (f"{level}_{word.lower()}_owner", f"{level}_{word.lower()}_delete")
            if level in BY_PATH:       # a service's override and alias of a record of the examples project
                place = f"{level}_{word.lower()}_overrides"
                out[f"override{title}{word}"] = out[f"alias{title}{word}"] = (place, f"project_{word.lower()}")
    for word in ("Variable", "Secret"):
        out[f"create{word}Override"] = out[f"create{word}Alias"] = (f"project_{word.lower()}",)
    return out


EXAMPLE_TARGETS = example_targets()
# Whole request bodies where the schema's own examples would name a record that exists (a 409) or
# pick a registry kind that needs cloud credentials.
REQUEST_EXAMPLES = {
    "createProject": {"name": "checkout", "description": "Checkout and payments"},
    "createContainerRegistry": {"name": "acme-mirror", "kind": "GENERIC_CR", "url": "https://mirror.acme.example",
                                "description": "Pull-through mirror",
                                "config": {"username": "mirror-bot", "password": "example-password"}},
    "editContainerRegistry": {"name": "acme-hub", "kind": "PUBLICHUB_CR", "description": "Public images",
                              "config": {"username": "acme-bot", "password": "example-password"}},
    "createLabelsGroup": {"name": "ownership", "labels": [{"key": "owner", "value": "platform-team",
                                                            "propagate_to_cloud_provider": True}]},
    "createAwsCredentials": {"name": "release-deployer", "access_key_id": "AKIAMOCKEXAMPLE00003",
                             "secret_access_key": "example-secret",
                             "role_arn": "arn:clouda:iam::123456789012:role/release"},
    # edits keep the key of the record they edit (a create example may have taken DATABASE_URL beside it)
    **{f"edit{level.capitalize()}Variable": {"key": "EXAMPLES_MODE", "value": "debug",
                                             "description": "Verbosity of the examples"}
       for level in VARIABLE_LEVELS},
    **{f"edit{level.capitalize()}Secret": {"key": "EXAMPLES_TOKEN", "value": "rotated-token"}
       for level in VARIABLE_LEVELS},
    # overrides at a service that owns nothing (so no record of the place conflicts, whatever variable a tool
    # pairs it with); aliases at the service the per-service alias examples use, under a key of their own
    "createVariableOverride": {"value": "debug", "override_scope": "APPLICATION",
                               "override_parent_id": IDS["application_generic_overrides"]},
    "createSecretOverride": {"value": "rotated-token", "override_scope": "APPLICATION",
                             "override_parent_id": IDS["application_generic_overrides"]},
    "createVariableAlias": {"key": "EXAMPLES_MODE_ALIAS", "alias_scope": "APPLICATION",
                            "alias_parent_id": IDS["application_variable_overrides"]},
    "createSecretAlias": {"key": "EXAMPLES_TOKEN_ALIAS", "alias_scope": "APPLICATION",
                          "alias_parent_id": IDS["application_secret_overrides"]},
}


def q(name, schema, description):
    return {"name": name, "in": "query", "required": False, "schema": schema, "description": description}


# `page` and `page_size` on every list (docs/guide/api-behaviour.md, Pagination). The example asks for a first
# page of 2: the records the delete examples remove come after it (fixtures/targets.yaml), out of reach of a tool that
# deletes whatever it saw listed.
PAGE_QUERY = [q("page", {"type": "integer", "minimum": 1, "maximum": 1000000, "example": 1},
                "Page number, from 1; without page and page_size the whole list is returned"),
              q("page_size", {"type": "integer", "minimum": 1, "maximum": 100, "example": 2},
                "Records per page (20 when only page is given)")]


def link(operation_id, **parameters):
    return {"operationId": operation_id, "parameters": parameters}


def crud(tag, title, plural, collection, item, param, request, edit_request=None, response=None, list_schema=None,
         create_links=None):
    """create/list on `collection`, get/edit/delete on `item` for a simple record."""
    response = response or title
    # parameters the item path shares with the collection path come from the create request
    shared = {name: f"$request.path.{name}" for name in PATH_PARAM.findall(collection) if f"{{{name}}}" in item}
    read = {f"Get{title}": link(f"get{title}", **shared, **{param: "$response.body#/id"}),
            f"Delete{title}": link(f"delete{title}", **shared, **{param: "$response.body#/id"})}
    if edit_request:
        read[f"Edit{title}"] = link(f"edit{title}", **shared, **{param: "$response.body#/id"})
    read.update(create_links or {})
    rows = [
        Op("POST", collection, f"create{title}", "write", 201, response, request, tag=tag,
           summary=f"Create a {title.lower()}", links=read),
        Op("GET", collection, f"list{plural}", "read", 200, list_schema or f"{response}List", tag=tag,
           summary=f"List {plural.lower()}", query=PAGE_QUERY),
        Op("GET", item, f"get{title}", "read", 200, response, tag=tag, summary=f"Get a {title.lower()}"),
        Op("DELETE", item, f"delete{title}", "write", 204, None, tag=tag, summary=f"Delete a {title.lower()}"),
    ]
    if edit_request:
        rows.append(Op("PUT", item, f"edit{title}", "write", 200, response, edit_request, tag=tag,
                       summary=f"Edit a {title.lower()}"))
    return rows


def variable_ops(level, title, base, param, tag):
    """Variables and secrets owned by a project, an environment or a service."""
    rows = []
    for noun, plural, schema, one in (("environmentVariable", "Variables", "Variable", "variableId"),
                                     ("secret", "Secrets", "Secret", "secretId")):
        word = schema
        owner = {ITEM_PARAM.get(param, param): f"$request.path.{param}", one: "$response.body#/id"}
        create_links = {
            f"Get{title}{word}": link(f"get{title}{word}", **owner),
            f"Edit{title}{word}": link(f"edit{title}{word}", **owner),
            f"Delete{title}{word}": link(f"delete{title}{word}", **owner),
            f"Override{word}": link(f"create{word}Override", **{one: "$response.body#/id"}),
            f"Alias{word}": link(f"create{word}Alias", **{one: "$response.body#/id"}),
        }
        collection = f"{base}/{noun}"
        rows += [
            Op("POST", collection, f"create{title}{word}", "write", 201, schema,
               "VariableRequest", tag=tag, summary=f"Add a {word.lower()} to the {level}", links=create_links),
            Op("GET", collection, f"list{title}{plural}", "read", 200, f"{schema}List", tag=tag,
               summary=f"List the {plural.lower()} the {level} sees", query=PAGE_QUERY),
        ]
        item_base = base.replace(f"{{{param}}}", f"{{{ITEM_PARAM.get(param, param)}}}")
        item = f"{item_base}/{noun}/{{{one}}}"
        rows += [
            Op("GET", item, f"get{title}{word}", "read", 200, schema, tag=tag, summary=f"Get a {word.lower()}"),
            Op("PUT", item, f"edit{title}{word}", "write", 200, schema, "VariableEditRequest", tag=tag,
               summary=f"Edit a {word.lower()}"),
            Op("DELETE", item, f"delete{title}{word}", "write", 204, None, tag=tag,
               summary=f"Delete a {word.lower()}"),
        ]
    return rows


# The spec names /application/{app_id}/environmentVariable; single items use the family's own name.
ITEM_PARAM = {"app_id": "applicationId"}


def service_ops(kind):
    row = BY_PATH[kind]
    tag, title, param, request = row.tag, row.title, row.param, row.request

    def p(suffix):                      # the spec's name of the parameter in that path, else the kind's
        return SPEC_PARAM_NAMES.get((kind, suffix), param)
    item = f"/{kind}/{{{param}}}"
    by_id = "$response.body#/id"
    create_links = {
        f"Get{title}": link(f"get{title}", **{param: by_id}),
        f"Delete{title}": link(f"delete{title}", **{param: by_id}),
        f"Edit{title}": link(f"edit{title}", **{param: by_id}),
        f"Get{title}Status": link(f"get{title}Status", **{p("status"): by_id}),
        f"Deploy{title}": link(f"deploy{title}", **{p("deploy"): by_id}),
    }
    for action in ACTIONS[1:]:
        create_links[f"{action.capitalize()}{title}"] = link(f"{action}{title}", **{p(action): by_id})
    create_links[f"List{title}DeploymentHistory"] = link(f"list{title}DeploymentHistory", **{param: by_id})
    create_links.update({name: link(op, **{arg: by_id}) for name, op, arg in EXTRA_LINKS.get(kind, ())})
    if row.has_variables:
        create_links[f"Create{title}Variable"] = link(f"create{title}Variable", **{p("environmentVariable"): by_id})
        create_links[f"Create{title}Secret"] = link(f"create{title}Secret", **{p("secret"): by_id})
    rows = [
        Op("POST", f"/environment/{{env_id}}/{kind}", f"create{title}", "write", 201, title, request, tag=tag,
           summary=f"Create a {title.lower()} in an environment", links=create_links),
        Op("GET", f"/environment/{{env_id}}/{kind}", f"list{title}s", "read", 200, f"{title}List", tag=tag,
           summary=f"List the {title.lower()}s of an environment", query=PAGE_QUERY),
        Op("GET", item, f"get{title}", "read", 200, title, tag=tag, summary=f"Get a {title.lower()}"),
        Op("PUT", item, f"edit{title}", "write", 200, title, EDIT_REQUESTS.get(kind, request), tag=tag,
           summary=f"Edit a {title.lower()}"),
        Op("DELETE", item, f"delete{title}", "write", 204, None, tag=tag, summary=f"Delete a {title.lower()}"),
        Op("GET", f"/{kind}/{{{p('status')}}}/status", f"get{title}Status", "read", 200, "ServiceStatus", tag=tag,
           summary=f"Deployment status of a {title.lower()}"),
        Op("GET", f"{item}/deploymentHistory", f"list{title}DeploymentHistory", "read", 200, "DeploymentHistory",
           tag=tag, summary="Every deployment of the service, newest first", query=PAGE_QUERY),
    ]
    # an action's reply names the service: on to its status, its history and the other actions
    by_service = "$response.body#/service_id"
    after_action = {f"Get{title}Status": link(f"get{title}Status", **{p("status"): by_service}),
                    f"List{title}DeploymentHistory": link(f"list{title}DeploymentHistory", **{param: by_service})}
    for action in ACTIONS:
        body = "DeployRequest" if (kind, action) == ("application", "deploy") else "EmptyRequest"
        links = {**after_action, **{f"{other.capitalize()}{title}": link(f"{other}{title}", **{p(other): by_service})
                                    for other in ACTIONS if other != action}}
        rows.append(Op("POST", f"/{kind}/{{{p(action)}}}/{action}", f"{action}{title}", "deploy", 202,
                       "DeploymentRecord", body, body_required=False, tag=tag,
                       summary=f"{action.capitalize()} a {title.lower()}", links=links))
    if row.has_variables:
        rows += variable_ops(title.lower(), title, f"/{kind}/{{{p('environmentVariable')}}}",
                             p("environmentVariable"), "Environment Variables")
        for noun, word, one in (("environmentVariable", "Variable", "variableId"), ("secret", "Secret", "secretId")):
            if (kind, noun) == ("container", "environmentVariable"):
                one = "environmentVariableId"      # the spec's name for this path
            rows.append(Op("POST", f"{item}/{noun}/{{{one}}}/override", f"override{title}{word}", "write", 201,
                           word, "ServiceOverrideRequest", tag="Environment Variables",
                           summary=f"Override a {word.lower()} for this {title.lower()}"))
            rows.append(Op("POST", f"{item}/{noun}/{{{one}}}/alias", f"alias{title}{word}", "write", 201,
                           word, "ServiceAliasRequest", tag="Environment Variables",
                           summary=f"Alias a {word.lower()} for this {title.lower()}"))
    return rows


def organization_ops():
    org = "/organization/{organizationId}"
    by_id = "$response.body#/id"
    return [
        Op("GET", f"{org}", "getOrganizationById", "read", 200, "Organization", tag="Organizations",
           summary="One organization the caller belongs to"),
        Op("GET", "/organization", "getOrganization", "read", 200, "CurrentOrganization", tag="Organizations",
           summary="The organization of the caller, and in `results` the organizations the token sees",
           links={"GetOrganizationById": link("getOrganizationById", organizationId=by_id),
                  "ListProjects": link("listProjects", org_id=by_id),
                  "CreateProject": link("createProject", org_id=by_id),
                  "ListClusters": link("listClusters", organizationId=by_id),
                  "ListContainerRegistries": link("listContainerRegistries", organizationId=by_id),
                  "ListWebhooks": link("listWebhooks", org_id=by_id),
                  "ListLabelsGroups": link("listLabelsGroups", organizationId=by_id)}),
        *crud("Projects", "Project", "Projects", "/organization/{org_id}/project", "/project/{projectId}",
              "projectId", "ProjectRequest", "ProjectRequest",
              create_links={"CreateEnvironment": link("createEnvironment", project_id=by_id),
                            "ListEnvironments": link("listEnvironments", project_id=by_id),
                            "EditProject": link("editProject", projectId=by_id),
                            "CreateProjectVariable": link("createProjectVariable", projectId=by_id),
                            "CreateProjectSecret": link("createProjectSecret", projectId=by_id)}),
        *crud("Environments", "Environment", "Environments", "/project/{project_id}/environment",
              "/environment/{environmentId}", "environmentId", "EnvironmentRequest", "EnvironmentEditRequest",
              create_links={**{f"Create{t}": link(f"create{t}", env_id=by_id)
                               for t in (row.title for row in SERVICE_KINDS)},
                            "EditEnvironment": link("editEnvironment", environmentId=by_id),
                            "GetEnvironmentDeploymentQueue": link("getEnvironmentDeploymentQueue",
                                                                  environmentId=by_id),
                            "GetEnvironmentDatabaseStatus": link("getEnvironmentDatabaseStatus", environmentId=by_id),
                            "CancelEnvironmentDeployment": link("cancelEnvironmentDeployment", environmentId=by_id),
                            "GetDeploymentRule": link("getDeploymentRule", environmentId=by_id),
                            "EditDeploymentRule": link("editDeploymentRule", environmentId=by_id),
                            "GetEnvironmentStatus": link("getEnvironmentStatus", environmentId=by_id),
                            "CreateEnvironmentVariable": link("createEnvironmentVariable", environmentId=by_id),
                            "CreateEnvironmentSecret": link("createEnvironmentSecret", environmentId=by_id)}),
        Op("GET", "/environment/{environmentId}/status", "getEnvironmentStatus", "read", 200, "EnvironmentStatus",
           tag="Environments", summary="Aggregated deployment state of an environment"),
        Op("GET", "/environment/{environmentId}/deploymentQueue", "getEnvironmentDeploymentQueue", "read", 200,
           "DeploymentQueue", tag="Environments", summary="Queued and running deployment requests",
           query=PAGE_QUERY),
        Op("GET", "/environment/{environmentId}/database/status", "getEnvironmentDatabaseStatus", "read", 200,
           "ServiceStatusList", tag="Environments", summary="Status of every database of the environment",
           query=PAGE_QUERY),
        Op("POST", "/environment/{environmentId}/cancelDeployment", "cancelEnvironmentDeployment", "deploy", 202,
           "EnvironmentStatus", "EmptyRequest", body_required=False, tag="Environments",
           summary="Cancel the running and queued deployment requests of an environment"),
        Op("GET", "/environment/{environmentId}/deploymentRule", "getDeploymentRule", "read", 200,
           "DeploymentRule", tag="Deployment Rules", summary="Deployment rule of an environment"),
        Op("PUT", "/environment/{environmentId}/deploymentRule", "editDeploymentRule", "write", 200,
           "DeploymentRule", "DeploymentRuleRequest", tag="Deployment Rules", summary="Edit the deployment rule"),
    ]


def cluster_and_registry_ops():
    """Clusters, container registries, Terraform discovery, labels, credentials and webhooks."""
    org = "/organization/{organizationId}"
    return [
        Op("GET", f"{org}/cluster", "listClusters", "read", 200, "ClusterList", tag="Clusters",
           summary="Clusters of the organization", query=PAGE_QUERY,
           links={name: link(op, clusterId="$response.body#/results/0/id") for name, op in (
               ("GetCluster", "getCluster"), ("GetClusterStatus", "getClusterStatus"),
               ("LockCluster", "lockCluster"), ("UnlockCluster", "unlockCluster"),
               ("UpgradeCluster", "upgradeCluster"))}),
        Op("GET", "/cluster/{clusterId}", "getCluster", "read", 200, "Cluster", tag="Clusters",
           summary="Get a cluster"),
        Op("GET", "/cluster/{clusterId}/status", "getClusterStatus", "read", 200, "ClusterStatus", tag="Clusters",
           summary="Status of a cluster"),
        Op("POST", "/cluster/{clusterId}/lock", "lockCluster", "write", 200, "ClusterLock", "ClusterLockRequest",
           tag="Clusters", summary="Lock a cluster (no upgrade while locked)"),
        Op("DELETE", "/cluster/{clusterId}/lock", "unlockCluster", "write", 204, None, tag="Clusters",
           summary="Remove the lock of a cluster"),
        Op("POST", "/cluster/{clusterId}/upgrade", "upgradeCluster", "deploy", 202, "ClusterStatus", "EmptyRequest",
           body_required=False, tag="Clusters", summary="Upgrade to the next Kubernetes version"),
        *crud("Container Registries", "ContainerRegistry", "ContainerRegistries", f"{org}/containerRegistry",
              f"{org}/containerRegistry/{{containerRegistryId}}", "containerRegistryId", "ContainerRegistryRequest",
              "ContainerRegistryRequest"),
        Op("POST", f"{org}/listTfVarsFilesFromGitRepo", "listTfVarsFilesFromGitRepo", "read", 200, "TfVarsFileList",
           "TfVarsRequest", tag="Terraform", summary="Discover the Terraform variables files of a repository"),
        *crud("Labels", "LabelsGroup", "LabelsGroups", f"{org}/labelsGroups", f"{org}/labelsGroups/{{labelsGroupId}}",
              "labelsGroupId", "LabelsGroupRequest", "LabelsGroupRequest"),
        *crud("Cloud Credentials", "AwsCredentials", "AwsCredentials", f"{org}/aws/credentials",
              f"{org}/aws/credentials/{{credentialsId}}", "credentialsId", "CredentialsRequest",
              "CredentialsEditRequest", response="Credentials"),
        *crud("Webhooks", "Webhook", "Webhooks", "/organization/{org_id}/webhook",
              "/organization/{org_id}/webhook/{webhookId}", "webhookId", "WebhookRequest", "WebhookRequest"),
    ]


def misc_service_ops():
    page = {"type": "integer", "minimum": 1, "maximum": 100000, "example": 1}
    return [
        Op("GET", "/application/{app_id}/log", "getApplicationLogs", "read", 200, "LogList", tag="Applications",
           summary="Build and runtime log lines, newest last",
           query=[q("tail", {"type": "integer", "minimum": 1, "maximum": 10000, "default": 1000, "example": 100},
                    "Number of last lines to return"), *PAGE_QUERY]),
        Op("POST", "/database/{databaseId}/uninstall", "uninstallDatabase", "deploy", 202, "ServiceStatus",
           "EmptyRequest", body_required=False, tag="Databases",
           summary="Delete the compute and data of the database and keep its configuration"),
        Op("GET", "/database/{databaseId}/backup", "listDatabaseBackups", "read", 200, "DatabaseBackupPage",
           tag="Databases", summary="Backups of a database",
           query=[q("startId", {"type": "string", "format": "uuid"}, "Return the backups after this one"),
                  q("page", page, "Page number, from 1"),
                  q("page_size", {"type": "integer", "minimum": 1, "maximum": 100, "default": 20, "example": 20},
                    "Backups per page")]),
        Op("GET", "/helm/{helmId}/deploymentHistoryV2", "listHelmDeploymentHistoryV2", "read", 200,
           "DeploymentHistoryPage", tag="Helm", summary="Paged deployment history of a Helm service",
           query=[q("pageSize", {"type": "number", "multipleOf": 1, "nullable": True, "minimum": 1, "maximum": 100,
                                 "default": 20, "example": 20},
                    "Deployments per page: a whole number (5 or 5.0); empty or absent means 20"),
                  q("page", page, "Page number, from 1")]),
        *crud("Helm", "HelmCustomDomain", "HelmCustomDomains", "/helm/{helmId}/customDomain",
              "/helm/{helmId}/customDomain/{customDomainId}", "customDomainId", "CustomDomainRequest",
              response="CustomDomain"),
        Op("GET", "/job/{jobId}/commit", "listJobCommits", "read", 200, "CommitList", tag="Jobs",
           summary="The last 100 commits of the repository of the job",
           query=[q("startId", {"type": "string", "minLength": 1, "maxLength": 64},
                    "Return the commits after (older than) this git commit id"),
                  q("gitCommitId", {"type": "string", "minLength": 1, "maxLength": 64},
                    "Return only this commit"), *PAGE_QUERY]),
        *[Op("POST", f"/{noun}/{{{one}}}/{verb}", f"create{word}{verb.capitalize()}", "write", 201, word,
             "OverrideRequest" if verb == "override" else "AliasRequest", tag="Environment Variables",
             summary=f"Create an {verb} of a {word.lower()} at a lower scope")
          for noun, word, one in (("variable", "Variable", "variableId"), ("secret", "Secret", "secretId"))
          for verb in ("override", "alias")],
    ]


def all_operations():
    rows = organization_ops() + cluster_and_registry_ops()
    rows += variable_ops("project", "Project", "/project/{projectId}", "projectId", "Environment Variables")
    rows += variable_ops("environment", "Environment", "/environment/{environmentId}", "environmentId",
                         "Environment Variables")
    for row in SERVICE_KINDS:
        rows += service_ops(row.path)
    rows += misc_service_ops()
    return rows
