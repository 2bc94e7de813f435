"""OpenTelemetry tracing (edge/tracing.py): a call sent with a `traceparent` is a server span of that trace with
the call's attributes and child spans; the webhook delivery it causes is a span of the same trace whose
`traceparent` the receiver gets; the journal and the OTLP and console exporters carry the same trace id. Off
(the default), no OpenTelemetry module is imported and the request path is untouched."""

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from importlib.util import find_spec

import httpx
import pytest
from support import ROOT
from support.http import free_port, wait_for
from support.ids import ADMIN, APP, ORG
from support.live import LiveServer
from support.receiver import DEADLINE, Receiver

from mockserver.app import MockServer
from mockserver.core.settings import Settings
from mockserver.edge import tracing

needs_sdk = pytest.mark.skipif(find_spec("opentelemetry.sdk") is None, reason="the OpenTelemetry SDK is not installed")
TRACE = "0af7651916cd43dd8448eb211c80319c"
PARENT = "b7ad6b7169203331"
TRACEPARENT = f"00-{TRACE}-{PARENT}-01"
OFF = {name: value for name, value in os.environ.items() if not name.startswith("OTEL_")}


@contextlib.contextmanager
def serving(app):
    """The app under uvicorn in a thread, on a free loopback port (webhooks and network faults need sockets)."""
    import uvicorn

    from mockserver.process.connections import Limits, protocol
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error", lifespan="on",
                                           http=protocol(Limits(), app)))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_for(f"http://127.0.0.1:{port}/_mock/health")
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


@pytest.fixture(scope="module")
def traced(spec):
    """A mock (manual clock) whose spans go to an in-memory exporter, served on a real socket."""
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    exporter = InMemorySpanExporter()
    server = MockServer(Settings(clock="manual"), spec=spec, tracer=tracing.Tracer([SimpleSpanProcessor(exporter)]))
    with serving(server) as url, httpx.Client(base_url=url, headers=ADMIN, timeout=10) as http:
        yield http, exporter


@pytest.fixture
def mock(traced):
    http, exporter = traced
    assert http.post("/_mock/reset", json={"scenarios": True}).status_code == 200
    exporter.clear()
    return http, exporter


def spans_named(exporter, name):
    return [span for span in exporter.get_finished_spans() if span.name == name]


def wait_for_span(exporter, name, timeout=DEADLINE):
    """The one span of that name, once it ended (a delivery's span ends just after its receiver answered)."""
    deadline = time.monotonic() + timeout
    while not spans_named(exporter, name) and time.monotonic() < deadline:
        time.sleep(0.02)
    found = spans_named(exporter, name)
    assert len(found) == 1, f"{len(found)} span(s) named {name!r}"
    return found[0]


@needs_sdk
@pytest.mark.server
def test_a_call_continues_the_callers_trace_and_so_does_the_webhook_delivery_it_causes(mock):
    from opentelemetry.trace import SpanKind
    http, exporter = mock
    receiver = Receiver()
    try:
        hook = http.post(f"/organization/{ORG}/webhook",
                         json={"target_url": receiver.url, "events": ["DEPLOYMENT_STARTED"], "enabled": True})
        assert hook.status_code == 201, hook.text
        reply = http.post(f"/application/{APP}/deploy", json={},
                          headers={"traceparent": TRACEPARENT, "X-Request-Id": "traced-deploy"})
        assert reply.status_code == 202, reply.text
        assert http.post("/_mock/clock/advance", json={"seconds": 1}).status_code == 200
        got = receiver.wait_for(1)
    finally:
        receiver.stop()
    delivery = wait_for_span(exporter, "webhook delivery")
    calls = spans_named(exporter, "POST /application/{app_id}/deploy")
    assert len(calls) == 1
    call = calls[0]
    assert call.kind == SpanKind.SERVER
    assert f"{call.context.trace_id:032x}" == TRACE and f"{call.parent.span_id:016x}" == PARENT
    assert call.parent.is_remote
    attributes = dict(call.attributes)
    assert attributes["mock.operation_id"] == "deployApplication"
    assert attributes["mock.sandbox"] == "default" and attributes["mock.token"] == "admin"
    assert attributes["http.response.status_code"] == 202 and attributes["http.route"] == "/application/{app_id}/deploy"
    assert attributes["mock.request_id"] == "traced-deploy"
    children = {span.name for span in exporter.get_finished_spans() if span.parent is not None
                and span.parent.span_id == call.context.span_id}
    assert {"validate", "handler", "journal"} <= children
    assert delivery.kind == SpanKind.CLIENT and delivery.context.trace_id == call.context.trace_id
    assert delivery.parent.span_id == call.context.span_id
    assert delivery.attributes["http.response.status_code"] == 200
    assert delivery.attributes["mock.delivery.event"] == "DEPLOYMENT_STARTED"
    sent = got[0]["headers"]["traceparent"]
    assert sent == f"00-{TRACE}-{delivery.context.span_id:016x}-01"
    journaled = http.get("/_mock/calls", params={"request_id": "traced-deploy"}).json()["results"]
    assert [entry["trace_id"] for entry in journaled] == [TRACE]


