"""What the tests share besides fixtures (tests/conftest.py holds those): importable from every folder of
tests/ as `support` (pyproject.toml puts tests/ on the path).

    ids             the default fixtures' ids (ORG, APP, ...) and the headers of their tokens (ADMIN, READ, ...)
    http            the error envelope (assert_error), a free loopback port, waiting for a URL to answer
    live            LiveServer: `mockserver serve` in a subprocess on a free port
    cli             `mockserver <command>` run as a process, and the one line a refusal prints
    examples        requests built from the API document's examples
    browser         the Chromium fixtures (a pytest plugin that conftest.py loads) and screenshots
    receiver        a webhook receiver on a loopback port
    upstream        upstreams for the recording proxy and parity: small servers and `mockserver` processes
    control_routes  a valid request of every control route

ROOT is the repository's root: the folder commands run in and the fixtures, scenarios and documents are read from.
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
