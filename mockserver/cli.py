"""Command line: `mockserver serve`, `mockserver check` and `mockserver export`.

Options may also come from the environment (the container sets them there); ENVIRONMENT
lists the variables of each option and `--help` prints them. A problem with an option, a
fixture or a scenario is reported in one line per problem and a non-zero exit, never a traceback.
"""

import argparse
import os
import platform
import re
import sys
from pathlib import Path

from . import __version__, cors
from .accesslog import FORMATS
from .settings import Settings, default_fixtures, parse_rate, parse_size

# option -> the environment variables that set it (the first one set wins); the first three serve `check` too
ENVIRONMENT = {
    "--fixtures": ("MOCKSERVER_FIXTURES",),
    "--scenario": ("MOCKSERVER_SCENARIOS",),
    "--seed": ("MOCKSERVER_SEED",),
    "--host": ("MOCKSERVER_HOST", "HOST", "UVICORN_HOST"),
    "--port": ("MOCKSERVER_PORT", "PORT", "UVICORN_PORT"),
    "--rate-limit": ("MOCKSERVER_RATE_LIMIT",),
    "--clock": ("MOCKSERVER_CLOCK",),
    "--speed": ("MOCKSERVER_SPEED",),
    "--journal-size": ("MOCKSERVER_JOURNAL_SIZE",),
    "--journal-memory": ("MOCKSERVER_JOURNAL_MEMORY",),
    "--journal-body-limit": ("MOCKSERVER_JOURNAL_BODY_LIMIT",),
    "--max-body": ("MOCKSERVER_MAX_BODY",),
    "--jwt-secret": ("MOCKSERVER_JWT_SECRET",),
    "--log-level": ("MOCKSERVER_LOG_LEVEL",),
    "--cors-origins": ("MOCKSERVER_CORS_ORIGINS",),
    "--access-log": ("MOCKSERVER_ACCESS_LOG",),
    "--log-format": ("MOCKSERVER_LOG_FORMAT",),
    "--max-sandboxes": ("MOCKSERVER_MAX_SANDBOXES",),
    "--sandbox-ttl": ("MOCKSERVER_SANDBOX_TTL",),
    "--sleep-after": ("MOCKSERVER_SLEEP_AFTER",),
    "--control-token": ("MOCKSERVER_CONTROL_TOKEN",),
    "--replica-name": ("MOCKSERVER_REPLICA",),
    "--state-file": ("MOCKSERVER_STATE_FILE",),
    "--save-interval": ("MOCKSERVER_SAVE_INTERVAL",),
}
NOTES = {"--scenario": "a folder, or files separated by ':'", "--access-log": "1/true/yes/on or 0/false/no/off"}


def _env(*names, default=None):
    for name in names:
        if os.environ.get(name):
            return os.environ[name]
    return default


def _scenario_paths(values):
    out = []
    for value in values:
        for part in str(value).split(":"):
            if not part:
                continue
            path = Path(part)
            out += sorted(path.glob("*.y*ml")) if path.is_dir() else [path]
    return out


def _positive(kind):
    def parse(text):
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be greater than 0, not {text}")
        return value
    return parse


def _non_negative(kind):
    def parse(text):
        value = kind(text)
        if value < 0:
            raise argparse.ArgumentTypeError(f"must be 0 or more, not {text}")
        return value
    return parse


