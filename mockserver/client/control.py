"""The control client: one method per operation of the control API (its `x-client` name), over one seam. Each
method's reply is typed by the control document's schema of it (mockserver/client/types.py, generated)."""

import hashlib
import json
import os
import sys
import time

import httpx

from mockserver.client import constants
from mockserver.client import types as replies
from mockserver.client.files import merge_pacts, write_json
from mockserver.client.tokens import Tokens, version_mismatch


class MockServerError(AssertionError):
    """A control call answered with an error status: `status`, the server's `message` and its whole `body`."""

    def __init__(self, method, path, status, body):
        self.status, self.body = status, body
        self.message = body.get("message") if isinstance(body, dict) else (str(body).strip() or f"HTTP {status}")
        super().__init__(f"control API {method} {path} answered {status}: {self.message}")


class PactRefused(AssertionError):
    """A pact that no other mock could verify, not written: one line that says why (`reasons`: the export's
    `unverifiable`)."""

    def __init__(self, path, reasons):
        self.path, self.reasons = path, list(reasons)
        super().__init__(f"mockserver: the pact {path} is not written: {'; '.join(self.reasons)}")


def private_snapshot_name(sandbox: str, name: str) -> str:
    """The name a sandbox's snapshot is stored under, private to it: the same in every language's client (the
    control document's x-constants.private_snapshot)."""
    key = constants.PRIVATE_SNAPSHOT_KEY.replace("{sandbox}", sandbox).replace("{name}", name)
    digest = hashlib.new(constants.PRIVATE_SNAPSHOT_DIGEST, key.encode()).hexdigest()
    return f"{name[:constants.PRIVATE_SNAPSHOT_HEAD]}.{digest[:constants.PRIVATE_SNAPSHOT_DIGEST_CHARS]}"


private_name = private_snapshot_name            # deprecated: the name it had (one release)


SANDBOX_NAME = constants.SANDBOX_NAME           # kept here too: mockserver/cli/mcp_scope.py reads it from this module


def is_sandbox_name(name):
    """Whether the server takes `name` for a sandbox's (or snapshot's): the control document's rule."""
    return bool(constants.SANDBOX_NAME.match(name)) and name not in constants.RESERVED_SANDBOX_NAMES


def _given(**values):
    return {key: value for key, value in values.items() if value is not None}


def _in_query(**filters):
    """Filters for a query string: `headers={name: glob}` as `headers[name]=glob`, `body={path: value}` as
    `body[path]=<value as JSON>` (so that "3" stays text and 3 a number)."""
    out = {}
    for key, value in _given(**filters).items():
        if key == "headers" and isinstance(value, dict):
            out.update({f"headers[{name}]": glob for name, glob in value.items()})
        elif key == "body" and isinstance(value, dict):
            out.update({f"body[{path}]": json.dumps(field) for path, field in value.items()})
        else:
            out[key] = value
    return out


