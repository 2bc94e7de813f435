"""The inspector: the web page at /_mock/ui and the control routes only it needs.

The page (mockserver/ui/: one HTML file, one stylesheet, one script; no build step) reads
the control API with URLs relative to its own location, so under a sandbox prefix it reads
that sandbox. The routes here give it what the rest of the control API does not:

    GET  /_mock/ui, /_mock/ui/{file}   the page and its two assets
    GET  /_mock/calls/rows             journal rows without bodies, filtered and paged, newest first (with a
                                       reply's network fault and a forwarded call's drift count)
    GET  /_mock/calls/{id}             one journal entry in full
    GET  /_mock/deployments            every deployment request on the mock's clock, by environment
    GET  /_mock/state/tree             organization -> projects -> environments -> services, and
                                       clusters, registries, webhooks, with counts
    POST /_mock/scenarios              activate a YAML scenario under the name it declares

The route functions sit in control/routes.py's route table; they reach the world of the request's
sandbox through `runtime_of(request)` only.
"""

import math
from bisect import bisect_left
from pathlib import Path

import orjson
from starlette.responses import RedirectResponse, Response

from mockserver.calls.journal import filter_problems, mismatches, redact_body
from mockserver.core.clock import iso
from mockserver.core.errors import ApiError, invalid
from mockserver.edge import bodies
from mockserver.edge.jsonbody import check_document, too_deep
from mockserver.world.lifecycle import ACTIONS, ERROR_STATES
from mockserver.world.scenarios import ScenarioError

UI = Path(__file__).with_name("ui")
ASSETS = {"index.html": "text/html; charset=utf-8", "app.css": "text/css; charset=utf-8",
          "app.js": "text/javascript; charset=utf-8"}
ROW_FILTERS = ("method", "status", "operation", "path")
PAGE = 100
MAX_PAGE = 1000
TREE = {"projects": ("environments",), "environments": ("services",)}
ORG_TABLES = ("clusters", "registries", "webhooks")


def reply(body, status=200):
    return Response(orjson.dumps(body), status, media_type="application/json")


def asset_response(name):
    return Response((UI / name).read_bytes(), media_type=ASSETS[name], headers={"Cache-Control": "no-cache"})


# ------------------------------------------------------------ calls
def whole_number(params, name, default=None, most=None):
    text = params.get(name)
    if text in (None, ""):
        return default
    if not text.isdigit():
        raise ApiError(400, f"query.{name}: must be a whole number")
    return min(int(text), most) if most is not None else int(text)


def row(call):
    """A call as a row: `fault` names the network faults its reply was sent with (a cut reply: its status was
    sent, its body was not whole), `drift` the findings of a forwarded call (None: the mock answered it)."""
    findings = call.findings()
    return {"id": call.id, "time": iso(call.at), "method": call.method, "path": call.path,
            "operation": call.operation_id, "status": call.status,
            "duration_ms": round(call.duration * 1000, 3), "token": call.token, "scenario_rule": call.rule,
            "fault": call.fault, "drift": None if findings is None else len(findings)}


def drifted(call):
    """A forwarded call whose exchange disagreed with the document (the drift filter)."""
    return call.drift is not None and call.drift != b"[]"


def contains(call, needle):
    """Does the text occur (case-insensitive) anywhere in the call: line, names, query, bodies?"""
    line = f"{call.method} {call.path} {call.status} {call.operation_id or ''} {call.rule or ''} {call.token or ''}"
    if needle in line.lower():
        return True
    query, _, body = call.parts()
    if query and needle in orjson.dumps(query).decode().lower():
        return True
    if body is not None and needle in orjson.dumps(body).decode().lower():
        return True
    return bool(call.response) and needle in call.response.decode("utf-8", "replace").lower()


# ------------------------------------------------------------ deployments
def when(at):
    return iso(at) if at is not None and math.isfinite(at) else None


