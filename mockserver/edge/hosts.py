"""Which `Host` names the mock answers: a defence against DNS rebinding.

A web page whose own name an attacker rebinds to 127.0.0.1 reaches a mock on the developer's machine as its
own origin, so CORS cannot stop it; but its requests still name the attacker's host. The mock answers only
requests whose `Host` is:

- an IP address (v4, or v6 in brackets): a rebinding needs a name, and an address cannot be rebound;
- a name of one label (`localhost`, `mock`, a compose service): no one's public DNS answers those;
- a name under `.localhost` (RFC 6761: always the loopback);
- a name given with `--allowed-hosts` (a comma list; `*.example.test` stands for one label or more under
  it; `*` alone turns the check off), and the address the server is bound to.

Anything else (a name with a dot that was not listed) is a 403 in the error body, for every route: the
API, the control API, the inspector and the documents. An HTTP/1.1 request must carry exactly one `Host`
(RFC 9112, 3.2): without one, or with two, it is a 400; an HTTP/1.0 request without one is answered. A target
in absolute form (`GET http://name/path`) names its host itself, and that name is judged as a `Host` would be.
"""

import ipaddress
import re

from mockserver.core.errors import ApiError

LABEL = re.compile(r"^[a-z0-9](?:[a-z0-9_-]{0,61}[a-z0-9])?$")


def host_name(value):
    """The name of a `Host` header, without its port, in lower case ('[::1]:8080' -> '::1')."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def is_address(name):
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class HostGuard:
    """The `Host` names a server answers (see the module)."""

    def __init__(self, allowed=(), bound=None):
        names = [str(name).strip().lower() for name in allowed if str(name).strip()]
        self.everything = "*" in names
        self.exact = {name for name in names if not name.startswith("*.")}
        self.suffixes = tuple(name[1:] for name in names if name.startswith("*."))
        if bound:
            self.exact.add(host_name(bound))
        self.seen = {}                          # host header -> verdict (a server sees few distinct ones)

    def allows(self, value):
        verdict = self.seen.get(value)
        if verdict is None:
            verdict = self._judge(value)
            if len(self.seen) < 1024:
                self.seen[value] = verdict
        return verdict

    def _judge(self, value):
        name = host_name(value).rstrip(".")
        if self.everything or not name:
            return True
        if is_address(name) or LABEL.match(name) or name.endswith(".localhost"):
            return True
        return name in self.exact or name.endswith(self.suffixes)

    @staticmethod
    def refusal(value):
        shown = value.strip()[:100]
        return ApiError(403, f"Host {shown!r} is not a name this mock serves (a page whose name was rebound to this "
                             f"address would send it): list it with --allowed-hosts {host_name(shown)} "
                             f"(MOCKSERVER_ALLOWED_HOSTS)")


def host_of(hosts, host, version):
    """The `Host` of a request that carries `hosts` of them, the last `host` (bytes; the server's protocol put the
    authority of an absolute-form target there: process/connections.py), decoded, or None. ApiError(400) for an
    HTTP/1.1 request without one or with more."""
    if hosts > 1:
        raise ApiError(400, f"the request carries {hosts} Host headers: send exactly one")
    if not hosts and version not in ("1.0", "0.9"):
        raise ApiError(400, f"an HTTP/{version} request must carry a Host header")
    return host.decode("latin-1") if hosts else None
