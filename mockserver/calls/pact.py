"""Pact documents (consumer contracts) from journaled calls: what a client's tests sent and relied on.

`document(calls, history, consumer, provider, source, version)` writes a Pact specification V4 (or
V3) document: one interaction per distinct call (repeated polls that saw the same thing are one), each
with

- the request as sent (method, path, query, Content-Type, body; never the Authorization header: the
  verifier sends its own credential) and the reply (status, Content-Type, body);
- matching rules for what the platform generates, so that any provider behaving the same passes: ids
  match the uuid format, timestamps the date-time format, counts, durations and generated strings
  (commit data, execution ids, error messages) their type, and lists whose length follows the clock
  (deployment steps, histories, logs) any length;
- provider states (calls/history.py): where the call started from (`the platform starts from {source}`:
  the sandbox's fixtures, a snapshot, or its own options) and every write of the flow its reply can show,
  at its place in time, with params that let the mock make them true (contract/provider.py).

Bodies were redacted when journaled, so no secret value or token reaches a pact. Left out, and listed in
the metadata with the reason: calls about the caller's credential (401, 403, 429), calls no operation
answers (404, 405), calls dropped, answered by a scenario's scripted error or shaped by its network fault
(truncate, malformed_body, reset, dribble), calls whose request body the journal kept cut, calls whose path
names a record the journal does not say how it was made, and, when `document` is given a `check`, calls
whose recorded reply the provider states do not give on a fresh mock. A reply kept cut is matched by type
and listed.
"""

import hashlib
import re

import orjson

from mockserver.calls.history import UUID, UUID_TEXT, path_ids, reply_json
from mockserver.core.version import __version__

DATE_TIME = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$"
DATE_TIME_TEXT = re.compile(DATE_TIME)
KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# Strings the platform makes up (not the client): matched by type.
GENERATED_STRINGS = frozenset({
    "execution_id", "last_execution_id", "git_commit_id", "deployed_commit_id", "message", "author_name",
    "author_avatar_url", "commit_page_url", "tag", "triggered_by", "owner_name", "total_duration",
    "validation_domain"})
# Lists whose length follows the clock or the number of deployments: any length, items by type.
GROWING_LISTS = frozenset({"details", "stages"})
GROWING_REPLIES = re.compile(r"^(list\w*DeploymentHistory\w*|get\w*Logs|list\w*Commits|getEnvironmentDeploymentQueue"
                             r"|list\w*Backups)$")
UNKNOWN = "its path names"             # the start of the reason of a call whose record the journal cannot make
LEFT_OUT = {0: "the connection was dropped by a scenario rule", 401: "about the caller's credential",
            403: "about the caller's credential", 429: "about the caller's rate limit"}


# ------------------------------------------------------------ matching rules
def _child(path, key):
    return f"{path}.{key}" if KEY.match(key) else f"{path}['{key}']"


def match(value, path, key, rules):
    """`value` with what a rule covers replaced by None (to compare calls), and its rules added to `rules`."""
    if isinstance(value, list) and key in GROWING_LISTS:
        rules[path] = {"match": "type", "min": 0}
        return None
    if isinstance(value, dict):
        return {name: match(item, _child(path, name), name, rules) for name, item in value.items()}
    if isinstance(value, list):
        return [match(item, f"{path}[{index}]", key, rules) for index, item in enumerate(value)]
    if isinstance(value, str):
        if UUID_TEXT.match(value):
            rules[path] = {"match": "regex", "regex": UUID}
        elif DATE_TIME_TEXT.match(value):
            rules[path] = {"match": "regex", "regex": DATE_TIME}
        elif key in GENERATED_STRINGS:
            rules[path] = {"match": "type"}
        else:
            return value
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and _counted(key):
        rules[path] = {"match": "type"}
        return None
    return value


def _counted(key):
    return bool(key) and (key.endswith(("_count", "count", "_sec", "total")) or "duration" in key)


