"""Command line: `mockserver serve`, `check`, `export`, `usage`, `record`, `parity`, `mcp` and `campaign`.

Every option of `serve`, `check`, `record` and `parity` is a row of one table (OPTIONS): its flag, the environment
variables that may set it (the container sets them there; the first one set wins, and the
command line wins over all), how its text is read, its default and its help. A value that
cannot be read is one clear line naming the option or the variable and a non-zero exit, as is
a problem with a fixture or a scenario: never a traceback.
"""

import argparse
import errno
import os
import platform
import re
import socket
import sys
import time
from dataclasses import MISSING, dataclass, fields
from pathlib import Path

from mockserver.cli.values import non_negative, number, positive, whole
from mockserver.core.settings import MIN_HEADER_SIZE, ParitySettings, Settings, parse_rate, parse_size, scenario_paths
from mockserver.core.version import __version__
from mockserver.edge import cors
from mockserver.edge.accesslog import FORMATS
from mockserver.process import allocator


# ---------------------------------------------------------------- how option values are read
def one_of(*choices):
    def read(text):
        if text not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}, not {text!r}")
        return text
    return read


def flag(text):
    words = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False, "off": False}
    if str(text).strip().lower() not in words:
        raise ValueError(f"must be one of {', '.join(words)}, not {text!r}")
    return words[str(text).strip().lower()]


def origins(text):
    cors.parse(text)
    return text


def globs(text):
    """Path globs (`/application/*/status`), separated by ',' in an environment variable."""
    out = [part.strip() for part in str(text).split(",") if part.strip()]
    for glob in out:
        if not glob.startswith(("/", "*")):
            raise ValueError(f"a path glob starts with / (or *), not {glob!r}")
    return out


def names(text):
    """Names or globs, separated by ',' in an environment variable."""
    return [part.strip() for part in str(text).split(",") if part.strip()]


def url(text):
    """An http(s) URL with a host."""
    match = re.match(r"^https?://[^/\s?#]+", str(text).strip())
    if not match:
        raise ValueError(f"must be an http:// or https:// URL, not {str(text)[:80]!r}")
    return str(text).strip()


def header_size(text):
    """--max-header-size: a size that holds at least a request line and a few headers."""
    value = parse_size(text)
    if value < MIN_HEADER_SIZE:
        raise ValueError(f"must be at least {MIN_HEADER_SIZE} bytes (1KiB: a request line and a few headers), "
                         f"not {text!r}")
    return value


def port(text):
    value = whole(text)
    if not 0 <= value <= 65535:
        raise ValueError(f"must be a port number from 0 to 65535, not {text}")
    return value


@dataclass(frozen=True)
class Option:
    flag: str
    env: tuple
    read: object              # text -> value; raises ValueError naming the problem
    help: str
    metavar: str = None
    commands: tuple = ("serve",)      # an option of `serve` is one of `record` too
    name: str = None                  # where the value goes, when not the flag's name
    helps: tuple = ()                 # (command, help) where a command's help says it otherwise
    required: tuple = ()              # commands that need it (given here or by a variable): shown so in --help

    def help_for(self, command):
        """The help a command's --help shows: no command's help speaks of another command's options."""
        return dict(self.helps).get(command, self.help)

    @property
    def dest(self):
        return self.name or self.flag[2:].replace("-", "_")

    @property
    def default(self):
        """The value when neither the command line nor the environment gives one: the default of its field in
        Settings (or ParitySettings, for an option of parity alone), written there and nowhere else."""
        return default_of(SETTING.get(self.dest, self.dest))

    def of(self, command):
        return command in self.commands or (command == "record" and "serve" in self.commands)


REPEATED = ("--scenario", "--only", "--except", "--skip", "--allowed-hosts")      # options given once per value
SETTING = {"scenario": "scenarios"}                              # an option whose field has another name
FIELDS = {**{f.name: f for f in fields(ParitySettings)}, **{f.name: f for f in fields(Settings)}}


def default_of(name):
    """A field's default; None for one without (the upstream and token of a parity run, which it requires)."""
    field = FIELDS[name]
    if field.default is not MISSING:
        return field.default
    return None if field.default_factory is MISSING else field.default_factory()


