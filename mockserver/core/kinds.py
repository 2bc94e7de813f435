"""The six service kinds of an environment, one row each: the one table every module reads for what differs
between them (their words, their path parameter, the plan their deploys follow)."""

from dataclasses import dataclass


@dataclass(frozen=True)
class ServiceKind:
    path: str               # application: the word of its paths (/environment/{id}/application, /application/{id})
    type: str               # APPLICATION: its service_type, and the scope of its own variables
    title: str              # Application: the word of its operation ids and schemas (createApplication, ...Request)
    plural: str             # applications: its key in a fixtures file
    tag: str                # Applications: its tag in the API document
    param: str              # applicationId: the path parameter naming one record
    source: str             # git, image or chart: the plan its deploys follow (world/lifecycle.py PLANS)
    has_variables: bool     # whether it has variables and secrets of its own
    spec_params: tuple = ()  # other names the spec gives that parameter in some paths (app_id, db_id)

    @property
    def request(self) -> str:
        """The schema of its create and edit payload."""
        return f"{self.title}Request"

    @property
    def params(self) -> tuple:
        """Every name a path parameter naming one of its records has."""
        return (self.param, *self.spec_params)


SERVICE_KINDS = (
    ServiceKind("application", "APPLICATION", "Application", "applications", "Applications", "applicationId", "git",
                True, ("app_id",)),
    ServiceKind("container", "CONTAINER", "Container", "containers", "Containers", "containerId", "image", True),
    ServiceKind("database", "DATABASE", "Database", "databases", "Databases", "databaseId", "chart", False,
                ("db_id",)),
    ServiceKind("job", "JOB", "Job", "jobs", "Jobs", "jobId", "git", True),
    ServiceKind("helm", "HELM", "Helm", "helms", "Helm", "helmId", "chart", True),
    ServiceKind("terraform", "TERRAFORM", "Terraform", "terraforms", "Terraform", "terraformId", "chart", True),
)
BY_PATH = {kind.path: kind for kind in SERVICE_KINDS}
BY_TYPE = {kind.type: kind for kind in SERVICE_KINDS}
BY_PLURAL = {kind.plural: kind for kind in SERVICE_KINDS}
BY_TITLE = {kind.title: kind for kind in SERVICE_KINDS}
SERVICE_TYPES = tuple(kind.type for kind in SERVICE_KINDS)
WITH_VARIABLES = tuple(kind for kind in SERVICE_KINDS if kind.has_variables)
