"""Tracing with OpenTelemetry: off unless the standard `OTEL_*` environment turns it on, and free when off.

On, every API call is a server span that continues the caller's W3C trace context (`traceparent`,
`tracestate`), with child spans for the steps that cost (validation, the handler, the journal), and every
webhook delivery attempt is a client span in the trace of the call that caused it, whose `traceparent` the
receiver gets. The span of a call names its operation, sandbox, token, status, the scenario rule that fired,
the network fault it injected and, for a status read, the deployment state read (ATTRIBUTES).

Tracing is on when the OpenTelemetry SDK is installed (`pip install 'idp-mockserver[otel]'`) and
OTEL_TRACES_EXPORTER names an exporter (otlp, console) or, unset, when an OTLP endpoint is set. Everything
else (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER[_ARG], OTEL_EXPORTER_OTLP_*, OTEL_BSP_*)
is read by the SDK itself. Off, nothing of OpenTelemetry is imported and nothing here is on the request path:
`Pipeline.trace` (api/pipeline.py) swaps in the traced steps only when a `Tracer` exists, and a world's webhooks
ask for one span per attempt only when the world holds a tracer.
"""

import logging

from mockserver.core.errors import ApiError, StartupError
from mockserver.core.version import __version__

log = logging.getLogger("mockserver")
SERVICE = "idp-mockserver"
EXPORTERS = ("otlp", "console", "none")          # the values of OTEL_TRACES_EXPORTER understood here
ENDPOINTS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
CONTEXT_HEADERS = {b"traceparent": "traceparent", b"tracestate": "tracestate"}
WRITES_THAT_DEPLOY = 202                         # a reply of work queued: the calls whose deliveries may follow
# the server span's attributes: name -> what of the call (api/pipeline.py ApiCall) they hold
ATTRIBUTES = {
    "mock.operation_id": "operationId of the route (absent when none matched)",
    "mock.sandbox": "the sandbox that answered (default: the default sandbox)",
    "mock.token": "name of the caller's token (absent when not authenticated)",
    "mock.request_id": "the X-Request-Id of the reply",
    "mock.rule": "the scenario rule that fired (scenario/rule)",
    "mock.fault": "the network faults that rule injected (truncate, reset, dribble)",
    "mock.deployment.state": "the deployment state a status read returned",
    "http.response.status_code": "the status sent (0: a scenario dropped the connection)",
}


class TracingError(StartupError):
    """An OTEL_* setting the mock cannot trace with (an unknown exporter, a protocol not installed)."""


def from_environment(environ):
    """A `Tracer` when the environment turns tracing on and the SDK is installed, else None (a warning says
    when the environment asks for tracing but the SDK is missing)."""
    names = _exporters(environ)
    if not names:
        return None
    try:
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        log.warning("OTEL_TRACES_EXPORTER or an OTLP endpoint is set, but the OpenTelemetry SDK is not installed "
                    "(pip install 'idp-mockserver[otel]'): tracing is off")
        return None
    return Tracer([BatchSpanProcessor(_exporter(name, environ)) for name in names], environ, names)


