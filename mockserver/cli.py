"""Command line: `mockserver serve`, `mockserver check` and `mockserver export`.

Every option of `serve` and `check` is a row of one table (OPTIONS): its flag, the environment
variables that may set it (the container sets them there; the first one set wins, and the
command line wins over all), how its text is read, its default and its help. A value that
cannot be read is one clear line naming the option or the variable and a non-zero exit, as is
a problem with a fixture or a scenario: never a traceback.
"""

import argparse
import os
import platform
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from . import __version__, cors
from .accesslog import FORMATS
from .settings import Settings, default_fixtures, parse_rate, parse_size


# ---------------------------------------------------------------- how option values are read
def whole(text):
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"must be a whole number, not {text!r}") from None


def number(text):
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"must be a number, not {text!r}") from None


def positive(kind):
    def read(text):
        value = kind(text)
        if value <= 0:
            raise ValueError(f"must be greater than 0, not {text}")
        return value
    return read


def non_negative(kind):
    def read(text):
        value = kind(text)
        if value < 0:
            raise ValueError(f"must be 0 or more, not {text}")
        return value
    return read


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


def scenario_paths(text):
    """A scenario file, a folder of them, or several separated by ':'."""
    out = []
    for part in str(text).split(":"):
        if part:
            path = Path(part)
            out += sorted(path.glob("*.y*ml")) if path.is_dir() else [path]
    return out


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
    default: object           # the value when neither the command line nor the environment gives one
    help: str
    metavar: str = None
    commands: tuple = ("serve",)

    @property
    def dest(self):
        return self.flag[2:].replace("-", "_")


