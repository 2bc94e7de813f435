"""Contract tests with schemathesis, in-process (ASGI): every operation of the document,
fuzzed positively and negatively with every check, and a stateful walk along its links.

The same document drives the black-box CLI run against `mockserver serve` (.ci/contract).
"""

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from mockserver.app import MockServer
from mockserver.core.settings import Settings

CONFIG = schemathesis.Config.from_str('''
[auth.openapi.Bearer]
bearer = "mock-admin-token"

# A body past --max-body is refused with 413 before it is read further, as every operation with a body
# documents. Hypothesis's longest invalid strings of astral characters are sent escaped (12 bytes a
# character); should they ever pass the limit (16 MiB), 413 is the right refusal.
[checks.negative_data_rejection]
expected-statuses = ["400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429"]

[phases.stateful.inference]
algorithms = []
''')

APP = MockServer(Settings(clock="manual", rate_limit=10**9, rate_window=3600, self_check=True))
schema = schemathesis.openapi.from_asgi("/openapi.json", APP, config=CONFIG)


@pytest.fixture(autouse=True)
def self_check():
    """Besides schemathesis' checks, the mock's own check of every reply against the document."""
    APP.pipeline.violations.clear()
    yield
    assert APP.pipeline.violations == [], "\n".join(APP.pipeline.violations)


@schema.parametrize()
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
def test_operation(case):
    case.call_and_validate()


class Workflow(schema.as_state_machine()):
    def setup(self):
        APP.reset()


TestStateful = Workflow.TestCase
TestStateful.settings = settings(max_examples=60, stateful_step_count=10, deadline=None,
                                 suppress_health_check=list(HealthCheck))