OPTIONS = (
    Option("--fixtures", ("MOCKSERVER_FIXTURES",), Path, "folder of fixture YAML files (default: the "
           "embedded defaults; parity: of the mock it builds)", "DIR", ("serve", "check", "parity"),
           helps=(("serve", "folder of fixture YAML files (default: the embedded defaults)"),
                  ("check", "folder of fixture YAML files (default: the embedded defaults)"),
                  ("record", "folder of fixture YAML files: the world that answers what is not forwarded "
                             "(default: the embedded defaults)"),
                  ("parity", "folder of fixture YAML files of the mock it builds (default: the embedded "
                             "defaults)"))),
    Option("--scenario", ("MOCKSERVER_SCENARIOS",), scenario_paths, "scenario file or folder of them to "
           "activate; repeatable (the variable: files or folders separated by ':')", "PATH", ("serve", "check")),
    Option("--inject", ("MOCKSERVER_INJECT",), str, "a scenario file every sandbox runs, whatever its options say "
           "(its `scenarios` option, a snapshot, a reset): what `mockserver campaign` injects in each run", "FILE"),
    Option("--call-trail", ("MOCKSERVER_CALL_TRAIL",), str, "append every API call of every sandbox to this file, "
           "one JSON line each (as /_mock/calls shows it, with its sandbox): the calls of sandboxes deleted since "
           "stay there (what `mockserver campaign` reads of a run)", "FILE"),
    Option("--seed", ("MOCKSERVER_SEED",), whole, "seed of generated ids and fake data (default 1)", "N",
           ("serve", "check", "parity")),
    Option("--host", ("MOCKSERVER_HOST", "HOST", "UVICORN_HOST"), str, "address to listen on (default 127.0.0.1; "
           "0.0.0.0 in a container)", "ADDRESS"),
    Option("--port", ("MOCKSERVER_PORT", "PORT", "UVICORN_PORT"), port, "port to listen on (default 8080)",
           "PORT"),
    Option("--rate-limit", ("MOCKSERVER_RATE_LIMIT",), parse_rate, "requests per window per token, e.g. "
           "1000/3600, 5/10s, 100/1m (default: the fixtures' rate_limit, else 1000/3600)", "N/WINDOW"),
    Option("--clock", ("MOCKSERVER_CLOCK",), one_of("real", "manual"), "real: progressions follow the "
           "wall clock; manual: only POST /_mock/clock/advance moves it (default real)", "real|manual"),
    Option("--speed", ("MOCKSERVER_SPEED",), positive(number), "divide every step duration by this "
           "factor (default 1)", "FACTOR"),
    Option("--journal-size", ("MOCKSERVER_JOURNAL_SIZE",), positive(whole), "calls kept in each "
           "sandbox's journal (default 10000)", "N"),
    Option("--journal-memory", ("MOCKSERVER_JOURNAL_MEMORY",), parse_size, "memory all "
           "journals may hold together, e.g. 256MiB (default); past it the sandboxes holding most give up their "
           "oldest calls, counted as dropped", "SIZE"),
    Option("--journal-body-limit", ("MOCKSERVER_JOURNAL_BODY_LIMIT",), parse_size, "a request or "
           "reply body longer than this is journaled cut, and the call says so (default 64KiB)", "SIZE"),
    Option("--max-body", ("MOCKSERVER_MAX_BODY",), parse_size, "largest request body "
           "accepted, e.g. 1MiB or 65536; a larger one is a 413 (default 16MiB)", "SIZE"),
    Option("--jwt-secret", ("MOCKSERVER_JWT_SECRET",), str, "secret that signs and checks "
           "the JWTs the mock accepts (HS256; default mock-jwt-secret)", "SECRET"),
    Option("--log-level", ("MOCKSERVER_LOG_LEVEL",), one_of("critical", "error", "warning", "info", "debug"),
           "level of the server's own log (default warning)", "LEVEL"),
    Option("--cors-origins", ("MOCKSERVER_CORS_ORIGINS",), origins, "origins browser pages may call "
           "from: local (default: pages on localhost, 127.0.0.1, [::1]), a comma list such as "
           "local,https://console.example.test,http://10.0.0.*:*, * (any page, the API only), or off", "ORIGINS"),
    Option("--allowed-hosts", ("MOCKSERVER_ALLOWED_HOSTS",), names, "Host names the mock answers besides IP "
           "addresses, names of one label (localhost, a compose service) and names under .localhost: a name with a "
           "dot must be listed (*.example.test: any name under it; * turns the check off), else the request is a "
           "403, which keeps pages whose name was rebound to this address out (the variable: names separated by ',')",
           "NAME", name="allowed_hosts"),
    Option("--access-log", ("MOCKSERVER_ACCESS_LOG",), flag, "one line per API call on stdout "
           "(default off; the variable: 1/true/yes/on or 0/false/no/off)"),
    Option("--log-format", ("MOCKSERVER_LOG_FORMAT",), one_of(*FORMATS), "of the access log: text "
           "(default) or json, one object a line", "text|json"),
    Option("--self-check", ("MOCKSERVER_SELF_CHECK",), flag, "check every reply of the API against the "
           "document: a reply that breaks it is logged as a warning and counted in /_mock/health (default off; "
           "the variable: 1/true/yes/on)"),
    Option("--max-sandboxes", ("MOCKSERVER_MAX_SANDBOXES",), positive(whole), "sandboxes that may exist "
           "at once; one more is refused (default 1000)", "N"),
    Option("--sandbox-ttl", ("MOCKSERVER_SANDBOX_TTL",), positive(number), "seconds an idle sandbox "
           "lives, on the wall clock (default 3600)", "SECONDS"),
    Option("--sleep-after", ("MOCKSERVER_SLEEP_AFTER",), non_negative(number), "seconds after which an "
           "idle sandbox with nothing under way is kept compressed in memory until its next request (about a "
           "tenth of the memory; 0: never; default 30)", "SECONDS"),
    Option("--allocator", ("MOCKSERVER_ALLOCATOR",), one_of(*allocator.CHOICES), "memory allocator: "
           "jemalloc (where installed: Debian's libjemalloc2) costs the least CPU per request and "
           "hands the memory of deleted and sleeping sandboxes back to the system; malloc (the C library's own) "
           "hands it back too, at more CPU per request; pymalloc (Python's own) is cheap but keeps freed "
           "memory; auto (default): jemalloc where installed, else malloc. The process restarts itself once at "
           "start to apply it", "auto|jemalloc|malloc|pymalloc"),
    Option("--control-token", ("MOCKSERVER_CONTROL_TOKEN",), str, "require 'Authorization: Bearer "
           "<token>' on every /_mock route but health", "TOKEN"),
    Option("--webhook-allow-link-local", ("MOCKSERVER_WEBHOOK_ALLOW_LINK_LOCAL",), flag, "let webhooks target "
           "link-local addresses (169.254.0.0/16, fe80::/10) and cloud metadata services (169.254.169.254, "
           "fd00:ec2::254, metadata.google.internal ...), refused by default: they would let a caller of the API make "
           "the mock's machine hand over its cloud credentials (loopback and private addresses are allowed either "
           "way; default off; the variable: 1/true/yes/on)", None, ("serve", "check")),
    Option("--replica-name", ("MOCKSERVER_REPLICA",), str, "name of this replica behind a router: in "
           "/_mock/health and X-Mock-Replica", "NAME"),
    Option("--state-file", ("MOCKSERVER_STATE_FILE",), str, "keep every sandbox and snapshot in this "
           "file across restarts", "PATH"),
    Option("--save-interval", ("MOCKSERVER_SAVE_INTERVAL",), positive(number), "seconds between saves of "
           "the state file when something changed (default 5)", "SECONDS"),
    Option("--durability", ("MOCKSERVER_DURABILITY",), one_of("fsync", "write", "off"), "with --state-file, how "
           "far each change is written before its reply: fsync (default: on disk; neither a kill -9 nor a crash of "
           "the machine loses it), write (with the kernel: a kill -9 loses nothing), off (only the periodic save: "
           "a kill -9 loses up to the save interval)", "fsync|write|off"),
    Option("--damaged-log", ("MOCKSERVER_DAMAGED_LOG",), one_of("stop", "skip"), "with --state-file, what a "
           "change log damaged in its middle (a changed or lost byte, not a write cut short by a stop) does at start: "
           "stop (default: the start stops, naming the file and the record) or skip (the records in the damaged "
           "bytes are left out, each named in the log, and the damaged segments copied to FILE.damaged)",
           "stop|skip"),
    Option("--max-snapshots", ("MOCKSERVER_MAX_SNAPSHOTS",), positive(whole), "snapshots that may exist at "
           "once; one more is refused (default 200)", "N"),
    Option("--header-timeout", ("MOCKSERVER_HEADER_TIMEOUT",), positive(number), "seconds a request's line "
           "and headers may take to arrive; then 408 and the connection closed (default 10)", "SECONDS"),
    Option("--body-timeout", ("MOCKSERVER_BODY_TIMEOUT",), positive(number), "seconds a request's body may "
           "take to arrive after its headers; then 408 and the connection closed (default 30)", "SECONDS"),
    Option("--write-timeout", ("MOCKSERVER_WRITE_TIMEOUT",), positive(number), "seconds a reply may wait for "
           "its client to read any of it; then the connection is closed and its place freed (default 30)", "SECONDS"),
    Option("--max-header-size", ("MOCKSERVER_MAX_HEADER_SIZE",), header_size, "largest request line "
           "and headers together; larger is a 431 (default 64KiB, at least 1KiB)", "SIZE"),
    Option("--max-connections", ("MOCKSERVER_MAX_CONNECTIONS",), positive(whole), "connections open at "
           "once; one more replaces the longest-waiting one without a request in progress, else is a 503 "
           "(default 1000, lowered to fit the open-file limit)", "N"),
    Option("--shutdown-timeout", ("MOCKSERVER_SHUTDOWN_TIMEOUT",), non_negative(number), "seconds requests "
           "in progress may take to finish at shutdown before they are cancelled; the state file is saved "
           "after them either way (default 5)", "SECONDS"),
    Option("--exit-with-parent", ("MOCKSERVER_EXIT_WITH_PARENT",), flag, "stop (as on SIGTERM) when the process "
           "that started the mock ends, however it ends (a test runner killed with SIGKILL, say): what the "
           "harnesses ask of a local mock (default off; the variable: 1/true/yes/on)"),
    Option("--fresh", ("MOCKSERVER_FRESH",), flag, "start from the fixtures even when the state file "
           "holds a world (the file is kept as PATH.previous; default off; the variable: 1/true/yes/on)"),
    # ---- the recording proxy (contract/proxy.py) and the parity run (contract/parity.py)
    Option("--upstream", ("MOCKSERVER_UPSTREAM",), url, "base URL of the real platform: API requests are "
           "forwarded there and recorded (record; serve too), or the flow runs there (parity)", "URL",
           ("serve", "parity"), required=("record", "parity"),
           helps=(("serve", "base URL of the real platform: API requests are forwarded there and recorded, as "
                            "mockserver record does"),
                  ("record", "base URL of the real platform, required (or MOCKSERVER_UPSTREAM): API requests are "
                             "forwarded there and recorded"),
                  ("parity", "base URL of the real platform, required (or MOCKSERVER_UPSTREAM): the flow runs "
                             "there"))),
    Option("--only", ("MOCKSERVER_ONLY",), globs, "forward only the API paths this glob matches (a path such "
           "as /application/*/status or an operation's template); repeatable; the rest is answered by the mock "
           "(the variable: globs separated by ',')", "GLOB", name="only"),
    Option("--except", ("MOCKSERVER_EXCEPT",), globs, "answer the API paths this glob matches with the mock "
           "instead of forwarding them; repeatable", "GLOB", name="excluded"),
    Option("--har", ("MOCKSERVER_HAR",), Path, "write the forwarded exchanges to this file as HAR 1.2 when "
           "the recorder stops (redacted as the journal)", "FILE"),
    Option("--fixtures-out", ("MOCKSERVER_FIXTURES_OUT",), Path, "write what the upstream's replies showed "
           "to DIR/recorded.yaml as fixtures when the recorder stops (secret values never)", "DIR"),
    Option("--upstream-timeout", ("MOCKSERVER_UPSTREAM_TIMEOUT",), positive(number), "seconds the upstream "
           "may take to answer one request, its whole reply included (default 30; past it: 504)", "SECONDS",
           ("serve", "parity")),
    Option("--upstream-max-body", ("MOCKSERVER_UPSTREAM_MAX_BODY",), parse_size, "largest reply of the "
           "upstream, once unpacked (gzip, deflate) as on the wire; past it the caller gets a 502 (default 64MiB)",
           "SIZE"),
    Option("--token", ("MOCKSERVER_UPSTREAM_TOKEN",), str, "API token for the platform, required (better in the "
           "variable than on the command line; never printed)", "TOKEN", ("parity",), required=("parity",)),
    Option("--auth-scheme", ("MOCKSERVER_UPSTREAM_AUTH_SCHEME",), one_of("Token", "Bearer"), "scheme "
           "word the token is sent with (default Token)", "Token|Bearer", ("parity",)),
    Option("--flow", ("MOCKSERVER_PARITY_FLOW",), Path, "replay this HAR file or journal (GET /_mock/calls) "
           "instead of the built-in flow", "FILE", ("parity",)),
    Option("--allow-writes", ("MOCKSERVER_PARITY_ALLOW_WRITES",), flag, "run the steps that create, edit, "
           "deploy and delete (default: read-only); what they create is deleted at the end", None, ("parity",)),
    Option("--allow", ("MOCKSERVER_PARITY_ALLOW",), Path, "allow-list of known differences (YAML: "
           "operation, kind, path, reason): they do not fail the run", "FILE", ("parity",)),
    Option("--map", ("MOCKSERVER_PARITY_MAP",), Path, "ids of the platform and the mock's that are the same "
           "record (YAML: platform-id: mock-id), for a replayed flow", "FILE", ("parity",), name="mapping"),
    Option("--pace", ("MOCKSERVER_PARITY_PACE",), parse_rate, "requests to the platform per "
           "window, e.g. 900/1h (default 900/3600: under its 1000 an hour); 429 and Retry-After are honoured "
           "besides", "N/WINDOW", ("parity",)),
    Option("--poll-interval", ("MOCKSERVER_PARITY_POLL_INTERVAL",), positive(number), "seconds between two "
           "status reads while a deployment runs on the platform (default 5)", "SECONDS", ("parity",)),
    Option("--poll-timeout", ("MOCKSERVER_PARITY_POLL_TIMEOUT",), positive(number), "seconds a status "
           "is polled at most (default 1800)", "SECONDS", ("parity",)),
    Option("--max-wait", ("MOCKSERVER_PARITY_MAX_WAIT",), non_negative(number), "longest wait for the "
           "rate limit the run accepts; a longer one stops it (default 3600)", "SECONDS", ("parity",)),
    Option("--mock", ("MOCKSERVER_PARITY_MOCK_URL",), url, "a running mock to compare with (a sandbox is made there "
           "for the run and deleted after); default: a mock built here from --fixtures", "URL", ("parity",)),
    Option("--mock-token", ("MOCKSERVER_PARITY_MOCK_TOKEN",), str, "API token of the mock's "
           "fixtures (default mock-admin-token)", "TOKEN", ("parity",)),
    Option("--mock-control-token", ("MOCKSERVER_CONTROL_TOKEN",), str, "control token of the running mock "
           "(--mock), when it has one", "TOKEN", ("parity",)),
    Option("--markdown", ("MOCKSERVER_PARITY_MARKDOWN",), Path, "write the report as Markdown", "FILE",
           ("parity",)),
    Option("--json", ("MOCKSERVER_PARITY_JSON",), Path, "write the report as JSON", "FILE", ("parity",)),
    Option("--junit", ("MOCKSERVER_PARITY_JUNIT",), Path, "write the report as JUnit XML (a test case per "
           "operation)", "FILE", ("parity",)),
    Option("--skip", ("MOCKSERVER_PARITY_SKIP",), names, "leave out the steps of the "
           "operations this glob names (operationId, e.g. 'deploy*'); repeatable", "OPERATION", ("parity",)),
    Option("--git-url", ("MOCKSERVER_PARITY_GIT_URL",), url, "repository the built-in flow's application builds "
           "from (give one the platform can build)", "URL",
           ("parity",)),
)
ENVIRONMENT = {option.flag: option.env for option in OPTIONS}