OPTIONS = (
    Option("--fixtures", ("MOCKSERVER_FIXTURES",), Path, None, "folder of fixture YAML files (default: the "
           "embedded defaults)", "DIR", ("serve", "check")),
    Option("--scenario", ("MOCKSERVER_SCENARIOS",), scenario_paths, [], "scenario file or folder of them to "
           "activate; repeatable (the variable: files or folders separated by ':')", "PATH", ("serve", "check")),
    Option("--seed", ("MOCKSERVER_SEED",), whole, 1, "seed of generated ids and fake data (default 1)", "N",
           ("serve", "check")),
    Option("--host", ("MOCKSERVER_HOST", "HOST", "UVICORN_HOST"), str, "127.0.0.1",
           "address to listen on (default 127.0.0.1; 0.0.0.0 in a container)", "ADDRESS"),
    Option("--port", ("MOCKSERVER_PORT", "PORT", "UVICORN_PORT"), port, 8080, "port to listen on (default 8080)",
           "PORT"),
    Option("--rate-limit", ("MOCKSERVER_RATE_LIMIT",), parse_rate, None, "requests per window per token, e.g. "
           "1000/3600, 5/10s, 100/1m (default: the fixtures' rate_limit, else 1000/3600)", "N/WINDOW"),
    Option("--clock", ("MOCKSERVER_CLOCK",), one_of("real", "manual"), "real", "real: progressions follow the "
           "wall clock; manual: only POST /_mock/clock/advance moves it (default real)", "real|manual"),
    Option("--speed", ("MOCKSERVER_SPEED",), positive(number), 1.0, "divide every step duration by this "
           "factor (default 1)", "FACTOR"),
    Option("--journal-size", ("MOCKSERVER_JOURNAL_SIZE",), positive(whole), 10000, "calls kept in each "
           "sandbox's journal (default 10000)", "N"),
    Option("--journal-memory", ("MOCKSERVER_JOURNAL_MEMORY",), parse_size, 256 * 1024 ** 2, "memory all "
           "journals may hold together, e.g. 256MiB (default); past it the sandboxes holding most give up their "
           "oldest calls, counted as dropped", "SIZE"),
    Option("--journal-body-limit", ("MOCKSERVER_JOURNAL_BODY_LIMIT",), parse_size, 64 * 1024, "a request or "
           "reply body longer than this is journaled cut, and the call says so (default 64KiB)", "SIZE"),
    Option("--max-body", ("MOCKSERVER_MAX_BODY",), positive(whole), 16 * 1024 ** 2, "largest request body "
           "accepted; a larger one is a 413 (default 16 MiB)", "BYTES"),
    Option("--jwt-secret", ("MOCKSERVER_JWT_SECRET",), str, "mock-jwt-secret", "secret that signs and checks "
           "the JWTs the mock accepts (HS256; default mock-jwt-secret)", "SECRET"),
    Option("--log-level", ("MOCKSERVER_LOG_LEVEL",), one_of("critical", "error", "warning", "info", "debug"),
           "warning", "level of the server's own log (default warning)", "LEVEL"),
    Option("--cors-origins", ("MOCKSERVER_CORS_ORIGINS",), origins, "local", "origins browser pages may call "
           "from: local (default: pages on localhost, 127.0.0.1, [::1]), a comma list such as "
           "local,https://console.example.test,http://10.0.0.*:*, * (any page, the API only), or off", "ORIGINS"),
    Option("--access-log", ("MOCKSERVER_ACCESS_LOG",), flag, False, "one line per API call on stdout "
           "(default off; the variable: 1/true/yes/on or 0/false/no/off)"),
    Option("--log-format", ("MOCKSERVER_LOG_FORMAT",), one_of(*FORMATS), "text", "of the access log: text "
           "(default) or json, one object a line", "text|json"),
    Option("--max-sandboxes", ("MOCKSERVER_MAX_SANDBOXES",), positive(whole), 1000, "sandboxes that may exist "
           "at once; one more is refused (default 1000)", "N"),
    Option("--sandbox-ttl", ("MOCKSERVER_SANDBOX_TTL",), positive(number), 3600.0, "seconds an idle sandbox "
           "lives, on the wall clock (default 3600)", "SECONDS"),
    Option("--sleep-after", ("MOCKSERVER_SLEEP_AFTER",), non_negative(number), 30.0, "seconds after which an "
           "idle sandbox with nothing under way is kept compressed in memory until its next request (about a "
           "tenth of the memory; 0: never; default 30)", "SECONDS"),
    Option("--allocator", ("MOCKSERVER_ALLOCATOR",), one_of("malloc", "pymalloc"), "malloc", "memory allocator: "
           "malloc (default) hands the memory of deleted and sleeping sandboxes back to the system; pymalloc, "
           "Python's own, costs about 5%% less CPU per request but keeps freed memory for its own reuse (the "
           "process restarts itself once at start to apply it, unless PYTHONMALLOC already says so)",
           "malloc|pymalloc"),
    Option("--control-token", ("MOCKSERVER_CONTROL_TOKEN",), str, None, "require 'Authorization: Bearer "
           "<token>' on every /_mock route but health", "TOKEN"),
    Option("--replica-name", ("MOCKSERVER_REPLICA",), str, None, "name of this replica behind a router: in "
           "/_mock/health and X-Mock-Replica", "NAME"),
    Option("--state-file", ("MOCKSERVER_STATE_FILE",), str, None, "keep every sandbox and snapshot in this "
           "file across restarts", "PATH"),
    Option("--save-interval", ("MOCKSERVER_SAVE_INTERVAL",), positive(number), 5.0, "seconds between saves of "
           "the state file when something changed (default 5)", "SECONDS"),
    Option("--max-snapshots", ("MOCKSERVER_MAX_SNAPSHOTS",), positive(whole), 200, "snapshots that may exist at "
           "once; one more is refused (default 200)", "N"),
    Option("--header-timeout", ("MOCKSERVER_HEADER_TIMEOUT",), positive(number), 10.0, "seconds a request's line "
           "and headers may take to arrive; then 408 and the connection closed (default 10)", "SECONDS"),
    Option("--body-timeout", ("MOCKSERVER_BODY_TIMEOUT",), positive(number), 30.0, "seconds a request's body may "
           "take to arrive after its headers; then 408 and the connection closed (default 30)", "SECONDS"),
    Option("--max-header-size", ("MOCKSERVER_MAX_HEADER_SIZE",), parse_size, 64 * 1024, "largest request line "
           "and headers together; larger is a 431 (default 64KiB)", "SIZE"),
    Option("--max-connections", ("MOCKSERVER_MAX_CONNECTIONS",), positive(whole), 1000, "connections open at "
           "once; one more replaces the longest-waiting one without a request in progress, else is a 503 "
           "(default 1000, lowered to fit the open-file limit)", "N"),
    Option("--shutdown-timeout", ("MOCKSERVER_SHUTDOWN_TIMEOUT",), non_negative(number), 5.0, "seconds requests "
           "in progress may take to finish at shutdown before they are cancelled; the state file is saved "
           "after them either way (default 5)", "SECONDS"),
)
ENVIRONMENT = {option.flag: option.env for option in OPTIONS}


# ---------------------------------------------------------------- the parser
def document_version():
    """info.version of the API document (read from its head, without loading the whole document)."""
    from .spec import DOCUMENT
    with open(DOCUMENT, encoding="utf-8") as handle:
        head = handle.read(4096)
    match = re.search(r"^info:\n(?:[ ].*\n)*?[ ]+version:\s*['\"]?([^'\"\n]+)", head, re.MULTILINE)
    return match[1].strip() if match else "unknown"


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


