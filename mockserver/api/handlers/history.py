"""Environment-wide deployment views, logs, database backups and uninstall, job commits,
Helm custom domains and Helm's paged history."""

import uuid

from mockserver.api.handlers.common import PAGE_SIZE, page
from mockserver.api.handlers.services import commits_of, service
from mockserver.core.clock import iso
from mockserver.core.errors import conflict
from mockserver.world.deployments import repository_of
from mockserver.world.store import Entry

LOG_STEPS = ("GIT_CLONE", "BUILD", "MIRROR_IMAGE", "DEPLOYMENT", "ROUTER_DEPLOYMENT")


def _env(ctx):
    return ctx.rt.store.environments.get(ctx.params["environmentId"], ctx.org)


def environment_status(ctx):
    return ctx.rt.deployments.environment_status(_env(ctx), ctx.now)


def deployment_queue(ctx):
    return page(ctx, ctx.rt.deployments.queue(_env(ctx).id, ctx.now), lambda item: item)


def database_statuses(ctx):
    env = _env(ctx)
    return page(ctx, ctx.rt.store.services.view(env.id, "database"),
                lambda entry: ctx.rt.deployments.status(entry, ctx.now))


def cancel_deployment(ctx):
    env = _env(ctx)
    ctx.rt.lifecycle.cancel(env.id, ctx.now)
    ctx.rt.pump()
    return ctx.rt.deployments.environment_status(env, ctx.now)


def uninstall_database(ctx):
    rt = ctx.rt
    entry = service(ctx, "database")
    rt.deployments.start(ctx, entry, "UNINSTALL")
    return rt.deployments.status(entry, ctx.now)


# ---------------------------------------------------------------- logs
def application_logs(ctx):
    rt = ctx.rt
    entry = service(ctx, "application")
    tail = ctx.query.get("tail", 1000)
    lines = []
    for request in rt.lifecycle.history(entry.id)[-5:]:
        if request.action != "DEPLOY":
            continue
        lines += _request_lines(rt, entry, request, ctx.now)
    return page(ctx, lines[-tail:], lambda line: line)


def _request_lines(rt, entry, request, now):
    """Log lines of one deployment up to `now`: a few per finished step, then runtime lines."""
    state, _, details, success = request.phase(now)
    commit = (request.commit or {}).get("git_commit_id", "") or request.id
    repository = repository_of(entry.data) or {}
    ports = entry.data.get("ports") or [{"internal_port": 8080}]
    values = {"url": repository.get("url", ""), "branch": repository.get("branch", ""), "sha": commit,
              "short": commit[:12], "port": ports[0]["internal_port"], "name": entry.data["name"],
              "namespace": f"env-{entry.parent[:8]}", "replicas": entry.data.get("min_running_instances", 1),
              "image": entry.data.get("image_name", entry.data["name"])}
    pod = f"{entry.data['name']}-{request.id[:8]}-{commit[:5]}"
    lines, at = [], request.start
    for step in details:
        step_name = step["step_name"]
        if step_name in LOG_STEPS:
            count = 7 if step_name == "BUILD" else 2
            for index, message in enumerate(rt.fake.log_lines(request.id, step_name, values, count)):
                lines.append(_line(request, f"{step_name}:{index}", at, message, pod, commit))
        if step["status"] == "ERROR":
            lines.append(_line(request, f"{step_name}:error", at + step["duration_sec"],
                               f"ERROR: {step_name} failed, state {state}", pod, commit))
        at += step["duration_sec"]
    if success:
        running = min(int((now - request.end) // 10), 50)
        for index, message in enumerate(rt.fake.log_lines(request.id, "RUN", values, running + 1)):
            lines.append(_line(request, f"RUN:{index}", request.end + 10 * index, message, pod, commit))
    return lines


def _line(request, key, at, message, pod, commit):
    return {"id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{request.id}:{key}")), "created_at": iso(at),
            "message": message, "pod_name": pod, "version": commit[:12]}