# ---------------------------------------------------------------- the parser
def document_version():
    """info.version of the API document (read from its head, without loading the whole document)."""
    from mockserver.document.spec import DOCUMENT
    with open(DOCUMENT, encoding="utf-8") as handle:
        head = handle.read(4096)
    match = re.search(r"^info:\n(?:[ ].*\n)*?[ ]+version:\s*['\"]?([^'\"\n]+)", head, re.MULTILINE)
    return match[1].strip() if match else "unknown"


COMMANDS = ("serve", "check", "export", "usage", "record", "parity", "mcp", "campaign")


class UsageError(Exception):
    """An option error on the command line: one line (`--speed: must be ...`) and where the help is."""

    def __init__(self, message, prog):
        super().__init__(message)
        self.prog = prog


class Parser(argparse.ArgumentParser):
    """argparse, whose errors are one line and exit 2 (main) instead of the whole usage block; the options a
    command needs but may take from a variable (`needed`) are shown without brackets, as required."""

    needed: tuple = ()

    def error(self, message):
        raise UsageError(message, self.prog)

    def format_usage(self):
        return self._as_required(super().format_usage)

    def format_help(self):
        return self._as_required(super().format_help)

    def _as_required(self, write):
        for action in self.needed:
            action.required = True
        try:
            return write()
        finally:
            for action in self.needed:
                action.required = False