def _rate(text):
    try:
        return parse_rate(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _size(text):
    try:
        return parse_size(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _flag(text):
    words = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False, "off": False}
    if str(text).strip().lower() not in words:
        raise ValueError(f"MOCKSERVER_ACCESS_LOG must be one of {', '.join(words)}, not {text!r}")
    return words[str(text).strip().lower()]


def _origins(text):
    try:
        cors.parse(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


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


def epilog(options):
    """The environment variables of `options`, one line each, for --help."""
    lines = ["environment variables (an option given on the command line wins):"]
    for option in options:
        names = ", ".join(ENVIRONMENT[option])
        note = f" ({NOTES[option]})" if option in NOTES else ""
        lines.append(f"  {names:<44} {option}{note}")
    return "\n".join(lines)


def parser():
    top = argparse.ArgumentParser(prog="mockserver", description=__doc__.split("\n")[0],
                                  formatter_class=argparse.RawDescriptionHelpFormatter,
                                  epilog=epilog(ENVIRONMENT) + "\n\n`mockserver serve --help` and "
                                                              "`mockserver check --help` list their options.")
    top.add_argument("--version", action=_Version, help="print the package, API document and Python versions")
    commands = top.add_subparsers(dest="command", required=True)
    for name, text in (("serve", "run the mock server"), ("check", "check the document, fixtures and scenarios")):
        sub = commands.add_parser(name, help=text, description=text,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
        sub.add_argument("--fixtures", type=Path, default=Path(_env(*ENVIRONMENT["--fixtures"],
                                                                    default=default_fixtures())),
                         help="folder of fixture YAML files (default: the embedded defaults)")
        sub.add_argument("--scenario", action="append", default=[], metavar="FILE",
                         help="scenario file (or folder of them) to activate; repeatable")
        sub.add_argument("--seed", type=int, default=int(_env(*ENVIRONMENT["--seed"], default=1)),
                         help="seed of generated ids and fake data (default 1)")
        if name == "check":
            sub.epilog = epilog(("--fixtures", "--scenario", "--seed"))
        if name == "serve":
            sub.epilog = epilog(ENVIRONMENT)
            sub.add_argument("--host", default=_env(*ENVIRONMENT["--host"], default="127.0.0.1"))
            sub.add_argument("--port", type=int, default=int(_env(*ENVIRONMENT["--port"], default=8080)))
            sub.add_argument("--rate-limit", type=_rate, default=None, metavar="N/WINDOW",
                             help="requests per window per token, e.g. 1000/3600, 5/10s, 100/1m "
                                  "(default: the fixtures' rate_limit, else 1000/3600)")
            sub.add_argument("--clock", choices=("real", "manual"),
                             default=_env(*ENVIRONMENT["--clock"], default="real"),
                             help="real: progressions follow the wall clock; manual: only POST /_mock/clock/advance")
            sub.add_argument("--speed", type=_positive(float), default=float(_env(*ENVIRONMENT["--speed"], default=1)),
                             help="divide every step duration by this factor (default 1)")
            sub.add_argument("--journal-size", type=_positive(int),
                             default=int(_env(*ENVIRONMENT["--journal-size"], default=10000)),
                             help="calls kept in each sandbox's journal (default 10000)")
            sub.add_argument("--journal-memory", type=_size, metavar="SIZE",
                             default=_env(*ENVIRONMENT["--journal-memory"], default="256MiB"),
                             help="memory all journals may hold together, e.g. 256MiB (default); past it the "
                                  "sandboxes holding most give up their oldest calls, counted as dropped")
            sub.add_argument("--journal-body-limit", type=_size, metavar="SIZE",
                             default=_env(*ENVIRONMENT["--journal-body-limit"], default="64KiB"),
                             help="a request or reply body longer than this is journaled cut, and the call "
                                  "says so (default 64KiB)")
            sub.add_argument("--max-body", type=_positive(int), metavar="BYTES",
                             default=int(_env(*ENVIRONMENT["--max-body"], default=16 * 1024 * 1024)),
                             help="largest request body accepted; a larger one is a 413 (default 16 MiB)")
            sub.add_argument("--jwt-secret", default=_env(*ENVIRONMENT["--jwt-secret"], default="mock-jwt-secret"))
            sub.add_argument("--log-level", default=_env(*ENVIRONMENT["--log-level"], default="warning"),
                             choices=("critical", "error", "warning", "info", "debug"))
            sub.add_argument("--cors-origins", type=_origins, default=_env(*ENVIRONMENT["--cors-origins"], default="*"),
                             metavar="ORIGINS", help="origins browser pages may call from: * (default), a comma "
                             "list such as http://localhost:3000,http://localhost:*, or off")
            sub.add_argument("--access-log", action=argparse.BooleanOptionalAction,
                             default=_flag(_env(*ENVIRONMENT["--access-log"], default="off")),
                             help="one line per API call on stdout (default off)")
            sub.add_argument("--log-format", choices=FORMATS,
                             default=_env(*ENVIRONMENT["--log-format"], default="text"),
                             help="of the access log: text (default) or json, one object a line")
            sub.add_argument("--max-sandboxes", type=_positive(int),
                             default=int(_env(*ENVIRONMENT["--max-sandboxes"], default=1000)),
                             help="sandboxes that may exist at once; one more is refused (default 1000)")
            sub.add_argument("--sandbox-ttl", type=_positive(float),
                             default=float(_env(*ENVIRONMENT["--sandbox-ttl"], default=3600)),
                             help="seconds an idle sandbox lives, on the wall clock (default 3600)")
            sub.add_argument("--sleep-after", type=_non_negative(float),
                             default=float(_env(*ENVIRONMENT["--sleep-after"], default=30)),
                             help="seconds after which an idle sandbox with nothing under way is kept compressed "
                                  "in memory until its next request (about a tenth of the memory; 0: never; "
                                  "default 30)")
            sub.add_argument("--control-token", default=_env(*ENVIRONMENT["--control-token"]),
                             help="require 'Authorization: Bearer <token>' on every /_mock route but health")
            sub.add_argument("--state-file", default=_env(*ENVIRONMENT["--state-file"]), metavar="PATH",
                             help="keep every sandbox and snapshot in this file across restarts")
            sub.add_argument("--save-interval", type=_positive(float),
                             default=float(_env(*ENVIRONMENT["--save-interval"], default=5)),
                             help="seconds between saves of the state file when something changed (default 5)")
            sub.add_argument("--replica-name", default=_env(*ENVIRONMENT["--replica-name"]),
                             help="name of this replica behind a router: in /_mock/health and X-Mock-Replica")
    sub = commands.add_parser("export", help="write a running mock's state as a fixtures file",
                              formatter_class=argparse.RawDescriptionHelpFormatter,
                              epilog="environment variables (an option given on the command line wins):\n"
                                     "  MOCKSERVER_URL            --url\n  MOCKSERVER_CONTROL_TOKEN  --control-token")
    sub.add_argument("--url", default=_env("MOCKSERVER_URL"), required=not _env("MOCKSERVER_URL"),
                     help="base URL of the running mock (default: MOCKSERVER_URL)")
    sub.add_argument("--sandbox", help="export this sandbox instead of the default one")
    sub.add_argument("--include-secrets", action="store_true",
                     help="write secret values in clear instead of placeholders (never commit the result)")
    sub.add_argument("--control-token", default=_env("MOCKSERVER_CONTROL_TOKEN"),
                     help="token of the control API, when the mock requires one")
    sub.add_argument("-o", "--output", type=Path, help="file to write (default: standard output)")
    return top


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
        args.output.write_text(reply.text)
    except OSError as error:
        print(f"mockserver export: cannot write {args.output}: {error.strerror or error}", file=sys.stderr)
        return 2
    print(f"mockserver export: wrote {args.output}", file=sys.stderr)
    return 0


def settings_from(args):
    settings = Settings(fixtures=args.fixtures, seed=args.seed,
                        scenarios=_scenario_paths(args.scenario or [_env(*ENVIRONMENT["--scenario"], default="")]))
    if args.command == "serve":
        settings.host, settings.port, settings.clock = args.host, args.port, args.clock
        settings.speed, settings.journal_size, settings.max_body = args.speed, args.journal_size, args.max_body
        settings.journal_memory, settings.journal_body_limit = args.journal_memory, args.journal_body_limit
        settings.jwt_secret, settings.log_level = args.jwt_secret, args.log_level
        settings.max_sandboxes, settings.sandbox_ttl = args.max_sandboxes, args.sandbox_ttl
        settings.sleep_after = args.sleep_after
        settings.control_token, settings.replica_name = args.control_token or None, args.replica_name or None
        settings.state_file, settings.save_interval = args.state_file or None, args.save_interval
        settings.cors_origins, settings.access_log, settings.log_format = (args.cors_origins, args.access_log,
                                                                           args.log_format)
        if args.log_format not in FORMATS:
            raise ValueError(f"MOCKSERVER_LOG_FORMAT must be one of {', '.join(FORMATS)}, not {args.log_format!r}")
        from_env = _env(*ENVIRONMENT["--rate-limit"])
        rate = args.rate_limit or (parse_rate(from_env) if from_env else None)
        if rate:
            settings.rate_limit, settings.rate_window = rate
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
                            access_log=False, lifespan="on", http="httptools", loop="uvloop")
    print(f"mockserver {settings.host}:{settings.port} clock={settings.clock} fixtures={settings.fixtures} "
          f"scenarios={len(server.scenarios.active)} max-sandboxes={settings.max_sandboxes}", file=sys.stderr, flush=True)
    uvicorn.Server(config).run()
    return 0
