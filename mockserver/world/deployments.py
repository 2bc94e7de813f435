"""Deployments of services and clusters, read from the lifecycle at the clock's time.

This module turns `lifecycle.DeploymentRequest`s into what the API shows (service status, the
environment's queue, deployment history, logs, cluster status) and applies the
durable effects of a request's end (deployed commit, cluster version, data removed by
an uninstall). Starting an action checks the conflicts the platform refuses (409).
"""

import math

from mockserver.core.clock import iso
from mockserver.core.errors import conflict
from mockserver.core.kinds import SERVICE_KINDS
from mockserver.world.lifecycle import ACTIONS, QUEUE_DELAY, DeploymentRequest, plan

K8S_VERSIONS = ["1.28", "1.29", "1.30", "1.31", "1.32", "1.33", "1.34"]
ICONS = {kind.type: kind.path for kind in SERVICE_KINDS}     # service_type -> the console's icon of it
RUNNING = {"DEPLOYED", "RESTARTED"}


def repository_of(data):
    """The git repository a service builds from (applications, Terraform, jobs and Helm from git), or None."""
    source = data.get("source") or {}
    return data.get("git_repository") or (source.get("docker") or {}).get("git_repository") or \
        source.get("git_repository")


def next_version(version):
    if version in K8S_VERSIONS and K8S_VERSIONS.index(version) + 1 < len(K8S_VERSIONS):
        return K8S_VERSIONS[K8S_VERSIONS.index(version) + 1]
    return None


def cluster_lock(entry, now):
    """The cluster's lock as the API shows it, or None once removed or past its ttl."""
    lock = entry.meta.get("lock")
    if lock and lock["expires"] is not None and now >= lock["expires"]:
        entry.meta["lock"] = lock = None
    return lock["public"] if lock else None


def optional(data, name, value):
    """Set a field the platform leaves out rather than send as null (as handlers.common.optional)."""
    if value is None:
        data.pop(name, None)
    else:
        data[name] = value


def _duration(seconds):
    return f"PT{int(seconds)}S"


