"""Who is calling, and may they do this.

`Authorization: Token <t>` or `Bearer <t>` names an API token of the fixtures (or one
minted through the control API); `Bearer <jwt>` carries an HS256 JWT signed with the
mock's secret, with `sub`, `exp` and optionally `org` and `scopes`. Expiry is read from
the mock's clock. A missing or bad credential is a 401; a scope that does not grant the
operation's need (read, write or deploy, from the document's `x-scope`) is a 403.
"""

import base64
import hashlib
import hmac
from dataclasses import dataclass, field

import orjson

from mockserver.core.errors import ApiError

GRANTS = {
    "Admin": {"read", "write", "deploy"},
    "Read": {"read"},
    "Write": {"read", "write"},
    "Deploy": {"read", "deploy"},
}


@dataclass
class Token:
    name: str
    value: str
    organization: str
    scopes: list
    expires_at: float | None = None
    rate_limit: tuple | None = None            # (limit, window seconds) overriding the default
    grants: set = field(default_factory=set)

    def __post_init__(self):
        self.grants = set().union(*(GRANTS[scope] for scope in self.scopes)) if self.scopes else set()


def authenticate(header, tokens, now, secret, default_org, organizations=()):
    """The Token the header names, or ApiError 401."""
    if not header:
        raise ApiError(401, "missing Authorization header: send 'Token <api token>' or 'Bearer <token>'")
    scheme, _, credential = header.partition(" ")
    credential = credential.strip()
    if scheme.lower() not in ("token", "bearer") or not credential:
        raise ApiError(401, "malformed Authorization header: expected 'Token <api token>' or 'Bearer <token>'")
    token = tokens.get(credential)
    if token is None and scheme.lower() == "bearer" and credential.count(".") == 2:
        token = _from_jwt(credential, secret, now, default_org, organizations)
    if token is None:
        raise ApiError(401, "invalid token")
    if token.expires_at is not None and now >= token.expires_at:
        raise ApiError(401, f"token {token.name} has expired")
    return token


def authorize(token, need):
    if need not in token.grants:
        have = ", ".join(token.scopes) or "none"
        raise ApiError(403, f"token {token.name} (scopes: {have}) may not perform a {need} operation")


# ---------------------------------------------------------------- JWT (HS256)
def _b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def mint_jwt(secret, claims):
    header = _b64(orjson.dumps({"alg": "HS256", "typ": "JWT"}))
    payload = _b64(orjson.dumps(claims))
    signature = hmac.new(secret.encode(), f"{header}.{payload}".encode(), hashlib.sha256).digest()
    return f"{header}.{payload}.{_b64(signature)}"


def _from_jwt(credential, secret, now, default_org, organizations):
    header, payload, signature = credential.split(".")
    expected = hmac.new(secret.encode(), f"{header}.{payload}".encode(), hashlib.sha256).digest()
    try:
        if not hmac.compare_digest(expected, _unb64(signature)):
            return None
        claims = orjson.loads(_unb64(payload))
        head = orjson.loads(_unb64(header))
    except (ValueError, orjson.JSONDecodeError):
        return None
    if not isinstance(head, dict) or head.get("alg") != "HS256" or not isinstance(claims, dict):
        return None
    if not isinstance(claims.get("sub"), str) or not claims["sub"]:
        raise ApiError(401, "JWT has no sub claim")
    exp = claims.get("exp")
    if not isinstance(exp, (int, float)):
        raise ApiError(401, "JWT has no exp claim")
    if now >= exp:
        raise ApiError(401, "JWT has expired")
    scopes = claims.get("scopes", ["Admin"])
    if not isinstance(scopes, list) or not all(s in GRANTS for s in scopes):
        return None
    org = claims.get("org", default_org)
    if org not in organizations:
        raise ApiError(401, "JWT names an unknown organization")
    return Token(name=claims["sub"], value=credential, organization=org, scopes=scopes, expires_at=float(exp))