@needs_sdk
@pytest.mark.server
def test_the_span_of_a_status_read_names_the_deployment_state_and_a_rule_its_fault(mock):
    http, exporter = mock
    assert http.get(f"/application/{APP}/status").status_code == 200
    state = http.get(f"/application/{APP}/status").json()["state"]
    read = spans_named(exporter, "GET /application/{app_id}/status")[-1]
    assert read.attributes["mock.deployment.state"] == state
    assert read.parent is None                                   # no traceparent sent: a trace of its own
    rule = {"name": "net", "rules": [{"name": "cut", "match": {"operation": "getOrganization", "nth": 1},
                                      "effect": {"truncate": {"bytes": 7}}}]}
    assert http.put("/_mock/scenarios/net", json=rule).status_code == 200
    with pytest.raises(httpx.RemoteProtocolError):
        http.get("/organization", headers={"traceparent": TRACEPARENT})
    cut = spans_named(exporter, "GET /organization")[-1]
    assert f"{cut.context.trace_id:032x}" == TRACE
    assert cut.attributes["mock.rule"] == "net/cut" and cut.attributes["mock.fault"] == "truncate"


@needs_sdk
@pytest.mark.server
def test_a_refused_call_is_traced_and_journaled_with_its_trace_too(mock):
    http, exporter = mock
    reply = http.get("/organization", headers={"traceparent": TRACEPARENT, "Authorization": "Token nope",
                                               "X-Request-Id": "refused"})
    assert reply.status_code == 401
    span = spans_named(exporter, "GET /organization")[-1]
    assert span.attributes["http.response.status_code"] == 401 and "mock.token" not in span.attributes
    assert [entry["trace_id"] for entry in http.get("/_mock/calls", params={"request_id": "refused"}).json()[
        "results"]] == [TRACE]


@needs_sdk
@pytest.mark.server
@pytest.mark.parametrize("sent", ["garbage", f"00-{'0' * 32}-{PARENT}-01", f"00-{TRACE}-{PARENT}-01-extra" + "x" * 500])
def test_a_malformed_traceparent_starts_a_trace_of_its_own(mock, sent):
    http, exporter = mock
    assert http.get("/organization", headers={"traceparent": sent, "X-Request-Id": "odd"}).status_code == 200
    span = spans_named(exporter, "GET /organization")[-1]
    assert span.parent is None and f"{span.context.trace_id:032x}" != TRACE
    journaled = http.get("/_mock/calls", params={"request_id": "odd"}).json()["results"]
    assert [entry["trace_id"] for entry in journaled] == [f"{span.context.trace_id:032x}"]


