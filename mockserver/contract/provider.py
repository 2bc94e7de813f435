"""Consumer contracts of a sandbox: its calls exported as a pact or a HAR log, and the provider-state
protocol that makes a pact's states true in a verification sandbox.

    GET  /_mock/calls/export?format=pact|har[&consumer=...&provider=...&spec=4|3][&filters of /_mock/calls]
    POST /_mock/provider-states      {"state": ..., "params": {...}, "action": "setup"|"teardown"}

The second is what a Pact verifier calls before each interaction (its state-change URL). The states are
the ones calls/history.py writes:

- `the platform starts from {source}`: the sandbox is reset to where it started (`fixtures`, `options`),
  or the named snapshot (`snapshot NAME`) or the start world (`fixtures`) is restored into it;
- `{noun} {id} exists`: the record is there, or is made by replaying the call that created it (with
  its id); then the edits it lists are replayed; `... and is {state}`: the service is deployed, stopped or
  restarted, with a failure where the state is an error, and the sandbox's clock moved until the service
  shows that state (with `acted`, also when it shows that state already: the flow ran the actions itself);
- `{noun} {id} does not exist`: the record is deleted if the world has it.

Replayed calls go to the handlers directly, as the fixtures loader does: no token, rate limit or
scenario is involved, and nothing is journaled.

Before a pact is written, each interaction is checked (`Check`): its states are made true in a copy of the
world the flow started from, and its request is answered there through the API's request path, as a fresh
mock would answer the verifier. An interaction whose reply that does not match (a write of the flow its
states miss) gets the states of every record the flow wrote; if that does not match either, it is left out
with the reason. The metadata's `unverifiable` says, in one line each, why a pact cannot be verified on
another mock at all (it starts from a private snapshot, or the journal gave up calls it relied on): the
Python client refuses to write such a pact (client/control.py).
"""

import re
import secrets
from urllib.parse import urlencode

import orjson

from mockserver.api.handlers import HANDLERS
from mockserver.api.pipeline import Pipeline
from mockserver.calls import har, history, pact
from mockserver.core.errors import ApiError
from mockserver.sandboxes.sandbox import DEFAULT
from mockserver.world.auth import Token
from mockserver.world.frozen import thaw
from mockserver.world.runtime import Context

FORMATS = ("pact", "har")
OPTIONS = ("format", "consumer", "provider", "spec")
STATE = re.compile(r"(?P<noun>[a-z][a-z ]*) \{id\} (?P<rest>exists|exists and is \{state\}|does not exist)\Z")
RUNNING = ("DEPLOYED", "RESTARTED")
# A state -> the actions that reach it, in order (the last one is followed until the state shows), and the
# failure the last one is made to meet.
ROUTES = {**dict.fromkeys(("DEPLOYMENT_QUEUED", "BUILDING", "DEPLOYING", "DEPLOYED"), (("deploy",), None)),
          **dict.fromkeys(("STOP_QUEUED", "STOPPING", "STOPPED"), (("deploy", "stop"), None)),
          **dict.fromkeys(("RESTART_QUEUED", "RESTARTING", "RESTARTED"), (("deploy", "restart"), None)),
          "BUILD_ERROR": (("deploy",), {"fail_at": "BUILDING", "state": "BUILD_ERROR"}),
          "DEPLOYMENT_ERROR": (("deploy",), {"fail_at": "DEPLOYING", "state": "DEPLOYMENT_ERROR"}),
          "STOP_ERROR": (("deploy", "stop"), {"state": "STOP_ERROR"}),
          "RESTART_ERROR": (("deploy", "restart"), {"state": "RESTART_ERROR"})}
STEP_SECONDS = 0.25                             # how far the clock moves between two looks at a service
MAX_STEPS = 2400                                # 10 minutes of the sandbox's clock at most
NAME_LIMIT = 200
FRESH = "a fresh mock"                          # the start of the reasons the check gives