def timeline(request, now, until):
    """One request on the clock: its planned steps, the state intervals they make and its outcome.

    Intervals: the queue wait, one per run of steps in the same state, then the state it ends in
    (DEPLOYED, an error, CANCELED), which lasts `until` the target's next request (None: still)."""
    queued = ACTIONS[request.action][0]
    stop = request.cancelled_at
    steps, intervals = [], []

    def interval(state, start, end, kind):
        if stop is not None and start >= stop:
            return
        if stop is not None and (end is None or end > stop):
            end = stop
        if intervals and intervals[-1]["state"] == state and intervals[-1]["end"] == when(start):
            intervals[-1]["end"] = when(end)
        else:
            intervals.append({"state": state, "kind": kind, "start": when(start), "end": when(end)})

    interval(queued, request.created_at, request.start, "queued")
    outcome = None
    times = request.step_times()               # on the clock, or at the status reads that moved it
    for index, (name, state, _seconds, reported) in enumerate(request.steps):
        stalled = index == request.stall_at
        at, end = times[index]
        end = math.inf if stalled else end
        if stop is not None and at >= stop:
            status = "CANCELED"
        elif now < at:
            status = "PENDING"
        elif stalled or now < end:
            status = "ONGOING"
        else:
            status = "ERROR" if index == request.fail_at else "SUCCESS"
        steps.append({"name": name, "state": state, "start": when(at), "end": when(end), "status": status,
                      "duration_sec": reported})
        interval(state, at, end, "running")
        if stalled:
            break
        if index == request.fail_at:
            outcome = request.fail_state or ERROR_STATES.get(state, "DEPLOYMENT_ERROR")
            break
    if stop is not None:
        outcome = "CANCELED"
    elif outcome is None and request.stall_at is None:
        outcome = ACTIONS[request.action][1]
    if outcome is not None:
        start = request.end
        intervals.append({"state": outcome, "kind": "error" if outcome.endswith("_ERROR") else
                          "canceled" if outcome == "CANCELED" else "done",
                          "start": when(start), "end": when(until)})
    state, status, _, _ = request.phase(now)
    return {"id": request.id, "action": request.action, "target_id": request.target,
            "target_name": request.name, "target_type": request.service_type or "CLUSTER",
            "triggered_by": request.triggered_by, "call_id": request.call_id, "number": request.number,
            "created_at": when(request.created_at), "start_at": when(request.start), "end_at": when(request.end),
            "cancelled_at": when(request.cancelled_at), "state": state, "status": status, "outcome": outcome,
            "in_queue": now < request.end, "intervals": intervals, "steps": steps}


# ------------------------------------------------------------ state tree
def shown(entry):
    """A record of the store as the inspector shows it: its secrets redacted."""
    return redact_body(entry.data, False)


def node(store, table, entry):
    out = {"id": entry.id, "name": entry.data.get("name"), "record": shown(entry)}
    for child in TREE.get(table, ()):
        out[child] = [node(store, child, item) for item in store.tables[child].under(entry.id)]
    if table == "services":
        out["type"] = entry.meta.get("type")
    return out


# ------------------------------------------------------------ the routes (in control/routes.py's table)
def runtime_of(request):
    """The world of the request's sandbox (chosen in app.py): every read of the inspector goes through here."""
    return request.scope["mock.runtime"]


async def page(request):
    return asset_response("index.html")


async def page_slash(request):
    return RedirectResponse("../ui", status_code=308)


async def asset(request):
    name = request.path_params["file"]
    if name not in ASSETS:
        raise ApiError(404, f"no inspector file {name}; files are {', '.join(ASSETS)}")
    return asset_response(name)


async def call_rows(request):
    """Rows of the journal (no headers or bodies), newest first: `before`/`since` page by call id."""
    params = request.query_params
    unknown = set(params) - set(ROW_FILTERS) - {"text", "before", "since", "limit", "drift"}
    if unknown:
        raise ApiError(400, f"unknown parameter(s) {', '.join(sorted(unknown))}; use "
                            f"{', '.join(ROW_FILTERS)}, text, drift, before, since, limit")
    if params.get("drift") not in (None, "", "true"):
        raise ApiError(400, f"query.drift: {params['drift'][:80]!r}: only true (the forwarded calls with drift)")
    drift = params.get("drift") == "true"
    wanted = {name: params[name] for name in ROW_FILTERS if params.get(name)}
    problems = filter_problems(wanted, request.app.state.server.spec.operations)   # as /_mock/calls checks them
    if problems:
        raise invalid(problems)
    needle = (params.get("text") or "").strip().lower()
    before = whole_number(params, "before")
    since = whole_number(params, "since", 0)
    limit = whole_number(params, "limit", PAGE, MAX_PAGE)
    journal = runtime_of(request).journal
    matching = [call for call in journal.entries.after(since)      # a poll reads the newest blocks only
                if call.id > since and not (wanted and mismatches(call, wanted))
                and not (needle and not contains(call, needle)) and not (drift and not drifted(call))]
    end = len(matching) if before is None else bisect_left(matching, before, key=lambda call: call.id)
    shown = matching[max(0, end - limit):end] if limit else []
    return reply({"total": len(matching), "newer": len(matching) - end, "journal_total": len(journal.entries),
                  "dropped": journal.dropped, "last_id": journal.next_id - 1,
                  "results": [row(call) for call in reversed(shown)]})


