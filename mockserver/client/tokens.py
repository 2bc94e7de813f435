"""The tokens of a mock's fixtures by every name a test may know them by, and the version check of a client."""

from pathlib import Path

import yaml

from mockserver.core.version import __version__

DEFAULT_FIXTURES = Path(__file__).resolve().parents[1] / "default_fixtures"


class UnknownTokenError(KeyError):
    """A token name no token of the mock's fixtures goes by; its message lists the valid ones."""

    def __init__(self, name, known):
        super().__init__(name)
        self.known = known

    def __str__(self):
        return (f"no token named {self.args[0]!r}: use admin, read, write or deploy (also the fixtures' token "
                f"names and scopes: {', '.join(self.known)})")


UnknownToken = UnknownTokenError                # deprecated: the name it had (one release)


class Tokens(dict):
    """The tokens of a mock's fixtures by the short key of their scope (admin, read, write, deploy). A token's own
    name in the fixtures (`reader`) and its scope in any case (`Read`) find it too; an unknown name is an error
    that lists the valid ones."""

    def __init__(self, listed):
        """`listed`: name -> {"token": value, "scopes": [...]}, as the start page and the fixtures give them."""
        super().__init__()
        self.names = {}
        for name, entry in listed.items():
            if not isinstance(entry, dict) or not entry.get("token"):
                continue                               # a mock with a control token lists names without values
            scopes = [str(scope).lower() for scope in entry.get("scopes") or ()]
            key = scopes[0] if len(scopes) == 1 else str(name).lower()
            self.setdefault(key, entry["token"])
            self.names.setdefault(str(name).lower(), key)
            for scope in scopes:
                self.names.setdefault(scope, key)

    def __missing__(self, name):
        key = self.names.get(str(name).lower())
        if key is None or key not in self:
            raise UnknownTokenError(name, sorted({*self, *self.names}))
        return self[key]

    @classmethod
    def of_fixtures(cls, folder=None):
        """The tokens of a fixtures folder (default: the package's own fixtures)."""
        folder = Path(folder) if folder else default_fixtures()
        document = yaml.safe_load((folder / "tokens.yaml").read_text()) or {}
        return cls({token["name"]: {"token": token["value"], "scopes": token.get("scopes", [])}
                    for token in document.get("tokens", []) if isinstance(token, dict) and "value" in token})


def default_fixtures():
    """The package's fixtures (installed), or the repository's `fixtures/` (a checkout)."""
    return DEFAULT_FIXTURES if DEFAULT_FIXTURES.is_dir() else DEFAULT_FIXTURES.parent.parent / "fixtures"


def majorminor(version):
    return ".".join(str(version).split(".")[:2])


def version_mismatch(server_version, url, client_version=__version__):
    """The one line a client says when the mock's major.minor differs from its own; None when they agree."""
    if majorminor(server_version) == majorminor(client_version):
        return None
    return (f"idp-mockserver client {client_version}: the mock at {url} is {server_version} (major.minor differ); "
            f"some calls may not match")
