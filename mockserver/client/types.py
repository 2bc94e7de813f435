"""The replies of the control API as TypedDicts: written by `python -m mockserver.client.generate`
from the control document (mockserver/document/control.yaml); do not edit."""

from typing import Any, Literal, NotRequired, TypedDict

# A record as the API returns it (its secret fields redacted); its shape is the API document's
Record = dict[str, Any]


class ErrorDetail(TypedDict):
    location: str
    message: str


class ErrorBody(TypedDict):
    status: int
    error: str
    message: str
    details: NotRequired[list[ErrorDetail]]


class SelfCheck(TypedDict):
    """With --self-check: replies of the API that broke its document"""
    violations: int
    newest: list[str]


class ChangeLogStatus(TypedDict):
    durability: Literal['fsync', 'write', 'off']
    promise: str
    segment: int
    changes_logged: int
    changes_refused: int
    failing: bool
    problem: str | None
    flushes: NotRequired[int]
    mean_flush_ms: NotRequired[float | None]


class StateFileStatus(TypedDict):
    """With --state-file, how saving goes"""
    path: str
    saves: int
    last_saved_at: str | None
    failing: bool
    failed_saves: int
    unsaved_changes: bool
    last_error: str | None
    last_error_at: str | None
    interval_seconds: float
    changes: ChangeLogStatus | str


StartedFrom = TypedDict("StartedFrom", {
    "from": Literal['fixtures', 'state file'],
    "fixtures": str,
    "state_file": NotRequired[str],
    "saved_at": NotRequired[str],
    "sandboxes": NotRequired[int],
    "snapshots": NotRequired[int],
    "set_aside": NotRequired[str | None],
})


class CollectorStatus(TypedDict):
    """The garbage collector's counts and pauses, by generation (gen0, gen1, gen2)"""
    collections: dict[str, int]
    max_pause_ms: dict[str, float]
    total_pause_ms: float
    pauses_ms_at_most: dict[str, int]


class HealthMemory(TypedDict):
    """What the process holds: its resident size, the bytes of every sandbox's journal together against their
    budget (--journal-memory), and, when served by `mockserver serve`, the collector's counts and pauses
    (collections walk only objects younger than a second; see docs/guide/operating.md).
    """
    rss_bytes: int | None
    journal_bytes: int
    journal_limit: int
    allocator: Literal['jemalloc', 'malloc', 'pymalloc', 'pymalloc+jemalloc']
    gc: NotRequired[CollectorStatus]


class Health(TypedDict):
    status: Literal['ok', 'degraded']
    version: str
    clock: Literal['real', 'manual']
    replica: str | None
    sandboxes: int
    uptime_seconds: float
    forwards: NotRequired[Literal['all', 'some']]
    memory: HealthMemory
    started_from: StartedFrom
    state_file: NotRequired[StateFileStatus]
    self_check: NotRequired[SelfCheck]
    problems: NotRequired[list[str]]


class ResetResult(TypedDict):
    reset: bool
    sandbox: str
    scenarios: list[str]


class State(TypedDict):
    sandbox: str
    counts: dict[str, int]
    tokens: list[str]
    active_deployments: int
    journal_entries: int


class TreeCounts(TypedDict):
    projects: int
    environments: int
    services: int
    clusters: int
    registries: int
    webhooks: int


class TreeNode(TypedDict):
    id: str
    name: str | None
    record: Record


class TreeService(TypedDict):
    id: str
    name: str | None
    record: Record
    type: Literal['APPLICATION', 'CONTAINER', 'DATABASE', 'JOB', 'HELM', 'TERRAFORM']


class TreeEnvironment(TypedDict):
    id: str
    name: str | None
    record: Record
    services: list[TreeService]


class TreeProject(TypedDict):
    id: str
    name: str | None
    record: Record
    environments: list[TreeEnvironment]


