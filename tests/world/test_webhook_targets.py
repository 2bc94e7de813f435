"""Webhook targets the platform would take, and nowhere a caller could make the mock's machine hand over its
cloud credentials: the rules (world/webhooks.py), the document's pattern that says the same, and the check of
the addresses a name resolves to when an attempt connects.
"""

import asyncio
import socket

import jsonschema_rs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mockserver.document.schemas import WEBHOOK_TARGET
from mockserver.edge.hosts import is_address
from mockserver.world.webhooks import DeliveryError, connect, target_of, target_problem

ACCEPTED = ["https://hooks.acme.example/deployments", "http://127.0.0.1:9/hooks", "http://localhost:8080/x?y=1",
            "http://[::1]:8080/", "http://receiver/hook", "http://my_receiver:3000", "http://10.0.0.7/hook",
            "http://192.168.1.20:8443/h", "https://hooks.acme.example.:443/", "http://xn--bcher-kva.example/"]
METADATA = ["http://169.254.169.254/latest/meta-data/", "http://[fd00:ec2::254]/latest/meta-data/",
            "http://metadata.google.internal/computeMetadata/v1/", "http://METADATA.google.internal./",
            "http://100.100.100.200/latest/meta-data/", "http://[::ffff:169.254.169.254]/",
            "http://[64:ff9b::a9fe:a9fe]/", "http://[fd20:ce::254]/"]
LINK_LOCAL = ["http://169.254.1.1:8080/hook", "http://[fe80::1]/hook", "http://[fe80::1%25eth0]:80/"]
MALFORMED = [
    ("http://hooks.acme.example:99999/x", "port '99999' is not a port a receiver can listen on (1-65535)"),
    ("http://hooks.acme.example:0/x", "port '0' is not a port"),
    ("http://hooks.acme.example:/x", "port '' is not a port"),
    ("http://hooks.acme.example:8o8o/x", "port '8o8o' is not a port"),
    ("http://exa mple.com/", "'exa mple.com' is not a host name"),
    ("http://a..b/", "'a..b' is not a host name"),
    ("http://-bad.example/", "'-bad.example' is not a host name"),
    ("http://0xa9fea9fe/", "'0xa9fea9fe' is not a host name"),          # 169.254.169.254 to inet_aton
    ("http://2852039166/", "'2852039166' is not a host name"),          # the same, in decimal
    ("http://169.254.43518/", "'169.254.43518' is not a host name"),    # the same, shortened
    ("http://256.1.1.1/", "'256.1.1.1' is not a host name"),
    ("http://[::1/", "not a URL"),
    ("http://[g::1]/", "not a URL"),
    ("http:///path", "'' is not a host name"),
    ("http://user:pass@hooks.acme.example/", "holds credentials"),
    ("ftp://hooks.acme.example/", "must start with http:// or https://"),
    ("hooks.acme.example/x", "must start with http:// or https://"),
    ("http://hooks.acme.example/a b", "without spaces or control characters"),
    ("http://hooks.acme.example/\x00", "without spaces or control characters"),
]
PATTERN = jsonschema_rs.validator_for({"type": "string", "pattern": WEBHOOK_TARGET})


@pytest.mark.parametrize("url", ACCEPTED)
def test_what_the_platform_takes_is_accepted_and_matches_the_documents_pattern(url):
    assert target_problem(url) is None
    assert PATTERN.is_valid(url)


@pytest.mark.parametrize("url", METADATA)
def test_cloud_metadata_targets_are_refused_unless_the_option_allows_them(url):
    problem = target_problem(url)
    assert "cloud metadata service" in problem and "--webhook-allow-link-local allows it" in problem
    assert target_problem(url, allow_link_local=True) is None


@pytest.mark.parametrize("url", LINK_LOCAL)
def test_link_local_targets_are_refused_unless_the_option_allows_them(url):
    assert "is a link-local address (--webhook-allow-link-local allows it)" in target_problem(url)
    assert target_problem(url, allow_link_local=True) is None


@pytest.mark.parametrize("url, problem", MALFORMED)
def test_malformed_targets_are_refused_whatever_the_option_and_the_pattern_refuses_them_too(url, problem):
    assert problem in target_problem(url)
    assert problem in target_problem(url, allow_link_local=True)
    assert not PATTERN.is_valid(url)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.from_regex(WEBHOOK_TARGET).filter(PATTERN.is_valid))
def test_every_url_the_documents_pattern_admits_is_one_the_mock_takes(url):
    """What a contract tester generates from the document is never refused but for link-local and metadata
    addresses (which an option allows)."""
    assert target_problem(url, allow_link_local=True) is None


def test_port_0_is_port_0_not_port_80():
    assert target_of("http://127.0.0.1:0/hook").port == 0
    assert target_of("http://127.0.0.1/hook").port == 80 and target_of("https://h.example/").port == 443


# ---------------------------------------------------------------- the addresses a name resolves to
def _resolving_to(address, allow_link_local=False):
    """connect() to a name the resolver answers with `address` (no DNS needed)."""
    async def attempt():
        loop = asyncio.get_running_loop()

        async def getaddrinfo(host, port, **_):
            family = socket.AF_INET6 if ":" in address else socket.AF_INET
            return [(family, socket.SOCK_STREAM, 6, "", (address, port))]
        loop.getaddrinfo = getaddrinfo
        target = target_of("http://hooks.rebound.example:9/hook")
        reader, writer = await connect(target, allow_link_local)
        writer.close()
    return asyncio.run(attempt())


@pytest.mark.parametrize("address, problem", [("169.254.169.254", "cloud metadata service's address"),
                                              ("fe80::1", "link-local address"),
                                              ("fd00:ec2::254", "cloud metadata service's address")])
def test_a_name_that_resolves_to_a_refused_address_is_not_connected_to(address, problem):
    with pytest.raises(DeliveryError) as refused:
        _resolving_to(address)
    assert str(refused.value) == (f"not attempted: hooks.rebound.example resolves to {address}, a {problem} "
                                  "(--webhook-allow-link-local allows it)")


def test_a_name_is_connected_to_at_the_address_that_was_checked():
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]

        async def attempt():
            loop = asyncio.get_running_loop()
            asked = []

            async def getaddrinfo(host, port_asked, **_):
                asked.append(host)
                return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port_asked))]
            loop.getaddrinfo = getaddrinfo
            reader, writer = await connect(target_of(f"http://hooks.rebound.example:{port}/hook"))
            writer.close()
            return asked
        names = [host for host in asyncio.run(attempt()) if not is_address(host)]   # (a loop may look up the
        assert names == ["hooks.rebound.example"]                                  # address it connects to)
        listener.settimeout(2)
        listener.accept()[0].close()