def usage_line(error, argv):
    """`mockserver: --speed: must be greater than 0, not 0 (mockserver serve --help)`: argparse's `argument X:`
    shortened to `X:`, and the help of the command the line named."""
    message = " ".join(str(error).split())
    message = re.sub(r"^argument ([^/:\s]+)(?:/[^:\s]+)?: ", r"\1: ", message)
    prog = error.prog
    if prog == "mockserver":                   # an error the top parser found (unrecognized arguments, ...)
        command = next((word for word in argv if word in COMMANDS), None)
        prog = f"mockserver {command}" if command else prog
    return f"mockserver: {message} ({prog} --help)"


class _Version(argparse.Action):
    """`--version`: the package, the API document it serves and the Python running it."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest, nargs=0, default=default, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"mockserver {__version__} (API document {document_version()}, "
              f"Python {platform.python_version()})")
        parser.exit()


def argument_type(option):
    """The option's reader as argparse wants it (its error becomes argparse's one-line message)."""
    def read(text):
        try:
            return option.read(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
    read.__name__ = option.dest
    return read


def epilog(options):
    """The environment variables of `options`, one line each, for --help."""
    lines = ["environment variables (an option given on the command line wins):"]
    lines += [f"  {', '.join(option.env):<44} {option.flag}" for option in options]
    return "\n".join(lines)


def command_parser(commands, name, text, description=None):
    options = [option for option in OPTIONS if option.of(name)]
    sub = commands.add_parser(name, help=text, description=description or text, epilog=epilog(options),
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    for option in options:
        text = option.help_for(name)
        if option.read is flag:
            action = sub.add_argument(option.flag, action=argparse.BooleanOptionalAction, default=None, help=text,
                                      dest=option.dest)
        elif option.flag in REPEATED:
            action = sub.add_argument(option.flag, action="append", type=argument_type(option), default=None,
                                      metavar=option.metavar, help=text, dest=option.dest)
        else:
            action = sub.add_argument(option.flag, type=argument_type(option), default=None,
                                      metavar=option.metavar, help=text, dest=option.dest)
        if name in option.required:
            sub.needed += (action,)
    return sub


def export_parser(commands):
    sub = commands.add_parser("export", help="write a running mock's state as a fixtures file",
                              formatter_class=argparse.RawDescriptionHelpFormatter,
                              epilog="environment variables (an option given on the command line wins):\n"
                                     "  MOCKSERVER_URL            --url\n  MOCKSERVER_CONTROL_TOKEN  --control-token")
    sub.add_argument("--url", default=os.environ.get("MOCKSERVER_URL"), required=not os.environ.get("MOCKSERVER_URL"),
                     help="base URL of the running mock (default: MOCKSERVER_URL)")
    sub.add_argument("--sandbox", help="export this sandbox instead of the default one")
    sub.add_argument("--include-secrets", action="store_true",
                     help="write secret values in clear instead of placeholders (never commit the result)")
    sub.add_argument("--control-token", default=os.environ.get("MOCKSERVER_CONTROL_TOKEN"),
                     help="token of the control API, when the mock requires one")
    sub.add_argument("-o", "--output", type=Path, help="file to write (default: standard output; a missing "
                                                       "folder is created)")


def usage_parser(commands):
    """`mockserver usage`: what a running mock's tests never used (GET /_mock/usage)."""
    sub = commands.add_parser("usage", help="list the scenario rules a running mock's tests never fired and the "
                                            "operations they never called",
                              formatter_class=argparse.RawDescriptionHelpFormatter,
                              description="Of every sandbox of a running mock (or of those whose name starts with "
                                          "--prefix, or of one --sandbox), the sandboxes already deleted or reset "
                                          "included: the scenario rules that never fired and the operations never "
                                          "called. Exit 0; 1 with --fail-on-unused when a rule never fired; 2 when "
                                          "the mock cannot be asked.",
                              epilog="environment variables (an option given on the command line wins):\n"
                                     "  MOCKSERVER_URL            --url\n  MOCKSERVER_CONTROL_TOKEN  --control-token")
    sub.add_argument("--url", default=os.environ.get("MOCKSERVER_URL"), required=not os.environ.get("MOCKSERVER_URL"),
                     help="base URL of the running mock (default: MOCKSERVER_URL)")
    place = sub.add_mutually_exclusive_group()
    place.add_argument("--prefix", default="", help="only the sandboxes whose name starts with this (a CI job id)")
    place.add_argument("--sandbox", help="only this sandbox, as it is now")
    sub.add_argument("--fail-on-unused", action="store_true", help="exit 1 when a scenario rule never fired")
    sub.add_argument("--json", action="store_true", help="print the report as JSON instead of lines")
    sub.add_argument("--control-token", default=os.environ.get("MOCKSERVER_CONTROL_TOKEN"),
                     help="token of the control API, when the mock requires one")