def reply_rules(call, reply):
    """(matching rules of the reply body, the reply as compared between calls)."""
    rules: dict[str, dict[str, str | int]] = {}
    if call.truncated and "response" in call.truncated:
        return {"$": {"match": "type"}}, None
    if reply is None:       # no body (a 204), or one that is not JSON: compared as text, never as bytes
        return rules, call.response.decode("utf-8", "replace") if call.response else None
    if call.operation_id and GROWING_REPLIES.match(call.operation_id):
        rules["$"] = {"match": "type"}
        if isinstance(reply, dict) and isinstance(reply.get("results"), list):
            rules["$.results"] = {"match": "type", "min": 0}
        return rules, None
    masked = match(reply, "$", None, rules)
    if call.status >= 400 and isinstance(reply, dict) and "details" in reply:
        rules["$.details"] = {"match": "type", "min": 0}
        masked.pop("details", None)
    return rules, masked


# ------------------------------------------------------------ interactions
def left_out(call):
    """Why a call is not an interaction, or None."""
    if call.operation is None:
        if call.status == 405:
            return f"its path has no {call.method} operation (405): no operation of the API answers it"
        return "no operation of the API answers its path"
    if call.fault:
        return (f"its reply was shaped by the network fault ({call.fault}) of scenario rule {call.rule}: "
                f"not the reply the platform sends")
    if call.status in LEFT_OUT:
        return LEFT_OUT[call.status]
    if call.rule and call.status >= 400:
        return f"its error was scripted by scenario rule {call.rule}"
    if call.status >= 500:
        return "the mock failed (a bug to report)"
    if call.truncated and "body" in call.truncated:
        return (f"its request body ({call.truncated['body']} bytes) was kept cut: raise the journal's body limit "
                f"(--journal-body-limit, or the sandbox option journal_body_limit)")
    return None


def _describe(call, query, states):
    text = f"{call.operation_id} {call.method} {call.path}"
    if query:
        text += "?" + "&".join(f"{name}={value}" for name, value in query.items())
    text += f" -> {call.status}"
    seen = [state["params"] for state in states if "state" in state["params"]]
    target = path_ids(call.template, call.path)
    for params in seen:
        if target and params["id"] == target[-1][1]:
            text += f", {params['state']}"
    return text


def interaction(call, states, version):
    """(what makes two calls the same, the interaction) of one journaled call."""
    query, headers, body = call.parts()
    reply = reply_json(call)
    rules, compared = reply_rules(call, reply)
    out_query = {name: [str(value)] for name, value in query.items()}
    request = {"method": call.method, "path": call.path}
    if out_query:
        request["query"] = out_query
    response = {"status": call.status}
    json_type = "application/json"
    if body is not None:
        request["headers"] = _headers({"Content-Type": headers.get("content-type", json_type)}, version)
        request["body"] = _body(body, json_type, version)
    if call.response:
        response["headers"] = _headers({"Content-Type": json_type}, version)
        response["body"] = _body({} if compared is None and call.truncated else reply, json_type, version)
        if rules:
            response["matchingRules"] = {"body": {path: {"combine": "AND", "matchers": [rule]}
                                                  for path, rule in rules.items()}}
    same = orjson.dumps([call.method, call.path, query, body, states, call.status, compared],
                        option=orjson.OPT_SORT_KEYS)
    item = {"description": _describe(call, query, states), "providerStates": states,
            "request": request, "response": response}
    if version == 4:                            # the key: the same for calls that are the same (pacts merge by it)
        item = {"type": "Synchronous/HTTP", "key": hashlib.sha256(same).hexdigest()[:16], **item, "pending": False,
                "comments": {"text": [f"journal call #{call.id}"]}}
    return same, item


def _headers(values, version):
    return {name: [value] for name, value in values.items()} if version == 4 else values


def _body(value, content_type, version):
    if version == 4:
        return {"content": value, "contentType": content_type, "encoded": False}
    return value


