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
- provider states: where the call started from (`the platform starts from {source}`: the sandbox's
  fixtures, a snapshot, or its own options) and the records it relied on (`application {id} exists and
  is DEPLOYED`), with params that let the mock make them true (provider_states.py): records the flow
  created carry the call that created them and the edits made since.

`History` reads the whole journal once to know, at each call, which records the flow had created,
edited or deleted and which service states the client had seen. Bodies were redacted when journaled,
so no secret value or token reaches a pact. Calls that are about the caller's credential (401, 403,
429), were dropped or answered by a scenario's scripted error, and calls whose request body the journal
kept cut, are left out and listed in the metadata; a reply kept cut is matched by type and listed.
"""

import hashlib
import re

import orjson

from mockserver.core.kinds import BY_PATH
from mockserver.core.version import __version__

UUID = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
DATE_TIME = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$"
UUID_TEXT = re.compile(UUID)
DATE_TIME_TEXT = re.compile(DATE_TIME)
KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
SERVICES = frozenset(BY_PATH)
CREATES = ("create", "override", "alias")       # operation ids that make a record (its id is in the reply)
ACTIONS = ("deploy", "redeploy", "stop", "restart", "uninstall")  # operation ids that change a service's state
# Strings the platform makes up (not the client): matched by type.
GENERATED_STRINGS = frozenset({
    "execution_id", "last_execution_id", "git_commit_id", "deployed_commit_id", "message", "author_name",
    "author_avatar_url", "commit_page_url", "tag", "triggered_by", "owner_name", "total_duration",
    "validation_domain"})
# Lists whose length follows the clock or the number of deployments: any length, items by type.
GROWING_LISTS = frozenset({"details", "stages"})
GROWING_REPLIES = re.compile(r"^(list\w*DeploymentHistory\w*|get\w*Logs|list\w*Commits|getEnvironmentDeploymentQueue"
                             r"|list\w*Backups)$")
# Path words that name a record differently than its noun.
NOUNS = {"environmentVariable": "variable", "containerRegistry": "container registry", "labelsGroups": "labels group",
         "customDomain": "custom domain", "deploymentRule": "deployment rule", "credentials": "credentials"}
LEFT_OUT = {0: "the connection was dropped by a scenario rule", 401: "about the caller's credential",
            403: "about the caller's credential", 429: "about the caller's rate limit"}
SOURCE_STATE = "the platform starts from {source}"


def noun(word):
    return NOUNS.get(word, word)


def path_ids(template, path):
    """[(word before the parameter, value)] of a call's path parameters, in order."""
    out, previous = [], None
    for pattern, value in zip(template.strip("/").split("/"), path.strip("/").split("/")):
        if pattern.startswith("{"):
            out.append((previous, value))
        else:
            previous = pattern
    return out


def body_ids(body, key=None):
    """[(key, value)] of the uuids a request body refers to (its own read-only `id` aside)."""
    if isinstance(body, dict):
        return [found for name, item in body.items() if name != "id" for found in body_ids(item, name)]
    if isinstance(body, list):
        return [found for item in body for found in body_ids(item, key)]
    if isinstance(body, str) and UUID_TEXT.match(body):
        return [((key or "record").removesuffix("_id"), body)]
    return []


def reply_json(call):
    if not call.response or call.truncated and "response" in call.truncated:
        return None
    try:
        return orjson.loads(call.response)
    except orjson.JSONDecodeError:
        return None


def step(call, query, body):
    """A call as the provider-state protocol replays it."""
    out = {"operation": call.operation_id, "method": call.method, "path": call.path}
    if query:
        out["query"] = query
    if body is not None:
        out["body"] = body
    return out


class Record:
    """A record the flow created, edited or deleted."""

    __slots__ = ("id", "noun", "created", "create", "parents", "edits", "deleted", "delete")

    def __init__(self, ident, word=None):
        self.id, self.noun = ident, word
        self.created = self.create = self.deleted = self.delete = None
        self.parents, self.edits = [], []