class TreeOrganization(TypedDict):
    id: str
    name: str | None
    record: Record
    projects: list[TreeProject]
    clusters: list[TreeNode]
    registries: list[TreeNode]
    webhooks: list[TreeNode]
    counts: TreeCounts


class StateTree(TypedDict):
    counts: dict[str, int]
    organizations: list[TreeOrganization]


class Clock(TypedDict):
    mode: Literal['real', 'manual']
    now: str
    epoch: float
    offset_seconds: float


class TruncatedBody(TypedDict):
    bytes: int
    kept: int


class DriftFinding(TypedDict):
    kind: str
    path: str
    message: str
    expected: NotRequired[Any]
    actual: NotRequired[Any]


class Call(TypedDict):
    id: int
    time: str
    received_at: str | None
    method: str
    path: str
    path_template: str | None
    operation: str | None
    query: dict[str, str]
    headers: dict[str, str]
    body: Any
    status: int
    response_headers: dict[str, str]
    response: Any
    duration_ms: float
    scenario_rule: str | None
    request_id: str
    trace_id: NotRequired[str]
    token: str | None
    webhook_deliveries: list[int]
    drift: NotRequired[list[DriftFinding]]
    truncated: NotRequired[dict[str, TruncatedBody]]


class CallPage(TypedDict):
    total: int
    dropped: int
    journal_size: int
    results: list[Call]
    more: bool
    next_after: NotRequired[int]


class CallsElsewhere(TypedDict):
    sandbox: str
    count: int
    calls: list[str]
    made_by_call: bool


class CallFilter(TypedDict):
    """The journal filters a reply applied, as they were sent"""
    method: NotRequired[str]
    path: NotRequired[str]
    operation: NotRequired[str]
    status: NotRequired[str | int]
    since: NotRequired[str | int]
    scenario: NotRequired[str]
    request_id: NotRequired[str]
    token: NotRequired[str]
    headers: NotRequired[dict[str, str]]
    body: NotRequired[dict[str, Any]]


class VerifyBounds(TypedDict):
    """the bounds asked for (times is reported as count); none given: at_least 1"""
    count: NotRequired[int]
    at_least: NotRequired[int]
    at_most: NotRequired[int]


class VerifyResult(TypedDict):
    ok: bool
    expected: VerifyBounds
    actual: int
    filters: CallFilter
    message: str
    matched: list[str]
    elsewhere: NotRequired[list[CallsElsewhere]]


class OperationCoverage(TypedDict):
    operation: str
    method: str
    path: str
    calls: int
    statuses: dict[str, int]
    reached: bool


class Coverage(TypedDict):
    operations: int
    called: int
    reached: int
    reached_percent: float
    never_reached: list[str]
    never_called: list[str]
    journal_entries: int
    dropped: int
    results: list[OperationCoverage]


class OperationsUsage(TypedDict):
    total: int
    called: int
    never_called: list[str]
    calls: dict[str, int]


class RuleUsage(TypedDict):
    rule: str
    scenario: str
    matched: int
    fired: int


class RulesUsage(TypedDict):
    total: int
    fired: int
    never_fired: list[str]
    results: list[RuleUsage]


class UsageReport(TypedDict):
    scope: Literal['sandbox', 'mock']
    sandbox: NotRequired[str]
    prefix: NotRequired[str]
    sandboxes: int
    forgotten_sandboxes: NotRequired[int]
    rules: RulesUsage
    operations: OperationsUsage
    journal_dropped: int


class HarCreator(TypedDict):
    name: str
    version: str


class HarLog(TypedDict):
    version: Literal['1.2']
    creator: HarCreator
    entries: list[dict[str, Any]]


class LeftOutCall(TypedDict):
    call: int
    operation: str | None
    status: int
    reason: str


class CutInteraction(TypedDict):
    description: str
    call: int
    bytes: int


class PactNotes(TypedDict):
    """What the mock says of the pact it wrote"""
    version: str
    source: str
    calls: int
    interactions: int
    cut: list[CutInteraction]
    left_out: list[LeftOutCall]
    dropped: int
    unverifiable: list[str]