# ------------------------------------------------------------ exports
def export_options(params):
    """(format, consumer, provider, pact version) of an export request, or a 400."""
    kind = params.get("format")
    if kind not in FORMATS:
        raise ApiError(400, f"query.format: {kind!r} is not one of {', '.join(FORMATS)}" if kind
                       else f"query.format: required, one of {', '.join(FORMATS)}")
    names = []
    for name, default in (("consumer", "consumer"), ("provider", "idp-platform")):
        value = params.get(name, default)
        if not value.strip() or len(value) > NAME_LIMIT:
            raise ApiError(400, f"query.{name}: 1 to {NAME_LIMIT} characters")
        names.append(value)
    version = params.get("spec", "4")
    if version not in ("3", "4"):
        raise ApiError(400, f"query.spec: {version!r} is not one of 3, 4 (the Pact specification version)")
    return kind, names[0], names[1], int(version)


def base_url(request, box):
    """The URL the sandbox's calls were made under (its path prefix, unless it is the default one)."""
    root = f"{request.url.scheme}://{request.url.netloc}"
    return root if box.name == DEFAULT else f"{root}/sandbox/{box.name}"


def export(server, box, calls, params, url):
    """The pact or HAR document of `calls` (selected from the sandbox's journal)."""
    kind, consumer, provider, version = export_options(params)
    if kind == "har":
        return har.document(calls, url)
    rt = box.rt
    source = getattr(rt, "source", box.source)
    start = start_world(server, box, source)
    world = thaw(start, server.shared)
    try:
        known = history.History(rt.journal.entries, Start(world))
        document = pact.document(calls, known, consumer, provider, source, version, rt.journal.dropped,
                                 Check(server, start))
    finally:
        world.close()
    notes = document["metadata"]["idp-mockserver"]
    notes["unverifiable"] = unverifiable(server, source, rt.journal.dropped, notes["left_out"])
    return document


def start_world(server, box, source):
    """The frozen world the sandbox's flow started from (to tell its records from the flow's, and to check
    each interaction on a copy of it)."""
    if source == "fixtures" and box.source != "fixtures":
        return server.origin
    name = source.removeprefix("snapshot ")
    if source.startswith("snapshot ") and source != box.source and name in server.snapshots:
        return server.snapshots[name].data
    return box.origin


def unverifiable(server, source, dropped, left_out):
    """Why a pact cannot be verified on another mock (one line each; none: it can)."""
    out = []
    name = source.removeprefix("snapshot ")
    if source.startswith("snapshot "):
        snapshot = server.snapshots.get(name)
        if snapshot is None:
            out.append(f"its calls start from snapshot {name}, which this mock no longer holds")
        elif snapshot.private:
            out.append(f"its calls start from snapshot {name}, private to sandbox {snapshot.sandbox}: it goes with "
                       f"that sandbox, so no mock that verifies the pact holds it (save it shared and verify against "
                       f"a mock that holds it, or let the calls start from the fixtures)")
    lost = [item for item in left_out if item["reason"].startswith((pact.UNKNOWN, FRESH))]
    if dropped and lost:
        out.append(f"the journal gave up {dropped} call(s) (--journal-size, --journal-memory), and "
                   f"{len(lost)} call(s) that relied on what they made are left out")
    return out


class Start:
    """The world a flow started from, as calls/history.py asks about it: which records it holds, what is above
    each (its parent; the record an override overrides, the registry, the cluster it names) and its noun."""

    def __init__(self, rt):
        self.store = rt.store

    def holds(self, ident):
        return self.store.holds(ident)

    def entry(self, ident):
        return next((entry for table in self.store.tables.values() if (entry := table.find(ident)) is not None),
                    None)

    def links(self, ident):
        entry = self.entry(ident)
        if entry is None:
            return (), ()
        data = entry.data
        refs = (entry.meta.get("target"), data.get("registry_id"), data.get("cluster_id"),
                ((data.get("source") or {}).get("image") or {}).get("registry_id"))
        parents = (entry.parent,) if entry.parent and entry.parent != entry.id else ()
        return parents, tuple(ref for ref in refs if isinstance(ref, str))

    def noun(self, ident):
        entry = self.entry(ident)
        if entry is None:
            return None
        return entry.meta.get("kind") or STORE_NOUNS.get(entry.table)