@needs_sdk
def test_every_world_holds_the_servers_tracer_and_a_server_without_one_reads_a_traced_world(spec):
    from mockserver.world.frozen import freeze, loads, thaw
    tracer = tracing.Tracer([])
    server = MockServer(Settings(clock="manual"), spec=spec, tracer=tracer)
    world = server.sandboxes.get("default").rt
    assert world.tracer is tracer
    data = freeze(world, server.shared)                      # written by reference, as the settings are
    assert thaw(data, server.shared).tracer is tracer
    untraced = MockServer(Settings(clock="manual"), spec=spec)
    assert untraced.tracer is None and loads(data, untraced.shared).tracer is None
    assert thaw(freeze(untraced.sandboxes.get("default").rt, untraced.shared), server.shared).tracer is tracer


@needs_sdk
@pytest.mark.server
def test_a_call_whose_caller_did_not_sample_its_trace_exports_no_span_but_keeps_its_trace_id(mock):
    http, exporter = mock
    unsampled = f"00-{TRACE}-{PARENT}-00"
    assert http.get("/organization", headers={"traceparent": unsampled, "X-Request-Id": "unsampled"}).status_code == 200
    assert exporter.get_finished_spans() == ()
    assert [entry["trace_id"] for entry in http.get("/_mock/calls", params={"request_id": "unsampled"}).json()[
        "results"]] == [TRACE]


@needs_sdk
@pytest.mark.parametrize("saved_traced", [False, True], ids=["saved untraced", "saved traced"])
def test_a_state_file_is_read_back_whether_the_server_that_saved_it_traced_or_not(spec, tmp_path, saved_traced):
    from mockserver.sandboxes.statefile import encode, save
    path = str(tmp_path / "state.bin")
    first = MockServer(Settings(clock="manual", state_file=path, durability="off"), spec=spec,
                       tracer=tracing.Tracer([]) if saved_traced else None)
    save(path, encode(first))
    first.release()                                  # its lock on the file: as at its stop
    for tracer in (tracing.Tracer([]), None):
        again = MockServer(Settings(clock="manual", state_file=path, durability="off"), spec=spec, tracer=tracer)
        assert again.loaded["from"] == "state file"
        assert again.sandboxes.get("default").rt.tracer is tracer
        again.release()


def served_in_a_process(environ):
    """A call answered by an in-process mock in a fresh interpreter: the OpenTelemetry modules it imported, whether
    it held a tracer, and the journaled call's keys."""
    code = """if True:
        import json, sys
        from starlette.testclient import TestClient
        from mockserver.app import MockServer
        from mockserver.core.settings import Settings
        server = MockServer(Settings(clock="manual"))
        with TestClient(server, headers={"Authorization": "Token mock-admin-token"}) as client:
            assert client.get("/organization", headers={"traceparent": "TRACEPARENT"}).status_code == 200
            call = client.get("/_mock/calls").json()["results"][-1]
        print(json.dumps({"imported": sorted(name for name in sys.modules if name.startswith("opentelemetry")),
                          "tracer": server.tracer is not None, "traced_api": "api" in vars(server.pipeline),
                          "keys": sorted(call)}))
    """.replace("TRACEPARENT", TRACEPARENT)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=environ, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("environ", [OFF, {**OFF, "OTEL_TRACES_EXPORTER": "none"},
                                     {**OFF, "OTEL_SERVICE_NAME": "mock", "OTEL_TRACES_SAMPLER": "always_on"}],
                         ids=["no OTEL_ variable", "exporter none", "no exporter named"])
def test_with_tracing_off_nothing_of_opentelemetry_is_imported_and_calls_carry_no_trace(environ):
    found = served_in_a_process(environ)
    assert found["imported"] == [] and not found["tracer"] and not found["traced_api"]
    assert "trace_id" not in found["keys"] and "request_id" in found["keys"]


def test_tracing_asked_for_without_the_sdk_is_off_with_a_warning(monkeypatch, caplog):
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace.export", None)     # as if not installed
    assert tracing.from_environment({"OTEL_TRACES_EXPORTER": "console"}) is None
    assert "the OpenTelemetry SDK is not installed" in caplog.text