class History:
    """What the journal's calls did, call by call (calls by id, oldest first). `held(id)` says whether the
    world the flow started from holds a record."""

    def __init__(self, calls, held):
        self.held = held
        self.records: dict[str, Record] = {}
        self.words: dict[str, str] = {}         # id -> the noun of the path word or body key that named it
        self.seen: dict[str, list[tuple[int, str]]] = {}   # service id -> [(call id, state)]
        self.actions: dict[str, list[int]] = {}  # service id -> [call ids of its deploys, stops, restarts...]
        for call in calls:
            if call.operation is not None and 200 <= call.status < 300:
                self._learn(call)
        self.children: dict[str, list[Record]] = {}   # id -> the records the flow created under it
        for record in self.records.values():
            for parent in dict.fromkeys(record.parents) if record.created is not None else ():
                self.children.setdefault(parent, []).append(record)

    def of(self, ident, word=None):
        found = self.records.get(ident)
        if found is None:
            found = self.records[ident] = Record(ident, word)
        found.noun = found.noun or word
        return found

    def _learn(self, call):
        query, _, body = call.parts()
        reply, operation = reply_json(call), call.operation_id
        ids = path_ids(call.template, call.path)
        if operation.startswith(CREATES) and isinstance(reply, dict) and isinstance(reply.get("id"), str):
            word = call.template.rstrip("/").rsplit("/", 1)[-1]
            made = self.of(reply["id"], noun(ids[-1][0] if word in ("override", "alias") else word))
            made.created, made.create = call.id, step(call, query, body)
            refs = [(noun(word), value) for word, value in ids] + body_ids(body)
            made.parents = [value for _, value in refs]
            for word, value in refs:
                self.words.setdefault(value, word)
        elif operation.startswith("edit") and ids:
            self.of(ids[-1][1], noun(ids[-1][0])).edits.append((call.id, step(call, query, body)))
        elif operation.startswith("delete") and ids:
            gone = self.of(ids[-1][1], noun(ids[-1][0]))
            gone.deleted, gone.delete = call.id, step(call, query, None)
        elif operation.startswith(ACTIONS) and ids:
            self.actions.setdefault(ids[-1][1], []).append(call.id)
        for ident, state in _states(reply):
            self.seen.setdefault(ident, []).append((call.id, state))

    def state_of(self, ident, before, including=False):
        """The service state the client last saw before call `before` (or in it, with `including`)."""
        found = None
        for at, state in self.seen.get(ident, ()):
            if at < before or (including and at == before):
                found = state
        return found

    def relied(self, call, source):
        """The provider states of a call, in the order the flow made them true: where it started from, the
        records it relied on (each when it was created), the service states it relied on (each after the
        action that led to it)."""
        query, _, body = call.parts()
        refs = [(noun(word), ident) for word, ident in path_ids(call.template, call.path)] + body_ids(body)
        for word, ident in refs:
            self.words.setdefault(ident, word)
        reading = call.method == "GET"
        placed: list[tuple[int, int, dict]] = []     # (call id it became true at, order, state)
        for ident in self._closure([ident for _, ident in refs], call.id):
            record = self.records.get(ident)
            word = (record and record.noun) or self.words.get(ident, "record")
            for state in self._state(ident, record, word, call.id):
                placed.append((record.created if record and record.created else 0, len(placed), state))
            if word in SERVICES:           # a service's records and lists show what its deployments did
                state = self.state_of(ident, call.id, including=reading)
                if state is not None:
                    acted = [at for at in self.actions.get(ident, ()) if at < call.id]
                    placed.append((acted[-1] if acted else 0, len(placed),
                                   {"name": f"{word} {{id}} exists and is {{state}}",
                                    "params": {"id": ident, "state": state}}))
        placed.sort(key=lambda item: item[:2])
        return [{"name": SOURCE_STATE, "params": {"source": source}}] + [state for _, _, state in placed]

    def _closure(self, direct, before):
        """The ids a call relied on: its own, the parents of records the flow created (up to the start
        world), and what the flow created under any of them before the call (a list shows those)."""
        found, queue = {}, list(direct)
        while queue:
            ident = queue.pop(0)
            if ident in found:
                continue
            found[ident] = True
            record = self.records.get(ident)
            if record is not None and record.created is not None and record.created < before:
                queue.extend(record.parents)
            queue.extend(child.id for child in self.children.get(ident, ()) if child.created < before)
        return list(found)

    def _state(self, ident, record, word, before):
        """The existence state of one record at call `before` (none for a record neither the start world
        nor the flow had: the call relied on its absence, which a fresh world gives)."""
        created = record is not None and record.created is not None and record.created < before
        if not created and not self.held(ident):
            return []
        if record is not None and record.deleted is not None and record.deleted < before:
            if created:
                return []
            return [{"name": f"{word} {{id}} does not exist", "params": {"id": ident, "delete": record.delete}}]
        params = {"id": ident}
        if created:
            params["create"] = record.create
        edits = [edit for at, edit in (record.edits if record else ()) if at < before]
        if edits:
            params["edits"] = edits
        return [{"name": f"{word} {{id}} exists", "params": params}]


def _states(reply):
    """(service id, state) pairs a reply shows: a status, an action's record, a list of statuses."""
    items = reply["results"] if isinstance(reply, dict) and isinstance(reply.get("results"), list) else [reply]
    out = []
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("state"), str):
            ident = item.get("service_id") or item.get("id")
            if isinstance(ident, str):
                out.append((ident, item["state"]))
    return out


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
        return "no operation of the API answers its path"
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


def document(calls, history, consumer, provider, source, version=4, dropped=0):
    """The pact of `calls` (oldest first), whose states `history` (of the whole journal) tells."""
    interactions, cut, skipped = [], [], []
    seen: dict[bytes, list[int]] = {}          # what makes calls the same -> their ids
    names: dict[str, int] = {}                 # description -> calls described so
    for call in calls:
        reason = left_out(call)
        if reason:
            skipped.append({"call": call.id, "operation": call.operation_id, "status": call.status, "reason": reason})
            continue
        same, item = interaction(call, history.relied(call, source), version)
        if same in seen:
            seen[same].append(call.id)
            continue
        seen[same] = [call.id]
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