def mcp_parser(commands):
    """`mockserver mcp` (cli/mcp.py): its options are its own, read here like export's."""
    sub = commands.add_parser("mcp", help="an MCP server (stdio) that lets coding agents test against a sandbox",
                              formatter_class=argparse.RawDescriptionHelpFormatter,
                              description="An MCP server on stdin/stdout whose tools act on one sandbox of a mock: "
                                          "read the API document, make and delete the sandbox, load a scenario, "
                                          "advance its clock, call its API, read and verify its journal, export a "
                                          "pact. Needs the extra: pip install 'idp-mockserver[mcp]'.",
                              epilog="environment variables (an option given on the command line wins):\n"
                                     "  MOCKSERVER_URL               --url\n"
                                     "  MOCKSERVER_CONTROL_TOKEN     --control-token\n"
                                     "  MOCKSERVER_MCP_SANDBOX       --sandbox\n"
                                     "  MOCKSERVER_MCP_ALLOW_GLOBAL  --allow-global (1/true/yes/on)")
    sub.add_argument("--url", default=os.environ.get("MOCKSERVER_URL"), help="base URL of a running mock (default: "
                     "MOCKSERVER_URL; without either, a mock is started for the session and stopped at its end)")
    sub.add_argument("--sandbox", default=os.environ.get("MOCKSERVER_MCP_SANDBOX"), metavar="NAME",
                     help="the sandbox every tool acts on, made at start when missing (default: the one the agent "
                          "makes with the tool create_sandbox)")
    sub.add_argument("--allow-global", action="store_true", help="allow the global and destructive tools: list "
                     "every sandbox, delete any, reset any world including the default one (default: refused)",
                     default=os.environ.get("MOCKSERVER_MCP_ALLOW_GLOBAL", "").strip().lower() in ("1", "true", "yes",
                                                                                                  "on"))
    sub.add_argument("--control-token", default=os.environ.get("MOCKSERVER_CONTROL_TOKEN"),
                     help="token of the control API, when the mock requires one")


