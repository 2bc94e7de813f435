"""The command line: `mockserver check` and `mockserver serve`, run as real processes (and `main()` in this
process where only the settings a start would use are looked at): what `check` reports, what `serve` answers
and prints at its start, and a start that cannot work stopped with one line and exit 2 (option errors,
non-finite numbers, a header size nothing fits in, a fixtures path that is a file, a busy port, an
environment variable's value), and help for every option."""

import json
import re
import shutil
import socket
import sys

import httpx
import pytest
import yaml
from support import ROOT
from support.cli import one_line, run
from support.http import free_port
from support.ids import ADMIN, ORG

from mockserver.app import MockServer
from mockserver.cli import main
from mockserver.core.settings import ParitySettings

FIXTURES = ROOT / "fixtures"


def fixtures_with(tmp_path, change):
    """A copy of the default fixtures with `change(organizations_document)` applied."""
    shutil.copy(FIXTURES / "tokens.yaml", tmp_path / "tokens.yaml")
    document = yaml.safe_load((FIXTURES / "organizations.yaml").read_text())
    change(document)
    (tmp_path / "organizations.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    return tmp_path


def lines_naming(text, needle):
    return [line for line in text.splitlines() if needle in line]


# ---------------------------------------------------------------- check
def test_check_on_defaults_exits_0_and_says_ok():
    result = run("check")
    assert result.returncode == 0, result.stderr
    assert "ok" in result.stdout


def test_check_reports_broken_yaml_in_one_line_naming_the_file(tmp_path):
    broken = tmp_path / "organizations.yaml"
    broken.write_text("organizations:\n  - id: x\n   name: [broken\n")
    result = run("check", "--fixtures", str(tmp_path))
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert len(lines_naming(output, str(broken))) == 1
    assert "Traceback" not in output


def test_check_reports_an_invalid_entry_with_its_location(tmp_path):
    def bogus_mode(document):
        document["organizations"][0]["projects"][0]["environments"][0]["mode"] = "BOGUS"
    folder = fixtures_with(tmp_path, bogus_mode)
    result = run("check", "--fixtures", str(folder))
    assert result.returncode != 0
    problems = lines_naming(result.stderr, "BOGUS")
    assert len(problems) == 1
    assert "organizations.yaml" in problems[0]
    assert "environment production.mode" in problems[0]
    assert "Traceback" not in result.stderr


def test_check_reports_every_problem_not_just_the_first(tmp_path):
    def two_problems(document):
        environments = document["organizations"][0]["projects"][0]["environments"]
        environments[0]["mode"] = "BOGUS"
        environments[1]["name"] = ""
    result = run("check", "--fixtures", str(fixtures_with(tmp_path, two_problems)))
    assert result.returncode != 0
    assert lines_naming(result.stderr, "BOGUS")
    assert lines_naming(result.stderr, ".name")
    assert "2 problem(s)" in result.stderr


def test_check_reports_a_missing_fixtures_folder(tmp_path):
    missing = tmp_path / "nowhere"
    result = run("check", "--fixtures", str(missing))
    assert result.returncode != 0
    assert lines_naming(result.stderr, str(missing))
    assert "Traceback" not in result.stderr


def test_check_of_a_file_as_fixtures_says_it_is_not_a_folder_and_as_an_argument_reads_it_as_a_scenario():
    result = run("check", "--fixtures", "README.md", timeout=60)
    assert result.returncode == 1, result.stderr
    assert "README.md: not a folder" in result.stderr and "not found" not in result.stderr
    assert "Traceback" not in result.stderr
    result = run("check", "README.md", timeout=60)
    assert result.returncode == 1 and "scenario: README.md:5:1: not valid YAML" in result.stderr


def test_check_reports_a_token_whose_organization_the_fixtures_lack(tmp_path):
    shutil.copy(FIXTURES / "organizations.yaml", tmp_path / "organizations.yaml")
    ghost = "00000000-0000-4000-8000-00000000dead"
    tokens = yaml.safe_load((FIXTURES / "tokens.yaml").read_text())
    tokens["tokens"].append({"name": "ghost", "value": "ghost-token", "organization": ghost, "scopes": ["Admin"]})
    (tmp_path / "tokens.yaml").write_text(yaml.safe_dump(tokens))
    result = run("check", str(tmp_path), timeout=60)
    assert result.returncode == 1, result.stderr
    lines = [line for line in result.stderr.splitlines() if ghost in line]
    assert len(lines) == 1 and "tokens[ghost]" in lines[0] and "404" in lines[0]
    assert "1 problem(s)" in result.stderr
    assert run("check", timeout=60).returncode == 0          # the default fixtures' tokens all have theirs


# ---------------------------------------------------------------- serve: bad options and fixtures
@pytest.mark.server
def test_serve_with_nonsense_rate_limit_exits_2_with_a_clear_message():
    result = run("serve", "--rate-limit", "nonsense")
    assert result.returncode == 2
    assert "--rate-limit" in result.stderr
    assert "N/WINDOW" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.server
def test_serve_with_nonsense_rate_limit_from_the_environment_exits_2():
    result = run("serve", env={"MOCKSERVER_RATE_LIMIT": "lots"})
    assert result.returncode == 2
    assert "lots" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.server
def test_serve_with_invalid_fixtures_exits_2_without_traceback(tmp_path):
    def bogus_mode(document):
        document["organizations"][0]["projects"][0]["environments"][0]["mode"] = "BOGUS"
    result = run("serve", "--port", "1", "--fixtures", str(fixtures_with(tmp_path, bogus_mode)), timeout=20)
    assert result.returncode == 2
    assert len(lines_naming(result.stderr, "BOGUS")) == 1
    assert "Traceback" not in result.stderr


# ---------------------------------------------------------------- serve: a live server
@pytest.mark.server
def test_serve_answers_the_api_on_its_port(live_server):
    server = live_server("--clock", "manual")
    reply = httpx.get(f"{server.url}/organization", headers=ADMIN, timeout=10)
    assert reply.status_code == 200
    assert reply.json()["id"] == ORG
    assert reply.headers["X-RateLimit-Limit"] == "1000"
    assert httpx.get(f"{server.url}/_mock/health", timeout=10).json()["clock"] == "manual"


@pytest.mark.server
def test_serve_rate_limit_option_wins_over_the_fixtures(live_server):
    server = live_server("--clock", "manual", "--rate-limit", "2/60s")
    with httpx.Client(base_url=server.url, headers=ADMIN, timeout=10) as http:
        assert [http.get("/organization").status_code for _ in range(3)] == [200, 200, 429]
        assert http.get("/organization").headers["X-RateLimit-Limit"] == "2"
        http.post("/_mock/clock/advance", json={"seconds": 61})
        assert http.get("/organization").status_code == 200


@pytest.mark.server
def test_serve_max_body_option_bounds_request_bodies(live_server):
    server = live_server("--clock", "manual", "--max-body", "200")
    url = f"{server.url}/organization/{ORG}/project"
    with httpx.Client(headers=ADMIN, timeout=10) as http:
        assert http.post(url, json={"name": "small"}).status_code == 201
        reply = http.post(url, json={"name": "big", "description": "x" * 300})
        assert reply.status_code == 413 and "200 bytes" in reply.json()["message"]
        assert [p["name"] for p in http.get(url).json()["results"]].count("big") == 0


def test_default_max_body_takes_the_longest_string_the_document_allows_escaped():
    """A string one past the document's longest maxLength, of astral characters sent as \\u escapes,
    fits the default limit, so schema fuzzers get a 400 naming the field rather than a 413."""
    from mockserver.core.settings import Settings
    document = (ROOT / "mockserver" / "document" / "openapi.yaml").read_text()
    longest = max(int(n) for n in re.findall(r"maxLength: (\d+)", document))
    assert longest >= 65536
    assert len(json.dumps({"content": "\U0002b31e" * (longest + 1)})) < Settings().max_body


# ---------------------------------------------------------------- serve: the start line
def start_lines(server):
    """The lines `serve` printed at its start (they come before it answers, so they are there to read)."""
    lines = []
    while not lines or not lines[-1].strip().startswith("control API"):
        line = server.process.stderr.readline().decode()
        assert line, f"the start lines ended early: {lines}"
        lines.append(line.rstrip("\n"))
    return lines


@pytest.mark.server
def test_the_start_line_prints_the_urls_to_open_and_each_answers(live_server):
    server = live_server("--clock", "manual")
    lines = start_lines(server)
    assert lines[0].startswith("mockserver ") and f"on {server.url}" in lines[0]
    assert any(line.strip() == f"world        the fixtures in {ROOT / 'fixtures'}" for line in lines)
    urls = {line.split()[-1] for line in lines[2:]}
    assert urls == {f"{server.url}/", f"{server.url}/_mock/ui", f"{server.url}/openapi.json",
                    f"{server.url}/_mock/openapi.json"}
    for url in urls:
        assert httpx.get(url, timeout=10).status_code == 200, url


# ---------------------------------------------------------------- --version, --help, the environment
def test_version_names_the_package_the_document_and_python():
    from mockserver.core.version import __version__
    from mockserver.document.spec import DOCUMENT
    result = run("--version")
    assert result.returncode == 0, result.stderr
    document = yaml.safe_load(DOCUMENT.read_text())["info"]["version"]
    python = ".".join(map(str, sys.version_info[:3]))
    assert result.stdout.strip() == f"mockserver {__version__} (API document {document}, Python {python})"


def test_help_lists_every_environment_variable_of_each_command():
    from mockserver.cli.main import OPTIONS
    for command in ("serve", "record", "parity"):
        text = run(command, "--help").stdout
        for option in (option for option in OPTIONS if option.of(command)):
            assert option.flag in text, (command, option.flag)
            for name in option.env:
                assert name in text, (command, name)
            assert option.help.split(" ")[0] in text
    check = run("check", "--help").stdout
    assert all(name in check for name in ("MOCKSERVER_FIXTURES", "MOCKSERVER_SCENARIOS", "MOCKSERVER_SEED"))
    assert "MOCKSERVER_PORT" not in check
    assert "MOCKSERVER_CORS_ORIGINS" in run("--help").stdout


def test_every_option_of_every_command_has_help_text():
    from mockserver.cli.main import OPTIONS
    for command in ("serve", "check", "record", "parity"):
        text = run(command, "--help").stdout
        for option in OPTIONS:
            if command in option.commands:
                assert len(option.help.split()) >= 3, option.flag
                assert option.flag in text
    text = run("serve", "--help").stdout
    assert "address to listen on" in text and "port to listen on" in text


# a valid value of each option, and how it shows in the settings
SAMPLES = {
    "--fixtures": ("/tmp/some-fixtures", lambda s: str(s.fixtures) == "/tmp/some-fixtures"),
    "--scenario": ("/tmp/a.yaml:/tmp/b.yaml",
                   lambda s: [str(p) for p in s.scenarios] == ["/tmp/a.yaml", "/tmp/b.yaml"]),
    "--seed": ("7", lambda s: s.seed == 7),
    "--host": ("0.0.0.0", lambda s: s.host == "0.0.0.0"),
    "--port": ("9123", lambda s: s.port == 9123),
    "--rate-limit": ("5/10s", lambda s: (s.rate_limit, s.rate_window) == (5, 10)),
    "--clock": ("manual", lambda s: s.clock == "manual"),
    "--speed": ("4", lambda s: s.speed == 4),
    "--journal-size": ("50", lambda s: s.journal_size == 50),
    "--journal-memory": ("64MiB", lambda s: s.journal_memory == 64 * 1024 * 1024),
    "--journal-body-limit": ("2k", lambda s: s.journal_body_limit == 2048),
    "--max-body": ("1.5k", lambda s: s.max_body == 1536),
    "--jwt-secret": ("s3", lambda s: s.jwt_secret == "s3"),
    "--log-level": ("debug", lambda s: s.log_level == "debug"),
    "--cors-origins": ("http://localhost:3000", lambda s: s.cors_origins == "http://localhost:3000"),
    "--access-log": ("on", lambda s: s.access_log is True),
    "--self-check": ("yes", lambda s: s.self_check is True),
    "--log-format": ("json", lambda s: s.log_format == "json"),
    "--max-sandboxes": ("12", lambda s: s.max_sandboxes == 12),
    "--sandbox-ttl": ("60", lambda s: s.sandbox_ttl == 60),
    "--sleep-after": ("0", lambda s: s.sleep_after == 0),
    "--allocator": ("pymalloc", lambda s: s.allocator == "pymalloc"),
    "--control-token": ("secret-ctl", lambda s: s.control_token == "secret-ctl"),
    "--webhook-allow-link-local": ("yes", lambda s: s.webhook_allow_link_local is True),
    "--allowed-hosts": ("mock.test,api.mock.test", lambda s: s.allowed_hosts == ["mock.test", "api.mock.test"]),
    "--durability": ("write", lambda s: s.durability == "write"),
    "--damaged-log": ("skip", lambda s: s.damaged_log == "skip"),
    "--inject": ("/tmp/fault.yaml", lambda s: s.inject == "/tmp/fault.yaml"),
    "--call-trail": ("/tmp/calls.jsonl", lambda s: s.call_trail == "/tmp/calls.jsonl"),
    "--upstream-max-body": ("2MiB", lambda s: s.upstream_max_body == 2 * 1024 * 1024),
    "--replica-name": ("r2", lambda s: s.replica_name == "r2"),
    "--state-file": ("/tmp/state.bin", lambda s: s.state_file == "/tmp/state.bin"),
    "--save-interval": ("2.5", lambda s: s.save_interval == 2.5),
    "--fresh": ("yes", lambda s: s.fresh is True),
    "--exit-with-parent": ("on", lambda s: s.exit_with_parent is True),
    "--max-snapshots": ("7", lambda s: s.max_snapshots == 7),
    "--header-timeout": ("2.5", lambda s: s.header_timeout == 2.5),
    "--body-timeout": ("4", lambda s: s.body_timeout == 4),
    "--write-timeout": ("6", lambda s: s.write_timeout == 6),
    "--max-header-size": ("16k", lambda s: s.max_header_size == 16 * 1024),
    "--max-connections": ("40", lambda s: s.max_connections == 40),
    "--shutdown-timeout": ("0", lambda s: s.shutdown_timeout == 0),
    "--upstream": ("https://api.platform.example", lambda s: s.upstream == "https://api.platform.example"),
    "--only": ("/project/*,/environment/*", lambda s: s.only == ["/project/*", "/environment/*"]),
    "--except": ("/organization", lambda s: s.excluded == ["/organization"]),
    "--har": ("/tmp/session.har", lambda s: str(s.har) == "/tmp/session.har"),
    "--fixtures-out": ("/tmp/recorded", lambda s: str(s.fixtures_out) == "/tmp/recorded"),
    "--upstream-timeout": ("7.5", lambda s: s.upstream_timeout == 7.5),
}
# options that need another one set beside them
ALONGSIDE = {flag: {"MOCKSERVER_UPSTREAM": "https://api.platform.example"}
             for flag in ("--only", "--except", "--har", "--fixtures-out")}
# a valid value of each option of `parity`, and how it shows in its configuration
PARITY_SAMPLES = {
    "--token": ("platform-token", lambda c: c.token == "platform-token"),
    "--auth-scheme": ("Bearer", lambda c: c.auth_scheme == "Bearer"),
    "--flow": ("/tmp/flow.har", lambda c: str(c.flow) == "/tmp/flow.har"),
    "--allow-writes": ("yes", lambda c: c.allow_writes is True),
    "--allow": ("/tmp/allow.yaml", lambda c: str(c.allow) == "/tmp/allow.yaml"),
    "--map": ("/tmp/ids.yaml", lambda c: str(c.mapping) == "/tmp/ids.yaml"),
    "--pace": ("600/1h", lambda c: c.pace == (600, 3600)),
    "--poll-interval": ("2", lambda c: c.poll_interval == 2),
    "--poll-timeout": ("60", lambda c: c.poll_timeout == 60),
    "--max-wait": ("120", lambda c: c.max_wait == 120),
    "--upstream-timeout": ("9", lambda c: c.timeout == 9),
    "--mock": ("http://127.0.0.1:8080", lambda c: c.mock == "http://127.0.0.1:8080"),
    "--mock-token": ("mock-write-token", lambda c: c.mock_token == "mock-write-token"),
    "--mock-control-token": ("ctl", lambda c: c.mock_control_token == "ctl"),
    "--markdown": ("/tmp/p.md", lambda c: str(c.markdown) == "/tmp/p.md"),
    "--json": ("/tmp/p.json", lambda c: str(c.json) == "/tmp/p.json"),
    "--junit": ("/tmp/p.xml", lambda c: str(c.junit) == "/tmp/p.xml"),
    "--skip": ("deploy*,getCluster", lambda c: c.skip == ["deploy*", "getCluster"]),
    "--git-url": ("https://git.example.com/a/b.git", lambda c: c.git_url == "https://git.example.com/a/b.git"),
    "--fixtures": ("/tmp/fx", lambda c: str(c.fixtures) == "/tmp/fx"),
    "--seed": ("3", lambda c: c.seed == 3),
    "--upstream": ("https://api.platform.example", lambda c: c.upstream == "https://api.platform.example"),
}


def test_every_listed_environment_variable_sets_its_option(monkeypatch):
    from mockserver.cli.main import OPTIONS, parity_config, parser, settings_from
    serve = {option.flag: option.env for option in OPTIONS if option.of("serve")}
    parity = {option.flag: option.env for option in OPTIONS if option.of("parity")}
    assert set(SAMPLES) == set(serve) and set(PARITY_SAMPLES) == set(parity)
    everything = {n for option in OPTIONS for n in option.env}
    for command, options, samples in (("serve", serve, SAMPLES), ("parity", parity, PARITY_SAMPLES)):
        for option, names in options.items():
            value, holds = samples[option]
            for name in names:
                for other in everything:
                    monkeypatch.delenv(other, raising=False)
                if command == "parity":
                    monkeypatch.setenv("MOCKSERVER_UPSTREAM", "https://api.platform.example")
                    monkeypatch.setenv("MOCKSERVER_UPSTREAM_TOKEN", "platform-token")
                for extra, text in ALONGSIDE.get(option, {}).items():
                    monkeypatch.setenv(extra, text)
                monkeypatch.setenv(name, value)
                args = parser().parse_args([command])
                assert holds(settings_from(args) if command == "serve" else parity_config(args)), name


def test_new_options_default_to_cors_for_local_pages_no_access_log_and_bounded_connections(monkeypatch):
    from mockserver.cli.main import ENVIRONMENT, parser, settings_from
    for names in ENVIRONMENT.values():
        for name in names:
            monkeypatch.delenv(name, raising=False)
    settings = settings_from(parser().parse_args(["serve"]))
    assert (settings.cors_origins, settings.access_log, settings.log_format) == ("local", False, "text")
    assert (settings.header_timeout, settings.body_timeout, settings.max_header_size, settings.max_connections,
            settings.shutdown_timeout, settings.max_snapshots) == (10, 30, 64 * 1024, 1000, 5, 200)


@pytest.mark.server
@pytest.mark.parametrize("args, env, needle", [
    (["--cors-origins", "localhost:3000"], {}, "localhost:3000"),
    ([], {"MOCKSERVER_CORS_ORIGINS": "http://x/path"}, "http://x/path"),
    ([], {"MOCKSERVER_ACCESS_LOG": "maybe"}, "MOCKSERVER_ACCESS_LOG"),
    ([], {"MOCKSERVER_LOG_FORMAT": "xml"}, "MOCKSERVER_LOG_FORMAT"),
    (["--log-format", "xml"], {}, "--log-format"),
    (["--cors-origins", "local,off"], {}, "off stands alone"),
    (["--header-timeout", "0"], {}, "--header-timeout"),
    ([], {"MOCKSERVER_MAX_CONNECTIONS": "many"}, "MOCKSERVER_MAX_CONNECTIONS"),
    (["--max-header-size", "big"], {}, "--max-header-size"),
    (["--shutdown-timeout", "-1"], {}, "--shutdown-timeout"),
])
def test_a_bad_new_option_exits_2_with_one_clear_line(args, env, needle):
    result = run("serve", *args, env=env)
    assert result.returncode == 2
    assert needle in result.stderr and "Traceback" not in result.stderr


# ---------------------------------------------------------------- a start that cannot work: one line, exit 2
@pytest.fixture
def served(monkeypatch):
    """main() in this process with `serve` replaced: the settings a start would use (never a listening mock)."""
    started = []

    def serve(settings, variables=None):
        started.append(settings)
        return 0
    monkeypatch.setattr(main, "serve", serve)
    monkeypatch.setattr(main, "use_allocator", lambda wanted: None)
    return started


def refused(capsys, argv, env=(), monkeypatch=None):
    for name, value in env:
        monkeypatch.setenv(name, value)
    status = main.main(argv)
    return status, capsys.readouterr().err


# nan and inf are not numbers an option takes
@pytest.mark.parametrize("argv", [
    ["serve", "--speed", "nan"], ["serve", "--speed", "inf"], ["serve", "--speed", "Infinity"],
    ["serve", "--speed", "NaN"],
    ["serve", "--header-timeout", "inf"], ["serve", "--body-timeout", "nan"], ["serve", "--sandbox-ttl", "inf"],
    ["serve", "--sleep-after", "nan"], ["serve", "--save-interval", "nan"], ["serve", "--shutdown-timeout", "inf"],
    ["record", "--upstream", "http://127.0.0.1:18699", "--upstream-timeout", "nan"],
    ["parity", "--upstream", "http://127.0.0.1:18699", "--poll-interval", "nan"],
    ["parity", "--upstream", "http://127.0.0.1:18699", "--poll-timeout", "inf"],
    ["parity", "--upstream", "http://127.0.0.1:18699", "--max-wait", "nan"],
])
def test_non_finite_numbers_are_refused_in_one_line_like_0(argv, served, capsys, monkeypatch):
    monkeypatch.setattr("mockserver.contract.parity.run", lambda config, build_mock: 0)
    status, err = refused(capsys, [*argv, "--port", "18699"] if argv[0] != "parity" else [*argv, "--token", "t"])
    assert status == 2 and not served, err
    line = one_line(err)
    assert line.startswith(f"mockserver: {argv[-2]}: must be a finite number") and argv[-1] in line


@pytest.mark.parametrize("variable", ["MOCKSERVER_SPEED", "MOCKSERVER_HEADER_TIMEOUT", "MOCKSERVER_SANDBOX_TTL"])
@pytest.mark.parametrize("value", ["nan", "inf"])
def test_non_finite_numbers_from_the_environment_are_refused(variable, value, served, capsys, monkeypatch):
    status, err = refused(capsys, ["serve", "--port", "18699"], [(variable, value)], monkeypatch)
    assert status == 2 and not served
    assert one_line(err).startswith(f"mockserver: {variable}='{value}': must be a finite number")


def test_finite_numbers_still_start(served, capsys):
    assert main.main(["serve", "--port", "18699", "--speed", "0.5", "--header-timeout", "1e3"]) == 0
    assert served[0].speed == 0.5 and served[0].header_timeout == 1000.0


# option errors are one line, every command
@pytest.mark.server
@pytest.mark.parametrize("args, prog, needle", [
    (["serve", "--speed", "0"], "mockserver serve", "--speed: must be greater than 0, not 0"),
    (["serve", "--port", "http"], "mockserver serve", "--port: must be a whole number"),
    (["serve", "--bogus"], "mockserver serve", "unrecognized arguments: --bogus"),
    (["serve", "--port"], "mockserver serve", "--port: expected one argument"),
    (["check", "--seed", "x"], "mockserver check", "--seed: must be a whole number"),
    (["check", "--fixtures"], "mockserver check", "expected one argument"),
    (["export"], "mockserver export", "the following arguments are required: --url"),
    (["record", "--upstream", "ftp://x"], "mockserver record", "--upstream: must be an http:// or https:// URL"),
    (["parity", "--pace", "lots"], "mockserver parity", "--pace: rate limit must look like N/WINDOW"),
    (["parity", "--allow-writes=yes"], "mockserver parity", "--allow-writes: ignored explicit argument"),
    (["serv"], "mockserver", "command: invalid choice: 'serv'"),
    ([], "mockserver", "the following arguments are required: command"),
])
def test_option_errors_are_one_line_naming_the_help_and_exit_2(args, prog, needle):
    result = run(*args, timeout=30)
    assert result.returncode == 2, result.stderr
    line = one_line(result.stderr)
    assert line.startswith("mockserver: ") and needle in line and line.endswith(f"({prog} --help)"), line
    assert result.stdout == ""


def test_help_and_version_are_unchanged():
    result = run("serve", "--help", timeout=30)
    assert result.returncode == 0 and "usage: mockserver serve" in result.stdout and "--speed" in result.stdout
    result = run("--version", timeout=30)
    assert result.returncode == 0 and result.stdout.startswith("mockserver ")


# a header size a request fits in (tests/process/test_limits.py serves the smallest one)
@pytest.mark.parametrize("args, env, shown", [
    (["--max-header-size", "1"], (), "--max-header-size: must be at least 1024 bytes"),
    (["--max-header-size", "1023"], (), "--max-header-size: must be at least 1024 bytes"),
    ([], (("MOCKSERVER_MAX_HEADER_SIZE", "100"),), "MOCKSERVER_MAX_HEADER_SIZE='100': must be at least 1024 bytes"),
])
def test_a_header_size_no_request_fits_in_is_refused(args, env, shown, served, capsys, monkeypatch):
    status, err = refused(capsys, ["serve", "--port", "18699", *args], env, monkeypatch)
    assert status == 2 and not served
    assert one_line(err).startswith(f"mockserver: {shown}")


# a fixtures path that is a file, a busy port, an environment variable's value
@pytest.mark.server
def test_serve_and_parity_on_a_fixtures_file_say_it_is_not_a_folder(capsys):
    result = run("serve", "--port", "18699", "--fixtures", "README.md", timeout=30)
    assert result.returncode == 2
    assert "README.md: not a folder" in one_line(result.stderr)
    from mockserver.contract import parity
    status = parity.run(ParitySettings(upstream="http://127.0.0.1:18699", token="t", fixtures=ROOT / "README.md"),
                        MockServer)
    assert status == 2 and "README.md: not a folder" in capsys.readouterr().err


@pytest.mark.server
def test_a_busy_port_is_named_with_a_hint_in_one_line():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = run("serve", "--port", str(port))
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "Traceback" not in result.stderr
    assert f"port {port} is already in use on 127.0.0.1" in result.stderr
    assert "--port" in result.stderr and "MOCKSERVER_PORT" in result.stderr


@pytest.mark.server
@pytest.mark.parametrize("variable, value", [("MOCKSERVER_CLOCK", "Manual"), ("MOCKSERVER_PORT", "eighty"),
                                             ("MOCKSERVER_SAVE_INTERVAL", "-1"), ("MOCKSERVER_FRESH", "perhaps")])
def test_a_bad_environment_value_is_named_with_its_variable(variable, value):
    port = [] if variable == "MOCKSERVER_PORT" else ["--port", str(free_port())]
    result = run("serve", *port, env={variable: value})
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert variable in result.stderr and value in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