def _exporters(environ):
    """The exporters the environment names (empty: tracing off)."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return []
    wanted = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if not wanted:
        return ["otlp"] if any(environ.get(name, "").strip() for name in ENDPOINTS) else []
    names = [name.strip() for name in wanted.split(",") if name.strip()]
    unknown = [name for name in names if name not in EXPORTERS]
    if unknown:
        raise TracingError(f"OTEL_TRACES_EXPORTER: {', '.join(unknown)} is not an exporter the mock knows: "
                           f"use {', '.join(EXPORTERS)}")
    return [name for name in names if name != "none"]


def _exporter(name, environ):
    if name == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter
        return ConsoleSpanExporter(service_name=None)
    protocol = (environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
                or "http/protobuf").strip().lower()
    try:
        if protocol == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # type: ignore
    except ImportError:
        package = "opentelemetry-exporter-otlp-proto-" + ("grpc" if protocol == "grpc" else "http")
        raise TracingError(f"OTEL_TRACES_EXPORTER=otlp ({protocol}) needs {package}: pip install "
                           f"'idp-mockserver[otel]'{' ' + package if protocol == 'grpc' else ''}") from None
    return OTLPSpanExporter()


class Tracer:
    """The spans of one server: its own TracerProvider (never the process's global one, so that two mocks in a
    process trace apart), fed to `processors`. `close()` exports what is left, at the stop."""

    def __init__(self, processors, environ=None, exporters=("in-process",)):
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
        environ = environ or {}
        named = "OTEL_SERVICE_NAME" in environ or "service.name=" in environ.get("OTEL_RESOURCE_ATTRIBUTES", "")
        resource = Resource.create({"service.version": __version__, **({} if named else {"service.name": SERVICE})})
        self.provider = TracerProvider(resource=resource)
        for processor in processors:
            self.provider.add_span_processor(processor)
        self.tracer = self.provider.get_tracer("mockserver", __version__)
        self.propagator = TraceContextTextMapPropagator()
        self.summary = (f"OpenTelemetry, service {resource.attributes.get('service.name')}, spans to "
                        f"{', '.join(exporters)} (the OTEL_* environment)")        # the start line says it

    def close(self):
        self.provider.shutdown()

    # ------------------------------------------------------------ an API call (api/pipeline.py)
    def serving(self, api):
        """`Pipeline.api` inside a server span that continues the caller's trace context."""
        from opentelemetry.trace import SpanKind
        start, extract = self.tracer.start_as_current_span, self.propagator.extract

        async def traced(rt, scope, receive, send, path, sandbox=None):
            carrier = {CONTEXT_HEADERS[name]: value.decode("latin-1") for name, value in scope["headers"]
                       if name in CONTEXT_HEADERS}
            with start(scope["method"], context=extract(carrier), kind=SpanKind.SERVER, record_exception=False,
                       set_status_on_exception=False,
                       attributes={"http.request.method": scope["method"], "url.path": scope["path"]}):
                await api(rt, scope, receive, send, path, sandbox)
        return traced

    def step(self, name, function):
        """`function` inside a child span `name` of the current span: an ApiError it raises is the status it
        becomes (`error.type`), anything else an error recorded on the span. Under a span the sampler dropped,
        no child span is made (it would be dropped too, at the cost of a span)."""
        from opentelemetry.trace import Status, StatusCode, get_current_span
        start = self.tracer.start_span             # not made current: nothing under a step makes spans

        def traced(*args):
            if not get_current_span().is_recording():
                return function(*args)
            span = start(name)
            try:
                return function(*args)
            except ApiError as error:
                span.set_attribute("error.type", str(error.status))
                raise
            except Exception as error:
                span.record_exception(error)
                span.set_status(Status(StatusCode.ERROR, type(error).__name__))
                raise
            finally:
                span.end()
        return traced

    def handling(self, handlers):
        """The handlers by operationId, each in a `handler` span; a status read notes the deployment state it
        returned on the call's span."""
        from opentelemetry.trace import get_current_span
        traced = {}
        for operation_id, handler in handlers.items():
            inner = self.step("handler", handler)
            if operation_id.endswith("Status"):
                inner = _noting_state(inner, get_current_span)
            traced[operation_id] = inner
        return traced

    def recording(self, record):
        """`record(call, rt, status, payload, reply_headers, trace_id=None)` (the journal) after the call's span
        got its attributes, in a `journal` span, with the trace id; a call that queued work keeps its trace
        context in its world, for the webhook deliveries it may cause."""
        from opentelemetry.trace import format_trace_id, get_current_span, set_span_in_context
        journal = self.step("journal", record)
        inject = self.propagator.inject

        def traced(call, rt, status, payload, reply_headers=()):
            span = get_current_span()
            if span.is_recording():
                describe(span, call, status)
            context = span.get_span_context()
            if not context.is_valid:
                return record(call, rt, status, payload, reply_headers)
            if status == WRITES_THAT_DEPLOY:
                carrier: dict[str, str] = {}
                inject(carrier, context=set_span_in_context(span))
                rt.webhooks.traced(call.call_id, carrier.get("traceparent"))
            return journal(call, rt, status, payload, reply_headers, format_trace_id(context.trace_id))
        return traced

    # ------------------------------------------------------------ a webhook delivery (world/webhooks.py)
    def attempt(self, delivery, number, cause, headers):
        """The span of one delivery attempt, in the trace of the call that caused it (`cause`: that call's
        `traceparent`, or None), its own context added to `headers` as `traceparent`."""
        from opentelemetry.trace import SpanKind, set_span_in_context
        parent = self.propagator.extract({"traceparent": cause}) if cause else None
        span = self.tracer.start_span("webhook delivery", context=parent, kind=SpanKind.CLIENT, attributes={
            "http.request.method": "POST", "url.full": delivery["target_url"].split("?", 1)[0],
            "mock.webhook.id": delivery["webhook_id"], "mock.delivery.id": delivery["id"],
            "mock.delivery.attempt": number, "mock.delivery.event": delivery["event_type"],
            "mock.delivery.caused_by_call": delivery["caused_by_call"] or 0})
        self.propagator.inject(headers, context=set_span_in_context(span))
        return span

    @staticmethod
    def attempted(span, attempt):
        """The attempt's outcome on its span, which ends."""
        from opentelemetry.trace import Status, StatusCode
        if attempt["status_code"] is not None:
            span.set_attribute("http.response.status_code", attempt["status_code"])
        if attempt["status_code"] is None or not 200 <= attempt["status_code"] < 300:
            span.set_attribute("error.type", str(attempt["status_code"] or "no reply"))
            span.set_status(Status(StatusCode.ERROR, attempt.get("error") or f"status {attempt['status_code']}"))
        span.end()


def describe(span, call, status):
    """The call's attributes on its server span (ATTRIBUTES), named `METHOD /path/{template}` once routed."""
    from opentelemetry.trace import Status, StatusCode
    operation = call.operation
    if operation is not None:
        span.update_name(f"{call.method} {operation.template}")
        span.set_attributes({"http.route": operation.template, "mock.operation_id": operation.operation_id})
    span.set_attributes({"http.response.status_code": status, "mock.sandbox": call.sandbox or "default",
                         "mock.request_id": call.request_id})
    if call.token is not None:
        span.set_attribute("mock.token", call.token.name)
    if call.rule is not None:
        span.set_attribute("mock.rule", call.rule)
    if call.faults:
        span.set_attribute("mock.fault", ", ".join(call.faults))
    if status >= 500 or status == 0:
        span.set_status(Status(StatusCode.ERROR))


def _noting_state(handler, current_span):
    """A status read's handler that notes the deployment state it returned on the call's span."""
    def traced(ctx):
        result = handler(ctx)
        if isinstance(result, dict):
            state = result.get("state") or result.get("status")
            if isinstance(state, str):
                current_span().set_attribute("mock.deployment.state", state)
        return result
    return traced