def parser():
    top = Parser(prog="mockserver", description=__doc__.split("\n")[0],
                                  formatter_class=argparse.RawDescriptionHelpFormatter,
                                  epilog=epilog(OPTIONS) + "\n\n`mockserver COMMAND --help` lists the options of "
                                                           "serve, check, export, usage, record, parity, mcp and "
                                                           "campaign.")
    top.add_argument("--version", action=_Version, help="print the package, API document and Python versions")
    commands = top.add_subparsers(dest="command", required=True)
    command_parser(commands, "serve", "run the mock server")
    check = command_parser(commands, "check", "check the document, fixtures and scenarios")
    check.add_argument("paths", nargs="*", type=Path, metavar="PATH",
                       help="scenario files to check (the same as --scenario FILE), and at most one folder: the "
                            "fixtures folder to check (the same as --fixtures DIR)")
    export_parser(commands)
    usage_parser(commands)
    mcp_parser(commands)
    from mockserver.cli.campaign import add_parsers
    add_parsers(commands, Parser)
    command_parser(commands, "record", "run the mock as a recording proxy in front of the real platform",
                   "Run the mock as a recording proxy: API requests go to --upstream with the caller's "
                   "Authorization and come back unchanged; each exchange is checked against the mock's document "
                   "(its drift), journaled, and written with --har and --fixtures-out when the recorder stops. "
                   "--only/--except choose the paths forwarded; the mock answers the rest. Every serve option "
                   "applies.")
    command_parser(commands, "parity", "compare the mock with the real platform, call by call",
                   "Run one flow (the built-in one, or --flow FILE) against --upstream and against a fresh "
                   "sandbox of the mock, and compare them call by call. Read-only unless --allow-writes; what it "
                   "creates is deleted at the end, also when interrupted. Exit 0: no drift (or only allowed "
                   "drift); 1: drift; 2: usage, connection or cleanup errors, or interrupted.")
    return top


# ---------------------------------------------------------------- from arguments and environment to settings
def value_of(option, args):
    """The command line's value, else the first environment variable set, else the default; a variable
    that cannot be read is a ValueError naming it."""
    given = getattr(args, option.dest, None)
    if given is not None:
        return [item for items in given for item in items] if option.flag in REPEATED else given
    for name in option.env:
        text = os.environ.get(name)
        if text:
            try:
                return option.read(text)
            except ValueError as error:
                raise ValueError(f"{name}={text[:200]!r}: {error} (it sets {option.flag})") from None
    return option.default


def settings_from(args):
    settings = Settings()
    for option in OPTIONS:
        if not option.of(args.command):
            continue
        value = value_of(option, args)
        if option.flag == "--rate-limit":
            if value is not None:
                settings.rate_limit, settings.rate_window = value
        elif option.flag == "--scenario":
            settings.scenarios = list(value)
        else:
            setattr(settings, option.dest, value)
    paths = getattr(args, "paths", None) or []
    folders = [path for path in paths if path.is_dir()]
    settings.scenarios = [*settings.scenarios, *(str(path) for path in paths if not path.is_dir())]
    if len(folders) > 1:
        raise ValueError(f"check: {len(folders)} folders given ({', '.join(map(str, folders))}): give one fixtures "
                         f"folder, and scenario files")
    folder = folders[0] if folders else None
    if folder is not None:
        if args.fixtures is not None and args.fixtures != folder:
            raise ValueError(f"check: two fixtures folders, {folder} and --fixtures {args.fixtures}: give one")
        settings.fixtures = folder
    if args.command == "record" and not settings.upstream:
        raise ValueError("record needs --upstream URL (or MOCKSERVER_UPSTREAM): the platform to forward to")
    given = [flag for flag, value in (("--only", settings.only), ("--except", settings.excluded),
                                      ("--har", settings.har), ("--fixtures-out", settings.fixtures_out)) if value]
    if given and not settings.upstream:
        raise ValueError(f"{', '.join(given)} need --upstream URL: they choose and keep what is forwarded")
    return settings


def parity_config(args):
    """The parity run's options; the upstream and its token are required."""
    values = {option.dest: value_of(option, args) for option in OPTIONS if option.of("parity")}
    values["timeout"] = values.pop("upstream_timeout")
    if not values["upstream"]:
        raise ValueError("parity needs --upstream URL (or MOCKSERVER_UPSTREAM): the platform to compare with")
    if not values["token"]:
        raise ValueError("parity needs --token TOKEN, or better MOCKSERVER_UPSTREAM_TOKEN: the platform's API token")
    return ParitySettings(**values)