class PactSpecification(TypedDict):
    version: Literal['4.0', '3.0.0']


PactMetadata = TypedDict("PactMetadata", {
    "pactSpecification": PactSpecification,
    "idp-mockserver": PactNotes,
})


class PactParty(TypedDict):
    name: str


class ExportDocument(TypedDict):
    """A pact (consumer, provider, interactions, metadata; format=pact) or a HAR document (log; format=har).
    Interactions and HAR entries are those formats' own objects.
    """
    consumer: NotRequired[PactParty]
    provider: NotRequired[PactParty]
    interactions: NotRequired[list[dict[str, Any]]]
    metadata: NotRequired[PactMetadata]
    log: NotRequired[HarLog]


class ProviderStateResult(TypedDict):
    state: str
    action: Literal['setup', 'teardown']
    sandbox: str
    done: list[str]


class CallRow(TypedDict):
    id: int
    time: str
    method: str
    path: str
    operation: str | None
    status: int
    duration_ms: float
    token: str | None
    scenario_rule: str | None
    fault: str | None
    drift: int | None


class CallRowPage(TypedDict):
    total: int
    newer: int
    journal_total: int
    dropped: int
    last_id: int
    results: list[CallRow]


class DeploymentStep(TypedDict):
    name: str
    state: str
    start: str | None
    end: str | None
    status: Literal['PENDING', 'ONGOING', 'SUCCESS', 'ERROR', 'CANCELED']
    duration_sec: int


class DeploymentInterval(TypedDict):
    state: str
    kind: Literal['queued', 'running', 'done', 'error', 'canceled']
    start: str | None
    end: str | None


class DeploymentTimeline(TypedDict):
    id: str
    action: Literal['DEPLOY', 'STOP', 'RESTART', 'DELETE', 'UNINSTALL', 'UPGRADE']
    target_id: str
    target_name: str | None
    target_type: str
    triggered_by: str | None
    call_id: int | None
    number: int
    created_at: str
    start_at: str | None
    end_at: str | None
    cancelled_at: str | None
    state: str
    status: Literal['QUEUED', 'ONGOING', 'SUCCESS', 'ERROR', 'CANCELED']
    outcome: str | None
    in_queue: bool
    intervals: list[DeploymentInterval]
    steps: list[DeploymentStep]


class DeploymentLane(TypedDict):
    id: str
    name: str | None
    type: str | None


class DeploymentProject(TypedDict):
    id: str
    name: str | None


class DeploymentGroup(TypedDict):
    """An environment (its services as lanes) or a cluster with upgrades"""
    kind: Literal['environment', 'cluster']
    id: str
    name: str | None
    project: DeploymentProject | None
    organization: str
    lanes: list[DeploymentLane]
    queue: list[str]
    requests: list[DeploymentTimeline]


class Deployments(TypedDict):
    clock: Clock
    results: list[DeploymentGroup]


class RuleWindow(TypedDict):
    """the rule's window as written, when it opened on the sandbox's clock, and the matching calls seen inside it"""
    start: NotRequired[str | float]
    after: NotRequired[float]
    seconds: NotRequired[float]
    calls: NotRequired[int]
    opened_at: str | None
    calls_in_window: int


class ScenarioRule(TypedDict):
    name: str
    phase: Literal['before_auth', 'after_validation', 'after_handler']
    match: dict[str, Any]
    effect: dict[str, Any]
    times: NotRequired[int]
    until: NotRequired[str]
    expired: NotRequired[bool]
    window: NotRequired[RuleWindow]
    matched: int
    fired: int


class Scenario(TypedDict):
    name: str
    source: str
    description: str
    rules: list[ScenarioRule]
    warnings: NotRequired[list[str]]


class ScenarioList(TypedDict):
    results: list[Scenario]


class DeliveryAttempt(TypedDict):
    number: int
    at: str
    status_code: int | None
    error: str | None
    duration_ms: float
    signature: str | None