class Client:
    """A handle on a running mock (its root) or on one sandbox of it (`in_sandbox`). Routes of a world (clock,
    journal, scenarios, snapshots saved and restored, tokens, state, deliveries) act on the handle's sandbox
    (the default sandbox at the root); health, the sandbox and snapshot registries and the documents on the
    whole mock. Handles of one mock share one HTTP client; `stop()` on the root also stops a mock it started."""

    def __init__(self, url, *, control_token=None, sandbox=None, tokens=None, http=None, timeout=30.0, owner=None,
                 pool=None):
        self.root = str(url).rstrip("/")
        if sandbox is not None and not is_sandbox_name(sandbox):
            raise ValueError(f"not a sandbox name: {sandbox!r} (1 to 64 of A-Z a-z 0-9 _ . -)")
        self.sandbox = sandbox
        self.url = f"{self.root}/sandbox/{sandbox}" if sandbox else self.root
        self.control_token = control_token if control_token is not None else os.environ.get("MOCKSERVER_CONTROL_TOKEN")
        # one connection pool (and one TLS set-up, which costs milliseconds) for the root and all its sandboxes
        self._pool = pool if pool is not None or http is not None else httpx.HTTPTransport()
        self.http = http if http is not None else httpx.Client(base_url=self.url, timeout=timeout, transport=self._pool)
        self._tokens = tokens
        self._owner = owner                        # the process or container this handle started (its root only)
        self._owns_http = http is None and pool is None
        self.private_snapshots = {}                # name given -> name stored, for this sandbox only

    @classmethod
    def in_process(cls, app, **kwargs):
        """A client of a MockServer in this process, driving its routes without a socket (its lifespan runs)."""
        from starlette.testclient import TestClient

        http = TestClient(app, base_url="http://mock", raise_server_exceptions=False).__enter__()
        tokens = Tokens.of_fixtures(app.settings.fixtures)
        return cls("http://mock", http=http, tokens=tokens, owner=_Lifespan(http), **kwargs)

    # ---------------------------------------------------------------- the one seam: a control call
    def _control(self, method, path, *, scoped=True, params=None, json=None, content=None, headers=None,
                 text=False):
        url = f"{self.url if scoped else self.root}/_mock{path}"
        sent = dict(headers or {})
        if self.control_token:
            sent["Authorization"] = f"Bearer {self.control_token}"
        reply = self.http.request(method, url, params=params, json=json, content=content, headers=sent)
        if reply.status_code >= 400:
            try:
                body = reply.json()
            except ValueError:
                body = reply.text
            raise MockServerError(method, path, reply.status_code, body)
        if text:
            return reply.text
        return reply.json() if reply.content else None

    @property
    def tokens(self):
        """The mock's tokens (Tokens): those its start page lists, else the package's default fixtures'."""
        if self._tokens is None:
            listed = {}
            try:
                page = self.http.get(f"{self.root}/", headers={"Accept": "application/json"}).json()
                listed = (page.get("quick_start") or {}).get("tokens") or {}
            except (httpx.HTTPError, ValueError, AttributeError):
                pass
            self._tokens = Tokens(listed) if Tokens(listed) else Tokens.of_fixtures()
        return self._tokens

    def token(self, name="admin") -> str:
        """The value of a token of the fixtures: admin/read/write/deploy, its name, or its scope (any case); another
        name raises UnknownTokenError, listing the valid ones."""
        return self.tokens[name]

    def headers(self, token="admin") -> dict[str, str]:
        """`Authorization` for a token of the fixtures: admin/read/write/deploy, its name, or its scope."""
        return {"Authorization": f"Token {self.token(token)}"}

    def wait_ready(self, timeout=20.0, alive=None, warn=None) -> replies.Health:
        """Poll /_mock/health until it answers 200 (or `timeout` seconds pass, or `alive()` says the server is
        gone); say in one line when the mock's major.minor differs from this client's. Its health reply."""
        deadline, problem = time.monotonic() + timeout, "no answer"
        while time.monotonic() < deadline:
            if alive is not None and not alive():
                raise RuntimeError(f"the mock at {self.root} stopped before it was ready")
            try:
                health = self._control("GET", "/health", scoped=False)
            except (httpx.HTTPError, MockServerError) as error:
                problem = str(error) or type(error).__name__
                time.sleep(0.05)
                continue
            line = version_mismatch(health.get("version", "?"), self.root)
            if line:
                (warn or _stderr)(line)
            return health
        raise TimeoutError(f"the mock at {self.root} was not ready within {timeout} s: {problem}")

    wait_until_ready = wait_ready               # deprecated: the name it had (one release)

    # ---------------------------------------------------------------- health, state and time
    def health(self) -> replies.Health:
        return self._control("GET", "/health", scoped=False)

    def reset(self, scenarios=False) -> replies.ResetResult:
        """Back to the fixtures; journal and deliveries cleared; scenarios kept unless `scenarios`."""
        return self._control("POST", "/reset", json={"scenarios": scenarios})

    def state(self) -> replies.State:
        return self._control("GET", "/state")

    def export_state(self, secrets="placeholders") -> str:
        """The world as a fixtures document (YAML text); `secrets="include"` writes secret values in clear."""
        return self._control("GET", "/state/export", params={"secrets": secrets}, text=True)

    def state_tree(self) -> replies.StateTree:
        return self._control("GET", "/state/tree")

    def clock(self) -> replies.Clock:
        return self._control("GET", "/clock")

    def advance(self, seconds) -> replies.Clock:
        return self._control("POST", "/clock/advance", json={"seconds": seconds})

    # ---------------------------------------------------------------- the journal
    def calls(self, limit=None, **filters) -> list[replies.Call]:
        """The matching calls, oldest first: all of them (page after page), or the newest `limit`. The filters:
        method, path, operation, status, since, scenario, request_id, token (a name or a value), headers
        ({name: glob}) and body ({field or dotted path: value}, objects matching partially)."""
        page = self._control("GET", "/calls", params=_in_query(limit=limit, **filters))
        found = page["results"]
        while limit is None and page.get("more"):
            page = self._control("GET", "/calls", params=_in_query(after=page["next_after"], **filters))
            found += page["results"]
        return found

    def clear_calls(self) -> None:
        self._control("DELETE", "/calls")

    def call(self, ident) -> replies.Call:
        return self._control("GET", f"/calls/{ident}")

    def call_rows(self, **filters) -> replies.CallRowPage:
        """The inspector's rows of the journal (`text`, `before`, `since`, `limit` besides the call filters)."""
        return self._control("GET", "/calls/rows", params=_in_query(**filters))

    def coverage(self) -> replies.Coverage:
        return self._control("GET", "/calls/coverage")

    def usage(self, scope=None, prefix=None) -> replies.UsageReport:
        """The scenario rules that never fired and the operations never called: of this handle's sandbox, or with
        `scope="mock"` of every sandbox whose name starts with `prefix` (those gone included)."""
        return self._control("GET", "/usage", params=_given(scope=scope, prefix=prefix))

    def assert_rules_fired(self, scope=None, prefix=None) -> replies.UsageReport:
        """Fail (AssertionError, one line) when a scenario rule never fired; the usage report otherwise."""
        report = self.usage(scope=scope, prefix=prefix)
        unused = report["rules"]["never_fired"]
        if unused:
            raise AssertionError(f"mockserver: {len(unused)} scenario rule(s) never fired: {', '.join(unused)}")
        return report

    def verify(self, times=None, at_least=None, at_most=None, count=None, **filters) -> replies.VerifyResult:
        """Did calls matching the filters happen `times` (or `count`) times, at least or at most so often? The
        verdict, with a readable message when it fails. With no bound, at least once."""
        if times is not None and count is not None:
            raise TypeError("verify: times and count are two names of one bound: give one of them")
        body = _given(count=times if times is not None else count, at_least=at_least, at_most=at_most,
                      **filters)
        return self._control("POST", "/calls/verify", json=body)

    def assert_called(self, times=None, at_least=None, at_most=None, count=None, **filters) -> replies.VerifyResult:
        result = self.verify(times, at_least, at_most, count, **filters)
        if not result["ok"]:
            raise AssertionError(result["message"])
        return result

    def assert_not_called(self, **filters) -> replies.VerifyResult:
        return self.assert_called(times=0, **filters)

    # ---------------------------------------------------------------- consumer contracts
    def export(self, format, **params) -> replies.ExportDocument:
        """The calls (filtered as `calls`) as a pact or a HAR document (a dict)."""
        return self._control("GET", "/calls/export", params={"format": format, **{k: str(v) for k, v in
                                                                                  _in_query(**params).items()}})

    def export_pact(self, consumer="consumer", provider="idp-platform", spec=4, **filters) -> replies.ExportDocument:
        return self.export("pact", consumer=consumer, provider=provider, spec=spec, **filters)

    def export_har(self, **filters) -> replies.ExportDocument:
        return self.export("har", **filters)

    def write_pact(self, path, consumer="consumer", provider="idp-platform", spec=4, merge=True,
                   **filters) -> replies.ExportDocument:
        """Write the calls as a pact file; with `merge`, into the pact already at `path` (same consumer and
        provider: its interactions kept, the new ones added). The document written. A pact that no other mock
        could verify (its calls start from a private snapshot, which goes with the sandbox, or the journal gave
        up calls it relied on: the export's `unverifiable`) is not written: PactRefused says why, in one line."""
        document = self.export_pact(consumer=consumer, provider=provider, spec=spec, **filters)
        reasons = document.get("metadata", {}).get("idp-mockserver", {}).get("unverifiable")
        if reasons:
            raise PactRefused(path, reasons)
        return write_json(path, document, merge_pacts if merge else None)

    def write_har(self, path, **filters) -> replies.ExportDocument:
        return write_json(path, self.export_har(**filters), None)

    def provider_states(self, state=None, params=None, action=None) -> replies.ProviderStateResult:
        """The provider-state protocol a Pact verifier calls (state, params, action setup or teardown)."""
        return self._control("POST", "/provider-states", json=_given(state=state, params=params, action=action))

    # ---------------------------------------------------------------- deployments, webhooks, tokens
    def deployments(self) -> replies.Deployments:
        return self._control("GET", "/deployments")

    def deliveries(self, **filters) -> list[replies.Delivery]:
        return self._control("GET", "/webhooks/deliveries", params=_given(**filters))["results"]

    def mint_token(self, scopes=("Admin",), ttl_seconds=None, kind="token", organization=None, name=None) -> str:
        body = {"scopes": list(scopes), "kind": kind, **_given(ttl_seconds=ttl_seconds, organization=organization,
                                                                name=name)}
        return self._control("POST", "/tokens", json=body)["token"]

    # ---------------------------------------------------------------- scenarios
    def scenario(self, name, document) -> replies.Scenario:
        """Activate a scenario from YAML text or a dict, under `name` (a dict's own name may be left out). The same
        name again replaces it: a scenario is active once. A dict that names itself otherwise is refused."""
        if isinstance(document, dict):
            if document.get("name", name) != name:
                raise ValueError(f"scenario {name!r}: the document names itself {document['name']!r}; give one "
                                 "name (or leave the document's out)")
            document = json.dumps({**document, "name": name})
        return self._control("PUT", f"/scenarios/{name}", content=document.encode(),
                             headers={"Content-Type": "application/yaml"})

    def activate_scenario(self, document) -> replies.Scenario:
        """Activate a scenario document under the name it declares."""
        text = json.dumps(document) if isinstance(document, dict) else document
        return self._control("POST", "/scenarios", content=text.encode(), headers={"Content-Type": "application/yaml"})

    def scenarios(self) -> list[replies.Scenario]:
        return self._control("GET", "/scenarios")["results"]

    def get_scenario(self, name) -> replies.Scenario:
        return self._control("GET", f"/scenarios/{name}")

    def remove_scenario(self, name) -> None:
        self._control("DELETE", f"/scenarios/{name}")

    def scenario_schema(self) -> replies.ScenarioSchema:
        return self._control("GET", "/schemas/scenario.json", scoped=False)

    # ---------------------------------------------------------------- sandboxes
    def sandboxes(self) -> list[replies.Sandbox]:
        return self._control("GET", "/sandboxes", scoped=False)["results"]

    def delete_all_sandboxes(self) -> None:
        self._control("DELETE", "/sandboxes", scoped=False)

    def get_sandbox(self, name=None) -> replies.Sandbox:
        return self._control("GET", f"/sandboxes/{name or self._own_sandbox()}", scoped=False)

    def create_sandbox(self, name, **options) -> replies.Sandbox:
        """A fresh sandbox `name` (from the fixtures, or as the options say: clock, start, seed, rate_limit,
        scenarios, fixtures, snapshot, journal_body_limit, poll_progress, expires); the server's record of it."""
        return self._control("PUT", f"/sandboxes/{name}", scoped=False, json=options)

    def in_sandbox(self, name, **options) -> "Client":
        """A fresh sandbox `name` and a handle scoped to it, on the same mock. Over the network the handle has an
        HTTP client of its own whose relative URLs are the sandbox's (`box.http.get("/organization")`); in
        process it shares the mock's."""
        self.create_sandbox(name, **options)
        tokens = None if options.get("fixtures") else self._tokens
        shared = self.http if isinstance(self._owner, _Lifespan) else None
        return Client(self.root, control_token=self.control_token, sandbox=name, tokens=tokens, http=shared,
                      timeout=self.http.timeout, pool=self._pool)

    def delete_sandbox(self, name=None, snapshots=None) -> None:
        """Delete a sandbox (default: this handle's, with the private snapshots saved from it); `snapshots=
        "delete"` also deletes the shared snapshots saved from it."""
        if name is None or name == self.sandbox:
            for stored in self.private_snapshots.values():
                self._delete_quietly(f"/snapshots/{stored}")
            self.private_snapshots.clear()
        self._control("DELETE", f"/sandboxes/{name or self._own_sandbox()}", scoped=False,
                      params=_given(snapshots=snapshots))

    def reset_sandbox(self, name=None, scenarios=False) -> replies.Sandbox:
        return self._control("POST", f"/sandboxes/{name or self._own_sandbox()}/reset", scoped=False,
                             json={"scenarios": scenarios})

    def _own_sandbox(self):
        if not self.sandbox:
            raise ValueError("name the sandbox: this handle is the mock's root, not a sandbox")
        return self.sandbox

    # ---------------------------------------------------------------- snapshots
    def snapshots(self) -> list[replies.Snapshot]:
        return self._control("GET", "/snapshots", scoped=False)["results"]

    def snapshot(self, name, journal=False, replace=True, shared=False) -> replies.Snapshot:
        """Save this sandbox's world under `name`, to `restore(name)` later. Snapshots live in the server, shared
        by every sandbox: on a sandbox handle the name is made private to it (tests running in parallel may use
        the same name) and the snapshot goes with the sandbox; `shared=True` keeps the plain name, for other
        sandboxes to start from (`in_sandbox(other, snapshot=name)`). Without `journal` the snapshot keeps no
        calls, so a restore empties the journal."""
        stored = name
        if self.sandbox and not shared:
            stored = self.private_snapshots[name] = private_snapshot_name(self.sandbox, name)
        return self._control("POST", "/snapshots", json={"name": stored, "journal": journal, "replace": replace,
                                                         "private": stored != name})

    def restore(self, name) -> replies.RestoreResult:
        return self._control("POST", f"/snapshots/{self.private_snapshots.get(name, name)}/restore")

    def get_snapshot(self, name) -> replies.Snapshot:
        return self._control("GET", f"/snapshots/{self.private_snapshots.get(name, name)}", scoped=False)

    def delete_snapshot(self, name) -> None:
        self._control("DELETE", f"/snapshots/{self.private_snapshots.pop(name, name)}", scoped=False)

    def _delete_quietly(self, path):
        try:
            self._control("DELETE", path, scoped=False)
        except MockServerError as error:
            if error.status != 404:
                raise

    # ---------------------------------------------------------------- documents and the page
    def control_document(self) -> replies.ControlDocument:
        return self._control("GET", "/openapi.json", scoped=False)

    def inspector_url(self) -> str:
        """The inspector's page for this handle's sandbox (open it in a browser)."""
        return f"{self.url}/_mock/ui"

    # ---------------------------------------------------------------- the end
    def close(self):
        """Let go of the HTTP client (when this handle made it)."""
        if self._owns_http:
            self.http.close()

    def stop(self):
        """Close, and stop the mock this handle started (a process or a container); a connected mock runs on."""
        self.close()
        if self._owner is not None:
            self._owner.stop()
            self._owner = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def _stderr(line):
    print(line, file=sys.stderr, flush=True)


class _Lifespan:
    """An in-process mock's test client: leaving it runs the app's shutdown."""

    def __init__(self, http):
        self.http = http

    def stop(self):
        self.http.__exit__(None, None, None)
