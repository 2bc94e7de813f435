"""JSON request bodies read within bounds: the one parser of the API's and the control API's bodies.

Arrays and objects nested deeper than MAX_DEPTH levels are refused with a 400 that names the
bound. No payload of the API document comes near it (the deepest, a Helm values override, is
under ten levels), and everything that walks a body afterwards (validation, scenario matching,
redaction, the journal) then stays far from Python's recursion limit. Malformed JSON is a 400
naming where the parser stopped.
"""

import orjson

from mockserver.core.errors import ApiError

MAX_DEPTH = 64


def too_deep(where):
    message = f"nested deeper than {MAX_DEPTH} levels of arrays and objects (the mock reads at most {MAX_DEPTH})"
    return ApiError(400, f"{where}: {message}", [(where, message)])


def depth_exceeds(value, bound=MAX_DEPTH):
    """Does `value` nest arrays and objects more than `bound` deep? (iterative: any depth is safe to ask)"""
    stack = [(value, 1)] if isinstance(value, (dict, list)) else []
    while stack:
        item, depth = stack.pop()
        if depth > bound:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def loads(raw, where="body"):
    """The JSON value of `raw` (bytes or text), or an ApiError 400 (malformed, or nested too deep)."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        if "depth" in str(error) or "recursion" in str(error):
            raise too_deep(where) from None
        raise ApiError(400, f"{where}: malformed JSON: {error}", [(where, f"malformed JSON: {error}")]) from None
    if isinstance(value, (dict, list)) and _openings(raw) > MAX_DEPTH and depth_exceeds(value):
        raise too_deep(where)
    return value


def _openings(raw):
    """Arrays and objects opened in the text: a bound of its depth that costs two scans in C."""
    if isinstance(raw, str):
        return raw.count("[") + raw.count("{")
    return raw.count(b"[") + raw.count(b"{")


def check_document(text, where="body"):
    """A document sent as text that may be YAML or JSON (a scenario): when it is JSON, it is held to the
    same bound. Anything else is left to the document's own reader."""
    if text.lstrip()[:1] not in ("{", "["):
        return
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as error:
        if "depth" in str(error) or "recursion" in str(error):
            raise too_deep(where) from None
        return
    if _openings(text) > MAX_DEPTH and depth_exceeds(value):
        raise too_deep(where)