class Delivery(TypedDict):
    id: int
    webhook_id: str
    event_type: str
    target_url: str
    payload: dict[str, Any]
    caused_by_call: int | None
    created_at: str
    status: Literal['PENDING', 'RETRYING', 'DELIVERED', 'FAILED']
    next_attempt_at: str | None
    attempts: list[DeliveryAttempt]


class DeliveryList(TypedDict):
    total: int
    results: list[Delivery]


class MintedToken(TypedDict):
    name: str
    token: str
    kind: Literal['token', 'jwt']
    scopes: list[Literal['Admin', 'Read', 'Write', 'Deploy']]
    organization: str
    expires_at: str | None


class SandboxExpiry(TypedDict):
    """as the sandbox was made with: it ends after `seconds` on its clock or after `calls` API calls"""
    seconds: NotRequired[float]
    calls: NotRequired[int]


class Sandbox(TypedDict):
    name: str
    source: str
    made_by: NotRequired[Literal['control', 'call']]
    created_at: str
    last_used_at: str
    calls: int
    resources: int
    journal_entries: int
    active_deployments: int
    scenarios: list[str]
    clock: Clock
    asleep: bool
    expires: NotRequired[SandboxExpiry]


class SandboxList(TypedDict):
    replica: str | None
    limit: int
    ttl_seconds: float
    results: list[Sandbox]


class Snapshot(TypedDict):
    """A saved world; the built-in `fixtures` has only name, sandbox (null), builtin and bytes"""
    name: str
    sandbox: str | None
    private: NotRequired[bool]
    builtin: NotRequired[bool]
    saved_at: NotRequired[str]
    clock_at: NotRequired[str]
    journal: NotRequired[bool]
    resources: NotRequired[int]
    bytes: int


class SnapshotList(TypedDict):
    results: list[Snapshot]


class RestoreResult(TypedDict):
    restored: str
    sandbox: str
    clock: Clock
    resources: int


ScenarioSchema = TypedDict("ScenarioSchema", {
    "$schema": str,
    "$id": NotRequired[str],
    "title": str,
    "description": NotRequired[str],
    "type": str,
    "required": NotRequired[list[str]],
    "additionalProperties": NotRequired[bool],
    "properties": dict[str, Any],
})


class PrivateSnapshotRule(TypedDict):
    """The name a client stores a sandbox's private snapshot under, the same in every language, so that tests
    running at once may give the same name: the name given cut to `head` characters, a dot, and the first
    `digest_chars` hex digits of the `digest` of `key` (with {sandbox} and {name} filled in)
    """
    head: int
    digest: Literal['sha1']
    digest_chars: int
    key: str


class JournalBodyLimits(TypedDict):
    """Bytes of a request or reply body a sandbox's journal keeps whole (larger ones are kept cut)"""
    server_default: int
    minimum: int
    maximum: int


class NameRule(TypedDict):
    """A sandbox's (and a snapshot's) name matches the pattern and is none of the reserved ones"""
    pattern: str
    reserved: list[str]


class DefaultToken(TypedDict):
    key: str
    name: str
    value: str
    scope: Literal['Admin', 'Read', 'Write', 'Deploy']


class Constants(TypedDict):
    """The facts every client holds the same (the document's x-constants). The control clients' constants modules
    are written from it by python -m mockserver.client.generate.
    """
    version: str
    default_tokens: list[DefaultToken]
    default_organization: str
    default_application: str
    sandbox_name: NameRule
    journal_body_limit: JournalBodyLimits
    harness_journal_body_limit: int
    private_snapshot: PrivateSnapshotRule


ControlDocument = TypedDict("ControlDocument", {
    "openapi": str,
    "info": dict[str, Any],
    "servers": NotRequired[list[dict[str, Any]]],
    "tags": NotRequired[list[dict[str, Any]]],
    "paths": dict[str, Any],
    "components": dict[str, Any],
    "x-constants": NotRequired[Constants],
})