class Deployments:
    def __init__(self, rt):
        self.rt = rt                           # a weak reference to the world (see Runtime)

    def __getstate__(self):
        return {**self.__dict__, "rt": None}

    # ------------------------------------------------------------ starting actions
    def start(self, ctx, entry, action, commit=None):
        """Queue an action on a service; 409 when it conflicts with the service's state."""
        lifecycle, now = self.rt.lifecycle, ctx.now
        if lifecycle.busy(entry.id, now):
            current = lifecycle.latest(entry.id)
            raise conflict(f"{entry.meta['type'].lower()} {entry.id} already has a {current.action} in progress "
                           f"(deployment request {current.id})")
        state = self.status(entry, now)["state"]
        if action == "STOP" and state not in RUNNING:
            raise conflict(f"cannot stop {entry.meta['type'].lower()} {entry.id}: it is {state}, not running")
        if action == "RESTART" and state not in RUNNING:
            raise conflict(f"cannot restart {entry.meta['type'].lower()} {entry.id}: it is {state}, not running")
        source = "image" if "image" in (entry.data.get("source") or {}) else None
        request = self._request(ctx, entry.id, entry.parent, action, entry.meta["type"], entry.data["name"], source)
        request.commit = commit
        request.rev = self.config_rev(entry)
        return lifecycle.submit(request, now, QUEUE_DELAY / self.rt.settings.speed)

    def start_cluster_upgrade(self, ctx, entry):
        request = self._request(ctx, entry.id, entry.id, "UPGRADE", None, entry.data["name"])
        return self.rt.lifecycle.submit(request, ctx.now, QUEUE_DELAY / self.rt.settings.speed)

    def _request(self, ctx, target, queue, action, service_type, name, source=None):
        effects = ctx.effects.get("deployment", {})
        steps = plan(action, service_type, self.rt.settings.speed, effects.get("durations"), source)
        request = DeploymentRequest(id=self.rt.new_id(), target=target, org=ctx.org, queue=queue, action=action,
                          service_type=service_type, name=name, created_at=ctx.now, steps=steps, call_id=ctx.call_id,
                          triggered_by=ctx.token.name if ctx.token else "fixtures")
        if effects.get("reads"):
            request.by_reads = ("reads", effects["reads"])
        elif effects.get("reads_per_step"):
            request.by_reads = ("per_step", effects["reads_per_step"])
        # a step this action's plan has not got (a stop builds nothing, nor does a service of an image):
        # the rule's failure or stall is not for this action, which follows its plan
        request.stall_at = _step_index(steps, effects.get("stall"))
        if effects.get("fail_at"):
            request.fail_at = _step_index(steps, effects["fail_at"])
            request.fail_state = effects.get("state") if request.fail_at is not None else None
        elif effects.get("state"):
            request.fail_at, request.fail_state = len(steps) - 1, effects["state"]
        return request

    def target(self, params):
        """(kind, name, id) of the service or cluster a call's path names, or None (scenarios' `match.service`)."""
        store = self.rt.store
        for value in params.values():
            entry = store.services.find(value)
            if entry is not None:
                return entry.meta["type"], entry.data.get("name"), entry.id
            entry = store.clusters.find(value)
            if entry is not None:
                return "CLUSTER", entry.data.get("name"), entry.id
        return None

    def config_rev(self, entry):
        store = self.rt.store
        env = store.environments.find(entry.parent)
        project = store.projects.find(env.parent) if env else None
        return max(entry.meta.get("rev", 0), env.meta.get("rev", 0) if env else 0,
                   project.meta.get("rev", 0) if project else 0)

    # ------------------------------------------------------------ reading
    def read_status(self, entry, now):
        """A status read of a service (GET .../status): a deployment driven by reads moves on first."""
        if self.rt.lifecycle.read(entry.id, now):
            self.rt.pump()
        return self.status(entry, now)

    def status(self, entry, now):
        request = self.rt.lifecycle.latest(entry.id)
        deployed = entry.meta.get("deployed_rev")
        if deployed is None:
            deployment_status = "NEVER_DEPLOYED"
        else:
            deployment_status = "UP_TO_DATE" if deployed >= self.config_rev(entry) else "OUT_OF_DATE"
        out = {"id": entry.id, "service_deployment_status": deployment_status}
        optional(out, "last_deployment_date", entry.meta.get("last_deployment_date"))
        if request is None:             # never deployed: no request, execution or date to show
            out.update(state="READY", is_part_last_deployment=False,
                       status_details={"action": "DEPLOY", "status": "NEVER", "sub_action": "NONE"},
                       deployment_requests_count=0,
                       steps={"total_duration_sec": 0, "total_computing_duration_sec": 0, "details": []})
            return out
        state, status, details, _ = request.phase(now)
        total = sum(step["duration_sec"] for step in details)
        out.update(state=state, is_part_last_deployment=True,
                   status_details={"action": ACTIONS[request.action][2], "status": status, "sub_action": "NONE"},
                   deployment_request_id=request.id, deployment_requests_count=len(self.rt.lifecycle.history(entry.id)),
                   steps={"total_duration_sec": total, "total_computing_duration_sec": total, "details": details},
                   execution_id=request.execution_id)
        return out

    def accepted(self, request, entry, now):
        """The reply of deploy/redeploy/stop/restart: the request and the service's status."""
        status = self.status(entry, now)
        out = {"id": request.id, "status": "QUEUED", "service_id": entry.id, "created_at": iso(request.created_at),
               "state": status["state"], "service_deployment_status": status["service_deployment_status"],
               "status_details": status["status_details"], "deployment_request_id": request.id,
               "deployment_requests_count": status["deployment_requests_count"],
               "is_part_last_deployment": status["is_part_last_deployment"]}
        if entry.meta["type"] == "APPLICATION":
            out["application_id"] = entry.id
        return out

    def history_item(self, request, now):
        state, status, details, _ = request.phase(now)
        end = min(request.end, now) if request.start <= now else request.created_at
        out = {
            "identifier": {"name": request.name, "service_id": request.target, "service_type": request.service_type,
                           "execution_id": request.execution_id, "deployment_request_id": request.id},
            "status": state, "trigger_action": ACTIONS[request.action][3],
            "auditing_data": {"created_at": iso(request.created_at), "updated_at": iso(max(request.created_at, end)),
                              "triggered_by": request.triggered_by, "origin": request.origin},
            "status_details": {"action": ACTIONS[request.action][2], "status": status, "sub_action": "NONE"},
            "icon_uri": f"app://platform-console/{ICONS.get(request.service_type, 'service')}",
            "total_duration": _duration(sum(step["duration_sec"] for step in details)),
        }
        if request.commit:              # a chart from a Helm repository, a container, a database: no commit
            out["details"] = {"commit": request.commit}
        return out

    def history(self, entry):
        """The service's deployment requests, newest first, not yet rendered: a page renders only its own
        (`history_item`), so a page costs the same however long the history has grown."""
        return self.rt.lifecycle.history(entry.id)[::-1]

    def queue(self, env_id, now):
        items = []
        for request in self.rt.lifecycle.queues.get(env_id, []):
            if now >= request.end:
                continue
            state, status, _, _ = request.phase(now)
            stage_status = "QUEUED" if status == "QUEUED" else "ONGOING"
            service = {"identifier": {"service_id": request.target, "service_type": request.service_type,
                                      "name": request.name},
                       "status": state, "icon_uri": f"app://platform-console/{ICONS.get(request.service_type)}"}
            job = self.rt.store.services.find(request.target) if request.service_type == "JOB" else None
            if job is not None:         # only a job has a job_type to show
                service["details"] = {"job_type": job.data["job_type"]}
            items.append({
                "identifier": {"deployment_request_id": request.id, "environment_id": env_id},
                "auditing_data": {"triggered_by": request.triggered_by, "origin": request.origin},
                "trigger_action": ACTIONS[request.action][3],
                "stages": [{"name": ACTIONS[request.action][3], "status": stage_status, "services": [service]}],
            })
        return items

    def environment_status(self, env, now):
        services = self.rt.store.services.under(env.id)
        states = [self.status(service, now) for service in services]
        pending = [r for r in self.rt.lifecycle.queues.get(env.id, []) if now < r.end]
        if pending:
            state, _, _, _ = pending[0].phase(now)
        elif not states:
            state = "READY"
        elif any(s["state"].endswith("_ERROR") for s in states):
            state = next(s["state"] for s in states if s["state"].endswith("_ERROR"))
        elif all(s["state"] == states[0]["state"] for s in states):
            state = states[0]["state"]
        else:
            state = "DEPLOYED" if any(s["state"] in RUNNING for s in states) else "READY"
        dates = [s["last_deployment_date"] for s in states if s.get("last_deployment_date")]
        requests = [r for s in services for r in self.rt.lifecycle.history(s.id)]
        last = max(requests, key=lambda r: r.created_at, default=None)
        out = {"id": env.id, "state": state}
        optional(out, "last_deployment_date", max(dates, default=None))
        if last is not None:
            out.update(last_deployment_state=last.phase(now)[0], deployment_request_id=last.id)
        return out

    def read_cluster_status(self, entry, now):
        """A status read of a cluster (GET /cluster/{id}/status): an upgrade driven by reads moves on first."""
        if self.rt.lifecycle.read(entry.id, now):
            self.rt.pump()
        return self.cluster_status(entry, now)

    def cluster_status(self, entry, now):
        request = self.rt.lifecycle.latest(entry.id)
        status = request.phase(now)[0] if request is not None else entry.data["status"]
        lock = cluster_lock(entry, now)
        out = {"cluster_id": entry.id, "status": status, "reason": _cluster_reason(entry, request, status, lock),
               "is_deployed": status in ("DEPLOYED", "DEPLOYING", "DEPLOYMENT_QUEUED")}
        # what there is none of is left out: the newest version has no next one, an unlocked cluster no lock
        optional(out, "next_k8s_available_version", next_version(entry.data["version"]))
        optional(out, "last_execution_id", request.execution_id if request else None)
        optional(out, "cluster_lock", lock)
        optional(out, "last_deployment_date", entry.meta.get("last_deployment_date"))
        return out

    # ------------------------------------------------------------ ends and events
    def apply_end(self, request, success):
        store, at = self.rt.store, request.end
        if request.action == "UPGRADE":
            cluster = store.clusters.find(request.target)
            if cluster is not None:
                cluster.meta["last_deployment_date"] = iso(at)
                if success and next_version(cluster.data["version"]):
                    cluster.data["version"] = next_version(cluster.data["version"])
            return
        entry = store.services.find(request.target)
        if entry is None or request.cancelled_at is not None:
            return
        if request.action == "DEPLOY":
            entry.meta["last_deployment_date"] = iso(at)
            if success:
                entry.meta["deployed_rev"] = request.rev
                repository = repository_of(entry.data)
                if repository and request.commit:
                    repository["deployed_commit_id"] = request.commit["git_commit_id"]
        elif request.action == "UNINSTALL" and success:
            entry.meta["deployed_rev"] = -1
            for backup in store.backups.under(entry.id):
                store.backups.remove(backup.id)

    def event_payload(self, event, request, at):
        env = self.rt.store.environments.find(request.queue)
        state = request.phase(at)[0] if math.isfinite(at) else None
        # `application_id` names an application only (the spec's payload); every kind names its service
        application = {"application_id": request.target} if request.service_type == "APPLICATION" else {}
        return {
            **application, "service_id": request.target, "service_type": request.service_type,
            "service_name": request.name, "environment_id": request.queue,
            "project_id": env.parent if env else None, "organization_id": request.org,
            "deployment_request_id": request.id, "execution_id": request.execution_id,
            "trigger_action": ACTIONS[request.action][3], "state": state,
            "commit_id": request.commit["git_commit_id"] if request.commit else None, "timestamp": iso(at),
        }


def _cluster_reason(entry, request, status, lock):
    """Why the cluster is in its state, in the words of its last request (or of its lock)."""
    version = entry.data["version"]
    if request is None:
        reason = f"cluster running Kubernetes {version}"
    else:
        by = request.triggered_by
        if status in ("DEPLOYMENT_QUEUED", "DEPLOYING"):
            reason = f"Kubernetes upgrade from {version} to {next_version(version)} requested by {by}"
        elif status == "DEPLOYED":
            reason = f"Kubernetes upgrade to {version} requested by {by} completed"
        elif status == "CANCELED":
            reason = f"Kubernetes upgrade requested by {by} was canceled"
        else:
            reason = f"Kubernetes upgrade requested by {by} failed ({status})"
    if lock is not None:
        reason += f"; locked: {lock['reason']}"
    return reason


def _step_index(steps, wanted):
    """Index of the step named `wanted`, or of the first step running in state `wanted`; None when the plan
    has neither (the names themselves are checked when the scenario is loaded)."""
    if not wanted:
        return None
    for index, step in enumerate(steps):
        if step[0] == wanted:
            return index
    for index, step in enumerate(steps):
        if step[1] == wanted:
            return index
    return None
