"""Settings of one mock server: every knob of the CLI and the container, with its default."""

import re
from dataclasses import dataclass, field
from pathlib import Path

MIN_HEADER_SIZE = 1024                    # --max-header-size: a request line and a few headers


def default_fixtures():
    """The fixtures shipped with the package (installed), or the repository's `fixtures/` (checkout)."""
    package = Path(__file__).resolve().parents[1]
    for candidate in (package / "default_fixtures", package.parent / "fixtures"):
        if (candidate / "organizations.yaml").is_file():
            return candidate
    return package / "default_fixtures"


@dataclass
class Settings:
    host: str = "127.0.0.1"
    port: int = 8080
    fixtures: Path = field(default_factory=default_fixtures)
    seed: int = 1
    rate_limit: int | None = None         # None: the fixtures' rate_limit, else 1000 per 3600 s
    rate_window: float | None = None
    clock: str = "real"
    speed: float = 1.0
    jwt_secret: str = "mock-jwt-secret"
    journal_size: int = 10000             # calls kept per sandbox
    journal_memory: int = 256 * 1024 * 1024   # bytes all journals of the server may hold together
    journal_body_limit: int = 64 * 1024       # bytes of a request or reply body a call keeps whole
    max_body: int = 16 * 1024 * 1024           # a Hypothesis string past a 64 KiB maxLength, \u-escaped, fits
    scenarios: list = field(default_factory=list)
    inject: str | None = None             # a scenario every sandbox has whatever its options (mockserver campaign)
    call_trail: str | None = None         # every API call of every sandbox appended there as a JSON line
    self_check: bool = False
    log_level: str = "warning"
    max_sandboxes: int = 1000
    sandbox_ttl: float = 3600.0           # seconds a sandbox may stay idle (wall clock) before it expires
    sleep_after: float = 30.0             # seconds idle before a quiet sandbox's world is kept compressed (0: never)
    control_token: str | None = None      # set: every /_mock route but health needs Bearer <token>
    webhook_allow_link_local: bool = False    # webhooks may target link-local and cloud metadata addresses too
    replica_name: str | None = None       # set: replies carry X-Mock-Replica and health names it
    allocator: str = "auto"               # of `mockserver serve` (process/allocator.py): auto, jemalloc, malloc...
    state_file: str | None = None         # set: sandboxes and snapshots kept there across restarts
    save_interval: float = 5.0            # seconds between saves of the state file (when something changed)
    durability: str = "fsync"             # how far a change is written before its reply (sandboxes/changelog.py)
    damaged_log: str = "stop"             # a change log damaged in its middle at start: stop, or skip its records
    exit_with_parent: bool = False        # stop when the process that started the mock ends (process/parent.py)
    fresh: bool = False                   # start from the fixtures even when the state file holds a world
    max_snapshots: int = 200              # snapshots that may exist at once (the built-in one not counted)
    header_timeout: float = 10.0          # seconds for a request's line and headers (then 408)
    body_timeout: float = 30.0            # seconds for a request's body after its headers (then 408)
    write_timeout: float = 30.0           # seconds a reply may wait for its client to read any of it (then closed)
    max_header_size: int = 64 * 1024      # bytes of request line and headers (then 431)
    max_connections: int = 1000           # open at once (lowered to fit the open-file limit)
    shutdown_timeout: float = 5.0         # seconds requests in progress may take at shutdown
    cors_origins: str = "local"           # local, *, a comma-separated list of origins (and local, *), or off
    allowed_hosts: list = field(default_factory=list)   # Host names served besides addresses and one-label names
    access_log: bool = False
    log_format: str = "text"              # of the access log: text or json
    upstream: str | None = None           # set: API requests are forwarded there and recorded (contract/proxy.py)
    upstream_timeout: float = 30.0        # seconds the upstream may take to answer a forwarded request, whole
    upstream_max_body: int = 64 * 1024 * 1024     # bytes an upstream's reply may unpack to (then 502)
    only: list = field(default_factory=list)      # path globs forwarded (none: every API path)
    excluded: list = field(default_factory=list)  # path globs answered by the mock instead (--except)
    har: str | None = None                # set: the recorded exchanges are written there as HAR 1.2
    fixtures_out: str | None = None       # set: what the replies showed is written there as fixtures



@dataclass
class ParitySettings:
    """Settings of a parity run (`mockserver parity`; contract/parity.py)."""
    upstream: str
    token: str
    auth_scheme: str = "Token"
    flow: Path | None = None
    allow_writes: bool = False
    allow: Path | None = None
    mapping: Path | None = None
    pace: tuple = (900, 3600.0)
    poll_interval: float = 5.0
    poll_timeout: float = 1800.0
    max_wait: float = 3600.0
    timeout: float = 30.0           # --upstream-timeout
    fixtures: Path | None = None
    seed: int = 1
    mock: str | None = None
    mock_token: str = "mock-admin-token"
    mock_control_token: str | None = None
    markdown: Path | None = None
    json: Path | None = None
    junit: Path | None = None
    skip: list = field(default_factory=list)
    git_url: str = "https://git.example.com/parity/hello.git"


_RATE = re.compile(r"^\s*(\d+)\s*/\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def scenario_paths(text):
    """A scenario file, a folder of them, or several separated by ':' (--scenario, MOCKSERVER_SCENARIOS)."""
    out = []
    for part in str(text).split(":"):
        if part:
            path = Path(part)
            out += sorted(path.glob("*.y*ml")) if path.is_dir() else [path]
    return out


def parse_rate(text):
    """'1000/3600', '5/10s', '100/1m', '1000/1h' -> (limit, window seconds)."""
    match = _RATE.match(str(text))
    if not match:
        raise ValueError(f"rate limit must look like N/WINDOW (e.g. 1000/3600 or 5/10s), not {text!r}")
    limit, window = int(match[1]), float(match[2]) * _UNITS[match[3]]
    if limit < 1 or window <= 0:
        raise ValueError(f"rate limit needs at least 1 request in a window longer than 0, not {text!r}")
    return limit, window


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmg]?)(i?b?)\s*$", re.IGNORECASE)
_SIZE_UNITS = {"": 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3}


def parse_size(text):
    """'268435456', '256MiB', '256M', '64k', '1.5GiB' -> bytes (units are powers of 1024)."""
    match = _SIZE.match(str(text))
    if not match:
        raise ValueError(f"a size must be a number of bytes, optionally with K, M or G (e.g. 256MiB), not {text!r}")
    value = int(float(match[1]) * _SIZE_UNITS[match[2].lower()])
    if value < 1:
        raise ValueError(f"a size must be at least 1 byte, not {text!r}")
    return value