def test_an_endpoint_alone_turns_otlp_on_and_an_unknown_exporter_is_named():
    assert tracing._exporters({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}) == ["otlp"]
    assert tracing._exporters({"OTEL_TRACES_EXPORTER": "console,none"}) == ["console"]
    assert tracing._exporters({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"}) == []
    with pytest.raises(tracing.TracingError, match="zipkin is not an exporter the mock knows"):
        tracing._exporters({"OTEL_TRACES_EXPORTER": "zipkin"})


@pytest.mark.server
def test_serve_with_an_unknown_exporter_stops_in_one_line():
    done = subprocess.run([sys.executable, "-m", "mockserver", "serve", "--port", "0"], cwd=ROOT,
                          env={**OFF, "OTEL_TRACES_EXPORTER": "jaeger"}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip() == ("mockserver: OTEL_TRACES_EXPORTER: jaeger is not an exporter the mock knows: "
                                   "use otlp, console, none")


@needs_sdk
@pytest.mark.server
def test_serve_exports_spans_over_otlp_to_a_collector(monkeypatch):
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    collector = Receiver()
    server = None
    try:
        _environ(monkeypatch, OTEL_EXPORTER_OTLP_ENDPOINT=collector.url, OTEL_SERVICE_NAME="checkout-mock",
                 OTEL_BSP_SCHEDULE_DELAY="50")
        server = LiveServer("--clock", "manual")
        reply = httpx.get(f"{server.url}/organization", headers={**ADMIN, "traceparent": TRACEPARENT})
        assert reply.status_code == 200
        posted = collector.wait_for(1, path="/v1/traces")
    finally:
        if server is not None:
            server.stop()
        collector.stop()
    assert {name.lower(): value for name, value in posted[0]["headers"].items()}["content-type"] == \
        "application/x-protobuf"
    export = ExportTraceServiceRequest.FromString(posted[0]["body"])
    resource = {item.key: item.value.string_value for item in export.resource_spans[0].resource.attributes}
    assert resource["service.name"] == "checkout-mock"
    spans = [span for group in export.resource_spans for scope in group.scope_spans for span in scope.spans]
    assert [(span.name, span.trace_id.hex(), span.parent_span_id.hex()) for span in spans
            if span.name == "GET /organization"] == [("GET /organization", TRACE, PARENT)]


@needs_sdk
@pytest.mark.server
def test_serve_prints_spans_with_the_console_exporter(monkeypatch):
    _environ(monkeypatch, OTEL_TRACES_EXPORTER="console")
    server = LiveServer("--clock", "manual")
    try:
        reply = httpx.get(f"{server.url}/organization", headers={**ADMIN, "traceparent": TRACEPARENT})
        assert reply.status_code == 200
    finally:
        server.stop()                                            # the stop exports what is left
    printed = server.process.stdout.read().decode()
    assert f'"trace_id": "0x{TRACE}"' in printed and '"name": "GET /organization"' in printed
    said = server.process.stderr.read().decode()
    assert "  tracing      OpenTelemetry, service idp-mockserver, spans to console (the OTEL_* environment)" in said


def _environ(monkeypatch, **values):
    """The environment a LiveServer gets (it passes os.environ on): only these OTEL_* variables."""
    for name in os.environ:
        if name.startswith("OTEL_"):
            monkeypatch.delenv(name)
    for name, value in values.items():
        monkeypatch.setenv(name, value)


@needs_sdk
@pytest.mark.server
@pytest.mark.browser
def test_the_inspector_shows_the_trace_id_beside_the_request_id(mock, page):
    from playwright.sync_api import expect
    http, _ = mock
    assert http.get("/organization", headers={"traceparent": TRACEPARENT, "X-Request-Id": "seen"}).status_code == 200
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{http.base_url}/_mock/ui#calls")
    page.locator("#call-rows tr").first.click()
    detail = page.locator("#call-detail")
    expect(detail).to_contain_text("Request id")
    expect(detail.locator("dd.trace-id")).to_have_text(TRACE)
    labels = detail.locator("dl.kv dt").all_inner_texts()
    assert labels.index("Trace id") == labels.index("Request id") + 1
    assert errors == []