# ---------------------------------------------------------------- backups
def list_backups(ctx):
    entry = service(ctx, "database")
    number, size = ctx.query.get("page", 1), ctx.query.get("page_size", PAGE_SIZE)
    backups = list(reversed(ctx.rt.store.backups.under(entry.id)))
    start = ctx.query.get("startId")
    if start is not None:
        ids = [b.id for b in backups]
        backups = backups[ids.index(start) + 1:] if start in ids else []
    chunk = backups[(number - 1) * size: number * size]
    return {"page": number, "page_size": size, "results": [b.data for b in chunk]}


def add_backups(rt, entry, count, now):
    """Seed `count` daily backups of a database, oldest first."""
    for day in range(count, 0, -1):
        at = now - day * 86400
        name = rt.fake.backup_name(entry.data["name"], iso(at))
        status = {"id": entry.id, "state": "DEPLOYED", "service_deployment_status": "UP_TO_DATE",
                  "status_details": {"action": "DEPLOY", "status": "SUCCESS", "sub_action": "NONE"}}
        data = {"id": rt.new_id(), **rt.stamp(at), "name": name, "message": f"Daily backup of {entry.data['name']}",
                "status": status}
        rt.store.backups.add(Entry(data, entry.org, entry.id))


# ---------------------------------------------------------------- commits
def job_commits(ctx):
    """The job's last 100 commits, or the one `gitCommitId` names, or those after (older than) `startId`. The
    list is of positions: only the commits of the page asked for are made."""
    commits = commits_of(ctx.rt, service(ctx, "job"))
    positions = range(len(commits))
    wanted, start = ctx.query.get("gitCommitId"), ctx.query.get("startId")
    if wanted is not None:
        found = commits.position(wanted)
        positions = range(0) if found is None else range(found, found + 1)
    elif start is not None:
        found = commits.position(start)
        positions = range(0) if found is None else range(found + 1, len(commits))
    return page(ctx, positions, commits.__getitem__)


# ---------------------------------------------------------------- Helm
def helm_history_v2(ctx):
    entry = service(ctx, "helm")
    size = int(ctx.query.get("pageSize") or PAGE_SIZE)     # a number of records: 5.0 is 5; absent or null: 20
    number = ctx.query.get("page", 1)
    requests = ctx.rt.deployments.history(entry)[(number - 1) * size: number * size]
    return {"page": number, "page_size": size,
            "results": [ctx.rt.deployments.history_item(request, ctx.now) for request in requests]}


def list_domains(ctx):
    entry = service(ctx, "helm")
    return page(ctx, ctx.rt.store.custom_domains.view(entry.id))


def create_domain(ctx):
    rt, body = ctx.rt, ctx.body
    entry = service(ctx, "helm")
    if rt.store.custom_domains.name_taken(entry.id, body["domain"]):
        raise conflict(f"custom domain {body['domain']} already exists on helm {entry.id}")
    ident = rt.new_id()
    data = {"id": ident, **rt.stamp(ctx.now), "domain": body["domain"],
            "generate_certificate": body.get("generate_certificate", True), "use_cdn": body.get("use_cdn", False),
            "validation_domain": f"{ident[:8]}.validation.platform.example", "status": "VALIDATION_PENDING"}
    rt.store.custom_domains.add(Entry(data, ctx.org, entry.id))
    rt.bump(entry)
    return data


def _domain(ctx):
    entry = service(ctx, "helm")
    return ctx.rt.store.custom_domains.get(ctx.params["customDomainId"], ctx.org, parent=entry.id)


def get_domain(ctx):
    return _domain(ctx).data


def delete_domain(ctx):
    ctx.rt.store.delete("custom_domains", _domain(ctx).id)


HANDLERS = {
    "getEnvironmentStatus": environment_status, "getEnvironmentDeploymentQueue": deployment_queue,
    "getEnvironmentDatabaseStatus": database_statuses, "cancelEnvironmentDeployment": cancel_deployment,
    "uninstallDatabase": uninstall_database, "getApplicationLogs": application_logs,
    "listDatabaseBackups": list_backups, "listJobCommits": job_commits,
    "listHelmDeploymentHistoryV2": helm_history_v2, "listHelmCustomDomains": list_domains,
    "createHelmCustomDomain": create_domain, "getHelmCustomDomain": get_domain,
    "deleteHelmCustomDomain": delete_domain,
}
