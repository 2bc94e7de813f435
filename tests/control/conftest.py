"""Fixtures of the inspector's tests: a reset mock to call, and its page open on a view."""

import httpx
import pytest
from support.ids import ADMIN


@pytest.fixture
def mock(live_manual):
    """An HTTP client (admin token) of the module's live mock, reset with its scenarios."""
    with httpx.Client(base_url=live_manual.url, headers=ADMIN, timeout=10) as http:
        assert http.post("/_mock/reset", json={"scenarios": True}).status_code == 200
        yield http


@pytest.fixture
def ui(page, live_manual, mock):
    """The page open on a view (of the module's mock, reset, or of the mock at `base`); JavaScript errors fail the
    test."""
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))

    def open_view(view="calls", base=None):
        page.goto(f"{base or live_manual.url}/_mock/ui#{view}")
        return page

    yield open_view
    assert errors == []