STORE_NOUNS = {"organizations": "organization", "projects": "project", "environments": "environment",
               "variables": "variable", "secrets": "secret", "clusters": "cluster",
               "registries": "container registry", "webhooks": "webhook", "labels_groups": "labels group",
               "credentials": "credentials", "custom_domains": "custom domain"}


# ------------------------------------------------------------ the provider-state protocol
def change(server, box, request):
    """Answer one state-change request ({state, params, action}) in the sandbox `box`."""
    state, params, action = _read(request)
    done = []
    if action == "setup" and state:
        done = setup(server, box, state, params)
    return {"state": state, "action": action, "sandbox": box.name, "done": done}


def _read(request):
    state = request.get("state", "")
    params = request.get("params") or {}
    action = request.get("action") or "setup"
    if not isinstance(state, str):
        raise ApiError(400, "body.state: must be a string (the provider state's name)")
    if not isinstance(params, dict):
        raise ApiError(400, "body.params: must be a JSON object")
    if action not in ("setup", "teardown"):
        raise ApiError(400, f"body.action: {str(action)[:40]!r} is not one of setup, teardown")
    return state, params, action


def setup(server, box, state, params):
    """Make one state true; a list of what was done."""
    if state == history.SOURCE_STATE:
        return start_from(server, box, params.get("source"))
    return make_true(server, box.rt, state, params)


def make_true(server, rt, state, params):
    """Make one record state true in the world `rt`; a list of what was done (400 when it cannot)."""
    found = STATE.match(state)
    if not found:
        raise ApiError(400, f"provider state {state[:120]!r} is not one the mock writes: use "
                            f"{history.SOURCE_STATE!r}, '<noun> {{id}} exists', '<noun> {{id}} exists and is "
                            f"{{state}}' or '<noun> {{id}} does not exist'")
    ident = params.get("id")
    if not isinstance(ident, str) or not history.UUID_TEXT.match(ident):
        raise ApiError(400, f"params.id: the id of the {found['noun']} (a uuid) is required")
    if found["rest"] == "does not exist":
        return absent(server, rt, found["noun"], ident, params.get("delete"))
    done = present(server, rt, found["noun"], ident, params)
    if found["rest"] != "exists":
        target = params.get("state")
        if not isinstance(target, str):
            raise ApiError(400, f"params.state: the state the {found['noun']} is to be in (a string such as DEPLOYED) "
                                "is required")
        done += drive(server, rt, found["noun"], ident, target, params.get("acted") is True)
    return done


def start_from(server, box, source):
    if not isinstance(source, str) or not source:
        raise ApiError(400, "params.source: fixtures, options or 'snapshot NAME' is required")
    if source in (box.source, "options"):
        server.reset_sandbox(box)
        return [f"sandbox {box.name} reset to its start ({box.source})"]
    name = source.removeprefix("snapshot ")
    if source != "fixtures" and (not source.startswith("snapshot ") or name not in server.snapshots):
        raise ApiError(400, f"params.source: {source[:80]!r} is neither fixtures, options nor a snapshot this mock "
                            f"holds (save it with POST /_mock/snapshots, or start the mock with its --state-file)")
    server.restore_snapshot(box, name)
    return [f"{source} restored into sandbox {box.name}"]


def present(server, rt, noun, ident, params):
    done = []
    if not rt.store.holds(ident):
        create = params.get("create")
        if not isinstance(create, dict):
            raise ApiError(400, f"{noun} {ident} is not in this world and the state does not say how to create it "
                                f"(params.create)")
        replay(server, rt, create, pin=ident)
        done.append(f"{noun} {ident} created")
    edits = params.get("edits") or []
    if not isinstance(edits, list):
        raise ApiError(400, "params.edits: must be a list of calls")
    for edit in edits:
        replay(server, rt, edit)
    if edits:
        done.append(f"{noun} {ident} edited {len(edits)} time(s)")
    return done or [f"{noun} {ident} is there"]


