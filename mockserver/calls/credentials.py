"""Credentials found by their name and by their shape, and replaced: what the journal, the HAR file, the pact
and the recorded fixtures never keep.

By name: a header or query parameter whose name holds a word of credentials (`X-Api-Key`, `X-Auth-Token`,
`access_token`, `client_secret`, `password`, a session or signature, any `*key*` that is not a plain word of
it such as `keep`), cookies; a JSON field of a reply or request whose name ends in one (`token`, `api_key`,
`access_token`, `secret`, `password`, `private_key` ...) when it holds a string. By shape, wherever a string
is: a JSON Web Token, `Bearer`/`Token`/`Basic` and a credential, a cloud access key (`AKIA...`), a private key
in PEM, tokens with a known prefix (`ghp_`, `glpat-`, `xoxb-`, `sk_live_`), and the user and password of a
URL (`https://user:password@host` keeps its user, never its password).

`Authorization` keeps its scheme and last four characters (journal.redact_authorization), as every call's.
"""

import re
from functools import lru_cache

REDACTED = "**redacted**"
WORDS = frozenset({"token", "secret", "password", "passwd", "pwd", "passphrase", "apikey", "key", "auth",
                   "authorization", "cookie", "session", "sessionid", "signature", "sig", "credential",
                   "credentials", "jwt", "bearer", "private", "otp"})
INSIDE = ("token", "secret", "passw", "apikey", "credential", "signature")     # a word inside a longer name
JSON_ENDINGS = ("token", "secret", "password", "passwd", "passphrase", "api_key", "apikey", "private_key",
                "credential", "credentials", "signature")
SHAPES = re.compile(
    r"eyJ[\w-]{6,}\.[\w-]{6,}\.[\w-]*"                       # a JSON Web Token
    r"|\b(?:Bearer|Token|Basic|Digest|ApiKey)\s+(?=[\w~+/.=:-]*[\d~+/.=:_-])[\w~+/.=:-]{12,}"   # scheme, credential
    r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"                         # a cloud access key id
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----"
    r"|\b(?:gh[pousr]_[A-Za-z0-9]{20,}|glpat-[\w-]{20,}|xox[abprs]-[\w-]{10,}|sk_(?:live|test)_\w{16,})",
    re.IGNORECASE)
USER_INFO = re.compile(r"(?P<scheme>\b[a-z][a-z0-9+.-]*://)(?P<user>[^/\s:@]*)(?::[^/\s@]*)?@", re.IGNORECASE)
# What a header block or JSON document must hold to be read closely (most hold none of it, and cost a cached
# look at their header names, or a few substring searches): a word of a credential's name, or the mark of one
# of the shapes above (a scheme and a credential is caught by its header's name, or when read closely).
HEADER_NAMES = re.compile(rb"(?m)^([^:\n]*):")
MARKS = re.compile(rb"eyJ|@|AKIA|ASIA|-----BEGIN|gh[pousr]_|glpat-|xox[abprs]-|sk_(?:live|test)_")
TEXT_MARKS = re.compile(MARKS.pattern.decode() + r"|(?i:bearer|token|basic|digest|apikey)\s")
JSON_WORDS = (b"token", b"secret", b"passw", b"passphrase", b"api_key", b"apikey", b"_key", b"credential",
              b"signature", b"bearer ", b"basic ")
KNOWN_NAMES = 4096                              # header name lists whose verdict is kept
_named: dict[tuple, bool] = {}                  # header names of a block -> whether one names a credential


@lru_cache(maxsize=4096)
def secret_name(name):
    """Whether a header or query parameter's name says it holds a credential."""
    lowered = name.lower()
    words = re.split(r"[^a-z0-9]+", lowered)
    return bool(WORDS.intersection(words)) or any(word in lowered for word in INSIDE)


def secret_field(name):
    """Whether a JSON field's name says it holds a credential (`token`, `api_key`, `client_secret` ...)."""
    lowered = name.lower().replace("-", "_")
    return lowered.endswith(JSON_ENDINGS) and not lowered.startswith(("is_", "has_"))


def text(value):
    """A string with every credential its shape gives away replaced (a URL keeps its user, not its password)."""
    if "@" in value:
        value = USER_INFO.sub(_user_only, value)
    return SHAPES.sub(REDACTED, value)


def _user_only(found):
    return f"{found['scheme']}{found['user']}:{REDACTED}@" if found["user"] else found["scheme"]


def url(value):
    """A URL as it may be written down: without its user and password."""
    return USER_INFO.sub(lambda found: found["scheme"], value)


def header(name, value):
    """A header's value as it may be kept (`name` in lower case; Authorization is cut by its caller)."""
    if name in ("cookie", "set-cookie") or secret_name(name) and name not in ("authorization",
                                                                                "www-authenticate"):
        return REDACTED
    return text(value)


def header_lines(block):
    """A journal's header block (`name: value` lines, bytes) with its credentials replaced; the same bytes when
    no header's name names one and no value bears a mark of one (the common case)."""
    if not block or not (_names_one(block) or MARKS.search(block)):
        return block
    lines = []
    for line in block.decode("latin-1").split("\n"):
        name, sep, value = line.partition(": ")
        if sep and name.lower() != "authorization":
            line = f"{name}: {header(name.lower(), value)}"
        lines.append(line)
    return "\n".join(lines).encode("latin-1", "replace")


def _names_one(block):
    names = tuple(HEADER_NAMES.findall(block))
    verdict = _named.get(names)
    if verdict is None:
        if len(_named) >= KNOWN_NAMES:
            _named.clear()
        verdict = _named[names] = any(name.lower() != b"authorization" and header(name.lower().decode("latin-1"), "")
                                      == REDACTED for name in names)
    return verdict


def query(values):
    """A query (name -> value) with its credentials replaced."""
    return {name: REDACTED if secret_name(name) else text(value) if isinstance(value, str) and TEXT_MARKS.search(
        value) else value for name, value in values.items()}


def json_bytes(encoded, value):
    """(JSON bytes or None, value) with the credentials of `value` replaced; the same when `encoded` (its bytes)
    shows no word or mark of one (the common case); None bytes when something was replaced."""
    if not encoded or not (MARKS.search(encoded) or any(word in encoded.lower() for word in JSON_WORDS)):
        return encoded, value
    cleaned = body(value)
    return (encoded, value) if cleaned == value else (None, cleaned)


def body(value):
    """A JSON value with every credential replaced: fields named so, and strings shaped so."""
    if isinstance(value, dict):
        return {key: REDACTED if isinstance(item, str) and item and secret_field(key) else body(item)
                for key, item in value.items()}
    if isinstance(value, list):
        return [body(item) for item in value]
    if isinstance(value, str):
        return text(value)
    return value
