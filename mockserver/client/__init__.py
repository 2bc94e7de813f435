"""The Python control client: one method per operation of the control API, for a mock anywhere.

    from mockserver.client import connect, start_local

    mock = connect("http://127.0.0.1:8080")            # or MOCKSERVER_URL; readiness checked on /_mock/health
    box = mock.in_sandbox("my-test")                   # a fresh sandbox, and a client scoped to it
    httpx.post(f"{box.url}/application/{APP}/deploy", headers=box.headers("deploy"))
    box.advance(600)
    box.assert_called(operation="deployApplication", times=1)
    box.delete_sandbox()

Every operation of the control document (`/_mock/openapi.json`) names its method here in `x-client`; the
TypeScript and Go clients use the same names in their own casing (clients/). The methods are written once,
over one seam, the HTTP client: `connect`/`start_local`/`start_container` reach a mock over the network, and
`Client.in_process(app)` drives a MockServer built in this process through the same routes without a socket,
so the in-process and the HTTP ways cannot drift apart. The pytest plugin (pytest_plugin.py) is built on it.

A control call that answers 4xx or 5xx raises `MockServerError` (an AssertionError: in a test it reads as a
failed expectation) carrying the status and the server's message.

Each method's reply is typed by the control document's schema of it (`mockserver.client.types`, TypedDicts), and
the facts every client holds the same (the default tokens, the journal body limit of a test's sandbox, the
sandbox name rule, the version) are `mockserver.client.constants`: both are written from the control document by
`python -m mockserver.client.generate`. The same concept has the same name in the Node and Go clients
(docs/clients/index.md); `UnknownToken`, `private_name` and `wait_until_ready` are the deprecated names of
`UnknownTokenError`, `private_snapshot_name` and `wait_ready`, kept for a release.
"""

from mockserver.client import constants, types  # noqa: F401  (mockserver.client.types, .constants)
from mockserver.client.constants import DEFAULT_APPLICATION, DEFAULT_ORGANIZATION, DEFAULT_TOKENS, VERSION
from mockserver.client.control import Client, MockServerError, PactRefused, private_name, private_snapshot_name
from mockserver.client.files import merge_pacts, write_json
from mockserver.client.start import connect, free_port, start_container, start_local
from mockserver.client.tokens import Tokens, UnknownToken, UnknownTokenError, version_mismatch

__all__ = ["DEFAULT_APPLICATION", "DEFAULT_ORGANIZATION", "DEFAULT_TOKENS", "VERSION", "Client", "MockServerError",
           "PactRefused", "Tokens", "UnknownToken", "UnknownTokenError", "connect", "free_port", "merge_pacts",
           "private_name", "private_snapshot_name", "start_container", "start_local", "version_mismatch", "write_json"]