def absent(server, rt, noun, ident, delete):
    if not rt.store.holds(ident):
        return [f"{noun} {ident} is not there"]
    if not isinstance(delete, dict):
        raise ApiError(400, f"{noun} {ident} is in this world and the state does not say how to delete it "
                            f"(params.delete)")
    replay(server, rt, delete)
    return [f"{noun} {ident} deleted"]


def replay(server, rt, call, pin=None, effects=None):
    """Run one call ({method, path, query, body}) through its handler, as an Admin of the record's
    organization, with the id `pin` for the record it creates."""
    if not isinstance(call, dict) or not isinstance(call.get("method"), str) or not isinstance(call.get("path"), str):
        raise ApiError(400, "params: a call is an object with method, path and, where it has them, query and body")
    method, path = call["method"].upper(), call["path"]
    try:
        operation, values = server.spec.match(method, path)
    except ApiError as error:
        raise ApiError(400, f"state step {method} {path[:200]}: {error.message}") from None
    sent_query = call.get("query") or {}
    if not isinstance(sent_query, dict):
        raise ApiError(400, f"state step {method} {path[:200]}: query must be an object of parameters")
    query, errors = operation.check_query({k: str(v) for k, v in sent_query.items()})
    body = call.get("body")
    if body is None and operation.body_required:
        raise ApiError(400, f"state step {method} {path[:200]}: {operation.operation_id} needs a body (the call's "
                            "body)")
    if errors or (body is not None and operation.body is not None and operation.body.errors(body, "body")):
        raise ApiError(400, f"state step {method} {path[:200]}: the query or body is not valid for "
                            f"{operation.operation_id}")
    org = organization_of(rt, values.values())
    token = Token(name="provider-state", value="", organization=org, scopes=["Admin"])
    if pin:
        rt.fake.pin(pin)
    try:
        HANDLERS[operation.operation_id](Context(rt, org=org, token=token, params=values, query=query, body=body,
                                                 now=rt.clock.now(), effects=effects))
    except ApiError as error:
        raise ApiError(400, f"state step {operation.operation_id} {method} {path[:200]} failed: {error.message}") \
            from None
    finally:
        rt.fake.pin(None)
    rt.pump()


def organization_of(rt, idents):
    """The organization of the first record of a call's path that the world holds."""
    for ident in idents:
        for table in rt.store.tables.values():
            entry = table.find(ident)
            if entry is not None:
                return entry.org
    raise ApiError(400, f"no record of the path {', '.join(idents)} is in this world")


def drive(server, rt, noun, ident, target, acted=False):
    """Bring a service to the state `target` through its own actions, moving the sandbox's clock (when it shows
    that state already, only if the flow ran the actions itself: `acted`)."""
    entry = rt.store.services.find(ident)
    if entry is None or noun not in history.SERVICES:
        raise ApiError(400, f"{noun} {ident} is not a service: only services have a state")
    if state_of(rt, entry) == target and not acted:
        return [f"{noun} {ident} is {target}"]
    if target not in ROUTES:
        raise ApiError(400, f"{noun} {ident} cannot be brought to {str(target)[:40]!r} (it is {state_of(rt, entry)}); "
                            f"reachable: {', '.join(sorted(ROUTES))}")
    actions, failure = ROUTES[target]
    for action in actions[:-1]:
        if state_of(rt, entry) not in RUNNING:
            replay(server, rt, {"method": "POST", "path": f"/{noun}/{ident}/{action}"})
            follow(rt, entry, RUNNING, f"{noun} {ident}")
    effects = {"deployment": failure} if failure else None
    replay(server, rt, {"method": "POST", "path": f"/{noun}/{ident}/{actions[-1]}"}, effects=effects)
    follow(rt, entry, (target,), f"{noun} {ident}")
    return [f"{noun} {ident} brought to {target} ({', '.join(actions)})"]


