"""HTTP helpers: the platform's error envelope, a free loopback port, and waiting for a URL to answer."""

import socket
import time

import httpx


def assert_error(reply, status):
    """The platform's error envelope: {status, error, message} as application/json."""
    assert reply.status_code == status, reply.text
    assert reply.headers["content-type"].startswith("application/json")
    body = reply.json()
    assert body["status"] == status
    assert isinstance(body["error"], str) and body["error"]
    assert isinstance(body["message"], str) and body["message"]
    return body


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(url, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"{url} did not answer within {timeout} s")