def main(argv=None):
    try:
        args = parser().parse_args(argv)
    except UsageError as error:
        print(usage_line(error, sys.argv[1:] if argv is None else argv), file=sys.stderr)
        return 2
    try:
        if args.command == "export":
            return export(args)
        if args.command == "usage":
            return usage(args)
        if args.command == "campaign":
            from mockserver.cli.campaign import run as run_campaign
            return run_campaign(args)
        if args.command == "mcp":
            from mockserver.cli.mcp import run as run_mcp
            return run_mcp(args)
        if args.command == "parity":
            config = parity_config(args)
        else:
            settings = settings_from(args)
    except ValueError as error:
        print(f"mockserver: {error}", file=sys.stderr)
        return 2
    if args.command == "parity":
        from mockserver.app import MockServer
        from mockserver.contract.parity import run
        return run(config, MockServer)
    if args.command == "check":
        from mockserver.cli.check import run_check
        return run_check(settings)
    if argv is None:                           # the process's own command line: it may restart itself
        use_allocator(settings.allocator)
    return serve(settings, variables={"host": set_by_variable("--host", args), "port": set_by_variable("--port", args)})


def set_by_variable(flag, args):
    """The environment variable that set an option (PORT, UVICORN_HOST ...), None when the command line or the
    default did: the mock names it where it says where it listens."""
    option = next(option for option in OPTIONS if option.flag == flag)
    if getattr(args, option.dest, None) is not None:
        return None
    return next((name for name in option.env if os.environ.get(name)), None)


def use_allocator(wanted):
    """Run under the allocator asked for (process/allocator.py): Python reads PYTHONMALLOC and the loader LD_PRELOAD
    only at start, so the process replaces itself once (same pid, same arguments) with them set; nothing
    happens when they already say so. Exit 2 when the allocator asked for is not installed."""
    try:
        environ = allocator.environment(wanted, os.environ)
    except allocator.Unavailable as error:
        print(f"mockserver: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    if environ is None:
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, "-m", "mockserver", *sys.argv[1:]], environ)


# ---------------------------------------------------------------- the commands
def control_get(command, args, path, params):
    """GET a control route of the running mock at --url (for --sandbox, with --control-token): its reply, or None
    when it could not be asked or answered other than 200 (said in one line on stderr)."""
    import httpx
    url = f"{args.url.rstrip('/')}/_mock{path}"
    headers = {"X-Mock-Sandbox": args.sandbox} if args.sandbox else {}
    if args.control_token:
        headers["Authorization"] = f"Bearer {args.control_token}"
    try:
        reply = httpx.get(url, params=params, headers=headers, timeout=30)
    except httpx.HTTPError as error:
        print(f"mockserver {command}: cannot reach {url}: {error or type(error).__name__}", file=sys.stderr)
        return None
    if reply.status_code != 200:
        try:
            message = reply.json().get("message", "")
        except ValueError:
            message = reply.text.strip().splitlines()[0][:200] if reply.text.strip() else ""
        print(f"mockserver {command}: {url} answered {reply.status_code} {message}".rstrip(), file=sys.stderr)
        return None
    return reply


def export(args):
    """GET /_mock/state/export of a running mock, to a file or standard output; exit 2 on any failure."""
    reply = control_get("export", args, "/state/export", {"secrets": "include"} if args.include_secrets else {})
    if reply is None:
        return 2
    if args.output is None:
        sys.stdout.write(reply.text)
        return 0
    try:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(reply.text)
    except OSError as error:
        print(f"mockserver export: cannot write {args.output}: {error.strerror or error}", file=sys.stderr)
        return 2
    print(f"mockserver export: wrote {args.output}", file=sys.stderr)
    return 0


def usage(args):
    """GET /_mock/usage of a running mock, as lines (or JSON); exit 1 with --fail-on-unused when a rule never
    fired, 2 when the mock cannot be asked."""
    import json

    reply = control_get("usage", args, "/usage", {} if args.sandbox else {"scope": "mock", "prefix": args.prefix})
    if reply is None:
        return 2
    report = reply.json()
    print(json.dumps(report, indent=2) if args.json else "\n".join(usage_lines(report, args)))
    return 1 if args.fail_on_unused and report["rules"]["never_fired"] else 0


def usage_lines(report, args):
    """The report in a few lines: what it counted, the rules never fired, the operations never called."""
    rules, operations = report["rules"], report["operations"]
    counted = (f"sandbox {args.sandbox}" if args.sandbox else
               f"{report['sandboxes']} sandbox world(s)" + (f" named {args.prefix}*" if args.prefix else ""))
    lines = [f"mockserver usage of {counted}: {rules['fired']} of {rules['total']} scenario rule(s) fired, "
             f"{operations['called']} of {operations['total']} operation(s) called"]
    lines += [f"  rule never fired: {name}" for name in rules["never_fired"]]
    lines += [f"  operation never called: {name}" for name in operations["never_called"]]
    if report.get("journal_dropped"):
        lines.append(f"  ({report['journal_dropped']} call(s) no longer in a journal were not counted)")
    return lines


def guarded_protocol(settings, app=None):
    """uvicorn's protocol with the limits below HTTP (process/connections.py), handed `app` for the direct path
    (process/direct.py); the open-file limit raised first, and --max-connections lowered (and said so) when that
    limit cannot hold them."""
    from mockserver.process.connections import Limits, connection_budget, protocol, raise_fd_limit
    fd_limit = raise_fd_limit()
    connections = connection_budget(settings.max_connections, fd_limit)
    if connections < settings.max_connections:
        print(f"mockserver: the open-file limit is {fd_limit}: at most {connections} connections at once "
              f"(--max-connections {settings.max_connections} lowered)", file=sys.stderr, flush=True)
    return protocol(Limits(settings.header_timeout, settings.body_timeout, settings.max_header_size, connections,
                           settings.write_timeout), app)


def _public(address):
    return re.sub(r"//[^/@]*@", "//", address)


