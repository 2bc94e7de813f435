"""Create the fixtures' records through the handlers, as API calls would."""

from ..auth import Token
from ..fixtures import NESTED
from ..runtime import Context
from ..store import Entry
from . import HANDLERS
from .common import optional
from .deployments import add_backups
from ..deployments import repository_of
from .services import commits_of

SERVICES = {"applications": "Application", "containers": "Container", "databases": "Database", "jobs": "Job",
            "helms": "Helm", "terraforms": "Terraform"}
LEVEL_PARAMS = {"Project": "projectId", "Environment": "environmentId", "Application": "app_id",
                "Container": "containerId", "Job": "jobId", "Helm": "helmId", "Terraform": "terraformId"}
ORG_RECORDS = (("container_registries", "createContainerRegistry"), ("credentials", "createAwsCredentials"),
               ("labels_groups", "createLabelsGroup"))


class Loader:
    def __init__(self, rt):
        self.rt = rt
        self.started = rt.clock.now()
        self.now = self.started - 7 * 86400     # fixtures were created a week before start-up
        self.deployed = []

    def call(self, org, operation, params, body):
        ident = body.get("id")
        clean = {k: v for k, v in body.items() if k not in NESTED}
        if ident:
            self.rt.fake.pin(ident)
        token = Token(name="fixtures", value="", organization=org, scopes=["Admin"])
        return HANDLERS[operation](Context(self.rt, org, token, params, {}, clean, self.now))

    def load(self, organizations):
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
            for key, operation in ORG_RECORDS:
                for item in org.get(key, []):
                    self.call(oid, operation, {"organizationId": oid}, item)
            for project in org.get("projects", []):
                self.project(oid, project)
            for item in org.get("webhooks", []):
                self.call(oid, "createWebhook", {"org_id": oid}, item)
        self.finish_deployments()

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
                self.call(org, f"create{level}{word}", {LEVEL_PARAMS[level]: owner_id}, item)

    def finish_deployments(self):
        """Services marked `deployed` start DEPLOYED: their first deploy ran an hour before start-up."""
        rt = self.rt
        earlier = self.started - 3600
        for entry in self.deployed:
            ctx = Context(rt, entry.org, Token(name="fixtures", value="", organization=entry.org, scopes=["Admin"]),
                          {}, {}, {}, earlier)
            commit = commits_of(rt, entry)[0] if repository_of(entry.data) else None
            rt.deployments.start(ctx, entry, "DEPLOY", commit)
        rt.lifecycle.pump(self.started)