def document(calls, history, consumer, provider, source, version=4, dropped=0, check=None):
    """The pact of `calls` (oldest first), whose states `history` (of the whole journal) tells. `check(call,
    states)`, when given, says why a fresh mock would not give the recorded reply from those states (None:
    it would): the states of every record the flow wrote are tried next, then the call is left out."""
    interactions, cut, skipped = [], [], []
    seen: set[bytes] = set()                   # what makes calls the same
    names: dict[str, int] = {}                 # description -> calls described so
    for call in calls:
        item, reason = _interaction(call, history, source, version, seen, check)
        if reason:
            skipped.append({"call": call.id, "operation": call.operation_id, "status": call.status, "reason": reason})
        if item is None:
            continue
        count = names[item["description"]] = names.get(item["description"], 0) + 1
        if count > 1:
            item["description"] += f" #{count}"
        if call.truncated and "response" in call.truncated:
            cut.append({"description": item["description"], "call": call.id, "bytes": call.truncated["response"]})
        interactions.append(item)
    spec = "4.0" if version == 4 else "3.0.0"
    return {"consumer": {"name": consumer}, "provider": {"name": provider}, "interactions": interactions,
            "metadata": {"pactSpecification": {"version": spec},
                         "idp-mockserver": {"version": __version__, "source": source, "calls": len(calls),
                                            "interactions": len(interactions), "cut": cut, "left_out": skipped,
                                            "dropped": dropped}}}


def _interaction(call, history, source, version, seen, check):
    """(the interaction of a call or None, why it is left out or None); None, None for a call that is the
    same as one already written."""
    reason = left_out(call) or _unknown(history, call)
    if reason:
        return None, reason
    for everything in (False, True):
        same, item = interaction(call, history.relied(call, source, everything), version)
        if same in seen:
            return None, None
        reason = check(call, item["providerStates"]) if check is not None else None
        if reason is None:
            seen.add(same)
            return item, None
    return None, reason


def _unknown(history, call):
    named = history.unknown(call)
    if not named:
        return None
    word, ident = named[0]
    return (f"{UNKNOWN} {word} {ident}, which neither the world the flow started from nor a journaled call "
            f"made (a record the platform made on its own, such as a built-in variable, or one made by a call the "
            f"journal no longer holds)")


# ------------------------------------------------------------ a reply against the recorded one
def disagrees(call, status, payload):
    """Why a reply (status, body bytes) would fail the interaction of a recorded call, or None: the status, and
    the body as the pact's matching rules compare it (an object may hold more fields than recorded)."""
    if status != call.status:
        return f"it answers {status} where {call.status} was recorded"
    if call.truncated and "response" in call.truncated:
        return None                             # matched by type: a body of the same status
    expected = reply_json(call)
    if expected is None:
        return None if not call.response or payload == call.response else "its body differs from the recorded one"
    try:
        actual = orjson.loads(payload) if payload else None
    except orjson.JSONDecodeError:
        return "its body is not JSON"
    where = _mismatch(expected, actual, "$", reply_rules(call, expected)[0])
    return None if where is None else f"its body differs at {where}"


def _mismatch(expected, actual, path, rules):
    """The first JSON path where `actual` fails `expected` under the matching rules, or None."""
    rule = rules.get(path)
    if rule is not None:
        if rule["match"] == "regex":
            return None if isinstance(actual, str) and re.match(rule["regex"], actual) else path
        return None if _kind(actual) == _kind(expected) else path
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return path
        for name, item in expected.items():
            if name not in actual:
                return _child(path, name)
            found = _mismatch(item, actual[name], _child(path, name), rules)
            if found:
                return found
        return None
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return path
        return next((found for index, (one, other) in enumerate(zip(expected, actual))
                     if (found := _mismatch(one, other, f"{path}[{index}]", rules))), None)
    return None if expected == actual and _kind(expected) == _kind(actual) else path


def _kind(value):
    if isinstance(value, bool) or value is None:
        return type(value)
    return (int, float) if isinstance(value, (int, float)) else type(value)