def serve(settings, variables=None):
    """Run the mock: exit 0 after a stop (Ctrl-C, SIGTERM), 1 when the last save of the state file failed or a
    recording's HAR file or fixtures could not be written, 2 when it cannot start (one line per problem).
    `variables`: the environment variables that set the host and the port, if any: named at the start, and when
    the port is busy."""
    variables = variables or {}
    from mockserver.app import MockServer
    from mockserver.core.errors import problems_of
    from mockserver.world.fixtures import folder_problem
    not_a_folder = folder_problem(settings.fixtures)
    if not_a_folder:
        print(f"mockserver: {not_a_folder}", file=sys.stderr)
        return 2
    try:
        server = MockServer(settings)
    except Exception as error:                 # one clear line per problem instead of a traceback
        for line in problems_of(error):
            print(f"mockserver: {line}", file=sys.stderr)
        return 2
    if settings.har and not Path(settings.har).parent.is_dir():       # a mistyped folder is not made
        print(f"mockserver: --har {settings.har}: the folder {Path(settings.har).parent} does not exist: make it "
              "first, or give a file in a folder that exists", file=sys.stderr)
        return 2
    try:                                       # after the world: its problems are named whatever the port
        listener = listen(settings.host, settings.port)
    except OSError as error:
        print(f"mockserver: {cannot_listen(settings.host, settings.port, error, variables.get('port'))}",
              file=sys.stderr)
        return 2
    import uvicorn

    from mockserver.process.collector import Collector
    from mockserver.process.stopping import Server
    server.collector = Collector()            # collections walk only what is young (process/collector.py)
    server.collector.install()
    server.shared.settle = server.collector.settle
    # no Server header (the platform names no server); a recording proxy sends the upstream's headers as they
    # came: no Date header of its own either. Proxy headers are not read: only `/` uses a forwarded scheme/host
    config = uvicorn.Config(server, host=settings.host, port=settings.port, log_level=settings.log_level,
                            access_log=False, lifespan="on", http=guarded_protocol(settings, server), ws="none",
                            loop="uvloop", timeout_graceful_shutdown=settings.shutdown_timeout, proxy_headers=False,
                            server_header=False, date_header=not settings.upstream)
    print("\n".join(start_lines(settings, server, listener.getsockname()[1], variables)), file=sys.stderr,
          flush=True)
    if settings.exit_with_parent:
        from mockserver.process import parent
        parent.watch()                         # the parent's end is a SIGTERM (process/parent.py)
    Server(config).run(sockets=[listener])     # a SIGINT or SIGTERM from now on stops it (process/stopping.py)
    # 1: the last save of the state file, or the HAR file or fixtures of a recording, could not be written
    # (each said in one line as it failed)
    if server.saver is not None and server.saver.final_error:
        return 1
    return 1 if server.recorder is not None and server.recorder.failures else 0


def listen(host, port):
    """A socket bound to host:port, for uvicorn to serve on: a busy port fails here, where it can be named."""
    family, kind, protocol, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                            flags=socket.AI_PASSIVE)[0]
    listener = socket.socket(family, kind, protocol)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(address)
        listener.listen(2048)                # listening at once: a second mock started meanwhile is refused
    except OSError:
        listener.close()
        raise
    return listener


def cannot_listen(host, port, error, port_from=None):
    """Why the mock cannot listen on host:port, with what to do about it (and the variable that chose the port)."""
    where = f"{host}:{port}"
    if error.errno == errno.EADDRINUSE:
        source = f" (from {port_from}={port})" if port_from else ""
        return (f"port {port}{source} is already in use on {host} (another mockserver, or another server?): stop "
                f"it, or choose another port with --port N (MOCKSERVER_PORT=N); --port 0 picks a free one")
    if error.errno == errno.EACCES:
        return f"not allowed to listen on {where} (ports below 1024 need privileges): choose --port 8080 or above"
    if error.errno == errno.EADDRNOTAVAIL:
        return f"{host} is not an address of this machine: use --host 127.0.0.1 (or 0.0.0.0 for every address)"
    return f"cannot listen on {where}: {error.strerror or error}"


def start_lines(settings, server, port, variables=None):
    """What the mock says when it starts: where it listens (and the variables that chose the address and the port),
    the world it serves, and where to look."""
    chosen = [f"{what} from {name}" for what, name in (("address", (variables or {}).get("host")),
                                                       ("port", (variables or {}).get("port"))) if name]
    host = settings.host
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else "[::1]" if host == "::" else (
        f"[{host}]" if ":" in host else host)
    base = f"http://{shown}:{port}"
    everywhere = " (every address)" if shown != host and f"[{host}]" != shown else ""
    lines = [f"mockserver {__version__} on {base}{everywhere}: clock {settings.clock}, "
             f"{len(server.scenarios.active)} scenario(s), at most {settings.max_sandboxes} sandboxes"
             + (f", forwarding to {_public(settings.upstream)}" if settings.upstream else "")
             + (f" ({', '.join(chosen)})" if chosen else "")]
    loaded = server.loaded
    if loaded["from"] == "state file":
        saved = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(loaded["saved_at"]))
        lines.append(f"  world        restored from the state file {loaded['state_file']} (saved {saved}: "
                     f"{loaded['sandboxes']} sandbox(es), {loaded['snapshots']} snapshot(s)); the fixtures in "
                     f"{loaded['fixtures']} were not replayed (--fresh starts from them)")
    else:
        lines.append(f"  world        the fixtures in {loaded['fixtures']}"
                     + (f" (--fresh: the state file was kept as {loaded['set_aside']})" if loaded.get("set_aside")
                        else "")
                     + (f"; saved to {settings.state_file}" if settings.state_file else ""))
    if server.tracer is not None:
        lines.append(f"  tracing      {server.tracer.summary}")
    lines += [f"  start here   {base}/", f"  inspector    {base}/_mock/ui", f"  API document {base}/openapi.json",
              f"  control API  {base}/_mock/openapi.json"]
    return lines