async def call(request):
    ident = request.path_params["id"]
    rt = runtime_of(request)
    found = rt.journal.find(ident)
    if found is None:
        raise ApiError(404, f"call {ident} is not in the journal")
    return reply(rt.journal.render(found, rt.webhooks.caused_by(ident)))


def environment_groups(store):
    """A group per environment, its services as lanes, before any request is placed."""
    groups = {}
    for env in store.environments.rows.values():
        project = store.projects.find(env.parent)
        groups[env.id] = {"kind": "environment", "id": env.id, "name": env.data.get("name"),
                          "project": {"id": project.id, "name": project.data.get("name")} if project else None,
                          "organization": env.org,
                          "lanes": [{"id": s.id, "name": s.data.get("name"), "type": s.meta.get("type")}
                                    for s in store.services.under(env.id)],
                          "requests": []}
    return groups


def cluster_group(store, item):
    cluster = store.clusters.find(item.queue)
    return {"kind": "cluster", "id": item.queue, "name": cluster.data.get("name") if cluster else item.name,
            "project": None, "organization": item.org,
            "lanes": [{"id": item.queue, "name": item.name, "type": "CLUSTER"}], "requests": []}


async def deployments(request):
    rt = runtime_of(request)
    now, store = rt.clock.now(), rt.store
    groups = environment_groups(store)
    for target, history in rt.lifecycle.by_target.items():
        for index, item in enumerate(history):
            group = groups.get(item.queue)
            if group is None:
                group = groups[item.queue] = cluster_group(store, item)
            if not any(lane["id"] == target for lane in group["lanes"]):
                group["lanes"].append({"id": target, "name": item.name, "type": item.service_type or "CLUSTER"})
            following = history[index + 1].created_at if index + 1 < len(history) else None
            group["requests"].append(timeline(item, now, following))
    latest = {}                                 # group id -> when an API call last started a request in it
    for group in groups.values():
        group["requests"].sort(key=lambda r: (r["created_at"], r["number"]))
        group["queue"] = [r["id"] for r in group["requests"] if r["in_queue"]]
        latest[group["id"]] = _users_first(group)
    ordered = sorted(groups.values(), key=lambda g: (g["kind"] != "environment", not g["requests"],
                                                    (g["project"] or {}).get("name") or "", g["name"] or ""))
    ordered.sort(key=lambda g: latest[g["id"]], reverse=True)      # stable: the rest keeps its order
    return reply({"clock": rt.clock.describe(), "results": ordered})


def _users_first(group):
    """The lanes of services the user acted on (a request an API call started, not the fixtures) first, the
    most recent first; returns the time of the group's most recent such request ("" if none)."""
    called = {}
    for item in group["requests"]:
        if item["call_id"] is not None:
            called[item["target_id"]] = max(called.get(item["target_id"], ""), item["created_at"] or "")
    group["lanes"].sort(key=lambda lane: called.get(lane["id"], ""), reverse=True)
    return max(called.values(), default="")


async def state_tree(request):
    store = runtime_of(request).store
    organizations = []
    for org in store.organizations.rows.values():
        item = node(store, "organizations", org)
        item["projects"] = [node(store, "projects", p) for p in store.projects.under(org.id)]
        for table in ORG_TABLES:
            item[table] = [node(store, table, e) for e in store.tables[table].under(org.id)]
        environments = [e for p in item["projects"] for e in p["environments"]]
        item["counts"] = {"projects": len(item["projects"]), "environments": len(environments),
                          "services": sum(len(e["services"]) for e in environments),
                          **{table: len(item[table]) for table in ORG_TABLES}}
        organizations.append(item)
    return reply({"counts": store.count(), "organizations": organizations})


async def activate_scenario(request):
    """Activate a YAML (or JSON) scenario under the name it declares; errors name their line."""
    scenarios = runtime_of(request).scenarios
    text = await bodies.scenario_text(request)
    if not text.strip():
        raise ApiError(400, "body: a scenario document (YAML or JSON) is required")
    check_document(text)
    try:
        name = await scenarios.load_text_aside(text, "POST /_mock/scenarios")
    except ScenarioError as error:
        location = f"line {error.line}" if error.line else "document"
        raise ApiError(400, str(error), [(location, error.problem)]) from None
    except RecursionError:
        raise too_deep("body") from None
    return reply(scenarios.describe(name), 201)