def command_parser(commands, name, text):
    options = [option for option in OPTIONS if name in option.commands]
    sub = commands.add_parser(name, help=text, description=text, epilog=epilog(options),
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    for option in options:
        if option.read is flag:
            sub.add_argument(option.flag, action=argparse.BooleanOptionalAction, default=None, help=option.help)
        elif option.flag == "--scenario":
            sub.add_argument(option.flag, action="append", type=argument_type(option), default=None,
                             metavar=option.metavar, help=option.help)
        else:
            sub.add_argument(option.flag, type=argument_type(option), default=None, metavar=option.metavar,
                             help=option.help)
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


def parser():
    top = argparse.ArgumentParser(prog="mockserver", description=__doc__.split("\n")[0],
                                  formatter_class=argparse.RawDescriptionHelpFormatter,
                                  epilog=epilog(OPTIONS) + "\n\n`mockserver serve --help`, `mockserver check "
                                                           "--help` and `mockserver export --help` list their options.")
    top.add_argument("--version", action=_Version, help="print the package, API document and Python versions")
    commands = top.add_subparsers(dest="command", required=True)
    command_parser(commands, "serve", "run the mock server")
    command_parser(commands, "check", "check the document, fixtures and scenarios")
    export_parser(commands)
    return top


# ---------------------------------------------------------------- from arguments and environment to settings
def value_of(option, args):
    """The command line's value, else the first environment variable set, else the default; a variable
    that cannot be read is a ValueError naming it."""
    given = getattr(args, option.dest, None)
    if given is not None:
        return [path for paths in given for path in paths] if option.flag == "--scenario" else given
    for name in option.env:
        text = os.environ.get(name)
        if text:
            try:
                return option.read(text)
            except ValueError as error:
                raise ValueError(f"{name}={text[:200]!r}: {error} (it sets {option.flag})") from None
    return default_fixtures() if option.flag == "--fixtures" else option.default


def settings_from(args):
    settings = Settings()
    for option in OPTIONS:
        if args.command not in option.commands:
            continue
        value = value_of(option, args)
        if option.flag == "--rate-limit":
            if value is not None:
                settings.rate_limit, settings.rate_window = value
        elif option.flag == "--scenario":
            settings.scenarios = list(value)
        else:
            setattr(settings, option.dest, value)
    return settings


def main(argv=None):
    try:
        args = parser().parse_args(argv)
        if args.command == "export":
            return export(args)
        settings = settings_from(args)
    except ValueError as error:
        print(f"mockserver: {error}", file=sys.stderr)
        return 2
    if args.command == "check":
        from .check import run_check
        return run_check(settings)
    if argv is None:                           # the process's own command line: it may restart itself
        use_allocator(settings.allocator)
    return serve(settings)


def use_allocator(wanted):
    """Run under the allocator asked for: Python reads PYTHONMALLOC only at start, so the process replaces
    itself once (same pid, same arguments) with it set; nothing happens when it is already in force."""
    if os.environ.get("PYTHONMALLOC", "pymalloc") == wanted:
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, "-m", "mockserver", *sys.argv[1:]],
              {**os.environ, "PYTHONMALLOC": wanted})


# ---------------------------------------------------------------- the commands
def export(args):
    """GET /_mock/state/export of a running mock, to a file or standard output; exit 2 on any failure."""
    import httpx
    url = f"{args.url.rstrip('/')}/_mock/state/export"
    headers = {"X-Mock-Sandbox": args.sandbox} if args.sandbox else {}
    if args.control_token:
        headers["Authorization"] = f"Bearer {args.control_token}"
    params = {"secrets": "include"} if args.include_secrets else {}
    try:
        reply = httpx.get(url, params=params, headers=headers, timeout=30)
    except httpx.HTTPError as error:
        print(f"mockserver export: cannot reach {url}: {error or type(error).__name__}", file=sys.stderr)
        return 2
    if reply.status_code != 200:
        try:
            message = reply.json().get("message", "")
        except ValueError:
            message = reply.text.strip().splitlines()[0] if reply.text.strip() else ""
        print(f"mockserver export: {url} answered {reply.status_code} {message}".rstrip(), file=sys.stderr)
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


def guarded_protocol(settings):
    """uvicorn's protocol with the limits below HTTP (connections.py); the open-file limit raised first, and
    --max-connections lowered (and said so) when that limit cannot hold them."""
    from .connections import Limits, connection_budget, protocol, raise_fd_limit
    fd_limit = raise_fd_limit()
    connections = connection_budget(settings.max_connections, fd_limit)
    if connections < settings.max_connections:
        print(f"mockserver: the open-file limit is {fd_limit}: at most {connections} connections at once "
              f"(--max-connections {settings.max_connections} lowered)", file=sys.stderr, flush=True)
    return protocol(Limits(settings.header_timeout, settings.body_timeout, settings.max_header_size, connections))


def serve(settings):
    from .app import MockServer
    from .check import problems_of
    try:
        server = MockServer(settings)
    except Exception as error:                 # one clear line per problem instead of a traceback
        for line in problems_of(error):
            print(f"mockserver: {line}", file=sys.stderr)
        return 2
    import uvicorn

    from .collector import Collector
    server.collector = Collector()            # collections walk only what is young (collector.py)
    server.collector.install()
    config = uvicorn.Config(server, host=settings.host, port=settings.port, log_level=settings.log_level,
                            access_log=False, lifespan="on", http=guarded_protocol(settings), ws="none",
                            loop="uvloop", timeout_graceful_shutdown=settings.shutdown_timeout)
    print(f"mockserver {settings.host}:{settings.port} clock={settings.clock} fixtures={settings.fixtures} "
          f"scenarios={len(server.scenarios.active)} max-sandboxes={settings.max_sandboxes}", file=sys.stderr, flush=True)
    uvicorn.Server(config).run()
    return 0