def state_of(rt, entry):
    return rt.deployments.status(entry, rt.clock.now())["state"]


def follow(rt, entry, wanted, what):
    """Move the clock in small steps until the service shows one of `wanted`."""
    for _ in range(MAX_STEPS):
        if state_of(rt, entry) in wanted:
            return
        rt.clock.advance(STEP_SECONDS)
        rt.pump()
    raise ApiError(400, f"{what} did not reach {' or '.join(wanted)} within {MAX_STEPS * STEP_SECONDS:.0f} s of its "
                        f"clock (it is {state_of(rt, entry)})")


# ------------------------------------------------------------ checking an interaction before it is written
class Check:
    """`check(call, states)` for pact.document: why a fresh mock would not give the recorded reply of a call once
    its provider states are made true, or None. The fresh mock is a copy of `start` (the frozen world the flow
    started from) without scenarios and without webhook deliveries; the request goes through the API's
    request path with an Admin token of the call's organization, as a verifier sends it."""

    def __init__(self, server, start):
        self.server, self.start = server, start
        self.pipeline = Pipeline(server.settings, server.spec)       # its own: no access log, no self-check list

    def __call__(self, call, states):
        rt = thaw(self.start, self.server.shared)
        try:
            rt.scenarios.clear()
            rt.webhooks.fail_next(10 ** 9, "the check of a pact's interaction")      # nothing is sent
            for state in states[1:]:
                try:
                    make_true(self.server, rt, state["name"], state["params"])
                except ApiError as error:
                    return f"{FRESH} cannot make its provider state {state['name']!r} true: {error.message}"
            answer = self.answer(rt, call)
        finally:
            rt.close()
        if answer is None:
            return f"{FRESH} could not answer it here, to check its reply"
        why = pact.disagrees(call, *answer)
        return None if why is None else f"{FRESH} with its provider states gives another reply: {why}"

    def answer(self, rt, call):
        """(status, body bytes) of the call sent again in the world `rt`; None if it waited on something."""
        query, _, body = call.parts()
        raw = b"" if body is None else orjson.dumps(body)
        headers = [(b"authorization", f"Token {admin_token(rt, call)}".encode())]
        if body is not None:
            headers += [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(raw))]
        scope = {"type": "http", "method": call.method, "path": call.path, "raw_path": call.path.encode(),
                 "query_string": urlencode(query).encode(), "headers": headers}
        sent = {"status": None, "body": b""}

        async def receive():
            return {"type": "http.request", "body": raw, "more_body": False}

        async def send(message):
            if message["type"] == "http.response.start":
                sent["status"] = message["status"]
            else:
                sent["body"] += message.get("body", b"")
        done = _run(self.pipeline.api(rt, scope, receive, send, call.path))
        return (sent["status"], sent["body"]) if done and sent["status"] is not None else None


def admin_token(rt, call):
    """The value of an Admin token of the call's organization (one is made in this world when it has none)."""
    try:
        org = organization_of(rt, [ident for _, ident in history.path_ids(call.template or "", call.path)])
    except ApiError:
        org = rt.default_org
    for token in rt.tokens.values():
        if token.organization == org and "Admin" in token.scopes and token.expires_at is None:
            return token.value
    return rt.add_token(Token(name="admin", value=secrets.token_hex(16), organization=org, scopes=["Admin"])).value


def _run(coroutine, rounds=100):
    """Run a coroutine that never waits on I/O (the request path without scenarios) to its end, here: True,
    or False (it was closed) if it waited on something."""
    for _ in range(rounds):
        try:
            waited = coroutine.send(None)
        except StopIteration:
            return True
        if waited is not None:
            break
    coroutine.close()
    return False
