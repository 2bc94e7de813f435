"""Command line: `mockserver serve`, `mockserver check` and `mockserver export`.

Every option of `serve` and `check` is a row of one table (OPTIONS): its flag, the environment
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
import signal
import socket
import sys
import time
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
    Option("--cors-origins", ("MOCKSERVER_CORS_ORIGINS",), origins, "*", "origins browser pages may call "
           "from: * (default), a comma list such as http://localhost:3000,http://localhost:*, or off", "ORIGINS"),
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
    Option("--control-token", ("MOCKSERVER_CONTROL_TOKEN",), str, None, "require 'Authorization: Bearer "
           "<token>' on every /_mock route but health", "TOKEN"),
    Option("--replica-name", ("MOCKSERVER_REPLICA",), str, None, "name of this replica behind a router: in "
           "/_mock/health and X-Mock-Replica", "NAME"),
    Option("--state-file", ("MOCKSERVER_STATE_FILE",), str, None, "keep every sandbox and snapshot in this "
           "file across restarts", "PATH"),
    Option("--save-interval", ("MOCKSERVER_SAVE_INTERVAL",), positive(number), 5.0, "seconds between saves of "
           "the state file when something changed (default 5)", "SECONDS"),
    Option("--fresh", ("MOCKSERVER_FRESH",), flag, False, "start from the fixtures even when the state file "
           "holds a world (the file is kept as PATH.previous; default off; the variable: 1/true/yes/on)"),
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
    return serve(settings)


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


def serve(settings):
    """Run the mock: exit 0 after a stop (Ctrl-C, SIGTERM), 1 when the last save of the state file failed,
    2 when it cannot start (one line per problem)."""
    from .app import MockServer
    from .check import problems_of
    try:
        listener = listen(settings.host, settings.port)
    except OSError as error:
        print(f"mockserver: {cannot_listen(settings.host, settings.port, error)}", file=sys.stderr)
        return 2
    try:
        server = MockServer(settings)
    except Exception as error:                 # one clear line per problem instead of a traceback
        listener.close()
        for line in problems_of(error):
            print(f"mockserver: {line}", file=sys.stderr)
        return 2
    import uvicorn

    from .collector import Collector
    server.collector = Collector()            # collections walk only what is young (collector.py)
    server.collector.install()
    config = uvicorn.Config(server, host=settings.host, port=settings.port, log_level=settings.log_level,
                            access_log=False, lifespan="on", http="httptools", loop="uvloop")
    print("\n".join(start_lines(settings, server, listener.getsockname()[1])), file=sys.stderr, flush=True)
    for number in (signal.SIGINT, signal.SIGTERM):
        # uvicorn stops gracefully on these, then sends the signal again to whatever handled it before:
        # noted here, so that the exit status says how the stop went instead of a traceback or a signal
        signal.signal(number, lambda *_: None)
    uvicorn.Server(config).run(sockets=[listener])
    return 1 if server.saver is not None and server.saver.final_error else 0


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


def cannot_listen(host, port, error):
    """Why the mock cannot listen on host:port, with what to do about it."""
    where = f"{host}:{port}"
    if error.errno == errno.EADDRINUSE:
        return (f"port {port} is already in use on {host} (another mockserver, or another server?): stop it, "
                f"or choose another port with --port N (MOCKSERVER_PORT=N); --port 0 picks a free one")
    if error.errno == errno.EACCES:
        return f"not allowed to listen on {where} (ports below 1024 need privileges): choose --port 8080 or above"
    if error.errno == errno.EADDRNOTAVAIL:
        return f"{host} is not an address of this machine: use --host 127.0.0.1 (or 0.0.0.0 for every address)"
    return f"cannot listen on {where}: {error.strerror or error}"


def start_lines(settings, server, port):
    """What the mock says when it starts: where it listens, the world it serves, and where to look."""
    host = settings.host
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else "[::1]" if host == "::" else (
        f"[{host}]" if ":" in host else host)
    base = f"http://{shown}:{port}"
    everywhere = " (every address)" if shown != host and f"[{host}]" != shown else ""
    lines = [f"mockserver {__version__} on {base}{everywhere}: clock {settings.clock}, "
             f"{len(server.scenarios.active)} scenario(s), at most {settings.max_sandboxes} sandboxes"]
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
    lines += [f"  start here   {base}/", f"  inspector    {base}/_mock/ui", f"  API document {base}/openapi.json",
              f"  control API  {base}/_mock/openapi.json"]
    return lines
