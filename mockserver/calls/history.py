"""What a journal's calls did to the world, call by call: the provider states of a pact (calls/pact.py).

`History(calls, start)` reads the journal once, oldest first: the records the flow created (with the call
that made each, the records above it and those it names), edited (each edit with its call), deleted, the
actions it ran on services (deploy, stop ...) and the service states the client saw. `start` answers for
the world the flow started from (contract/provider.py): which records it holds, and what is above each.

`relied(call, source)` says what a call relied on, as provider states a fresh mock can make true, in the
order the flow made them true: where it started from (`the platform starts from {source}`), then every
write of the flow the reply can depend on, each at its place in time:

- the records the call names, what is above them (their project, environment, cluster, registry, the
  record an override overrides), and what the flow wrote under them (a list shows it, a status sums it up,
  an edit of a project puts its services out of date): `{noun} {id} exists`, with `create` (the call that
  made it) and `edits` for a record the flow made or changed, `{noun} {id} does not exist` with `delete`
  for a record of the start world the flow deleted;
- the state of each such service the client saw, after the flow's last action on it: `{noun} {id} exists and
  is {state}` (`acted`: the flow ran the actions itself, so they run again even if the service shows it).

A record's edits are collapsed, so that a state grows with the records a call relies on, not with the
calls that wrote them: an edit is kept only when it sets a field no later edit of the same operation sets
again (the last edit of each operation is always kept), which leaves a record the values it had.
`relied(..., everything=True)` holds every record the flow wrote before the call (contract/provider.py
falls back to it when the first states do not give the recorded reply).
"""

import re

import orjson

from mockserver.core.kinds import BY_PATH

UUID = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
UUID_TEXT = re.compile(UUID)
SERVICES = frozenset(BY_PATH)
CREATES = ("create", "override", "alias")       # operation ids that make a record (its id is in the reply)
ACTIONS = ("deploy", "redeploy", "stop", "restart", "uninstall")  # operation ids that change a service's state
READS = ("get", "list")                         # operation ids that change nothing (listTfVars... is a POST)
# Path words that name a record differently than its noun.
NOUNS = {"environmentVariable": "variable", "containerRegistry": "container registry", "labelsGroups": "labels group",
         "customDomain": "custom domain", "deploymentRule": "deployment rule", "credentials": "credentials",
         "org": "organization"}
SOURCE_STATE = "the platform starts from {source}"
CREATED, EDITED, DELETED, STATE = range(4)       # the order of events of one call


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
    """A record the flow created, edited, deleted or acted on."""

    __slots__ = ("id", "noun", "created", "create", "parents", "refs", "edits", "deleted", "delete", "actions",
                 "first")

    def __init__(self, ident, word=None):
        self.id, self.noun = ident, word
        self.created = self.create = self.deleted = self.delete = None
        self.parents: list[str] = []              # the ids of the path it was created under
        self.refs: list[str] = []                 # the ids its create and edit bodies name
        self.edits: list[tuple[int, str, frozenset, dict]] = []   # (call id, path template, fields set, step)
        self.actions: list[int] = []              # call ids of deploys, stops, restarts ...
        self.first: int | None = None             # the call id of its first write


class NoStart:
    """A start world that holds nothing (pacts of a journal alone, in tests)."""

    @staticmethod
    def holds(ident):
        return False

    @staticmethod
    def links(ident):
        return (), ()

    @staticmethod
    def noun(ident):
        return None


class History:
    """What the journal's calls did (calls oldest first). `start.holds(id)` says whether the world the flow
    started from holds a record, `start.links(id)` (parents, references) what is above it there, and
    `start.noun(id)` what it is."""

    def __init__(self, calls, start=None):
        self.start = start or NoStart()
        self.records: dict[str, Record] = {}
        self.words: dict[str, str] = {}         # id -> the noun of the path word or body key that named it
        self.seen: dict[str, list[tuple[int, str]]] = {}   # service id -> [(call id, state)]
        self._above: dict[str, frozenset] = {}
        for call in calls:
            if call.operation is not None and 200 <= call.status < 300:
                self._learn(call)

    def of(self, ident, word=None, at=None):
        found = self.records.get(ident)
        if found is None:
            found = self.records[ident] = Record(ident, word)
        found.noun = found.noun or word
        if at is not None and found.first is None:
            found.first = at
        return found

    # ------------------------------------------------------------ reading the journal
    def _learn(self, call):
        query, _, body = call.parts()
        reply, operation = reply_json(call), call.operation_id
        ids = path_ids(call.template, call.path)
        if operation.startswith(CREATES) and isinstance(reply, dict) and isinstance(reply.get("id"), str):
            self._created(call, ids, query, body, reply["id"])
        elif ids and operation.startswith("delete"):
            gone = self.of(ids[-1][1], noun(ids[-1][0]), call.id)
            gone.deleted, gone.delete = call.id, step(call, query, None)
        elif ids and operation.startswith(ACTIONS):
            self.of(ids[-1][1], noun(ids[-1][0]), call.id).actions.append(call.id)
        elif ids and call.method not in ("GET", "HEAD", "OPTIONS") and not operation.startswith(READS):
            edited = self.of(ids[-1][1], noun(ids[-1][0]), call.id)
            fields = frozenset(body) if isinstance(body, dict) else frozenset()
            edited.edits.append((call.id, call.template, fields, step(call, query, body)))
            edited.refs += [value for _, value in body_ids(body)]
        for ident, state in _states(reply):
            self.seen.setdefault(ident, []).append((call.id, state))

    def _created(self, call, ids, query, body, ident):
        word = call.template.rstrip("/").rsplit("/", 1)[-1]
        made = self.of(ident, noun(ids[-1][0] if word in ("override", "alias") else word), call.id)
        made.created, made.create = call.id, step(call, query, body)
        made.parents = [value for _, value in ids]
        made.refs += [value for _, value in body_ids(body)]
        for word, value in [(noun(word), value) for word, value in ids] + body_ids(body):
            self.words.setdefault(value, word)

    def state_of(self, ident, before, including=False):
        """The service state the client last saw before call `before` (or in it, with `including`)."""
        found = None
        for at, state in self.seen.get(ident, ()):
            if at < before or (including and at == before):
                found = state
        return found

    # ------------------------------------------------------------ what is above a record
    def links(self, ident):
        """(parents, references) of a record: the flow's own records by their calls, others by the start world."""
        record = self.records.get(ident)
        if record is not None and record.created is not None:
            return record.parents, record.refs
        parents, refs = self.start.links(ident)
        return parents, list(refs) + (record.refs if record is not None else [])

    def above(self, ident):
        """Every record above one, transitively: its parents, the records it names, and theirs."""
        found = self._above.get(ident)
        if found is None:
            found = self._above[ident] = self._closure(ident, True)
        return found

    def _closure(self, ident, refs):
        seen, queue = {ident}, [ident]
        while queue:
            parents, named = self.links(queue.pop())
            for other in (*parents, *(named if refs else ())):
                if other and other not in seen:
                    seen.add(other)
                    queue.append(other)
        return frozenset(seen)

    def chain(self, ident):
        """A record and its parents up to the organization (no references), nearest first."""
        out = [ident]
        while True:
            parents = self.links(out[-1])[0]
            if not parents or parents[0] in out:
                return out
            out.append(parents[0])

    def gone(self, ident, before):
        """Whether the flow had deleted a record, or one of its parents (a delete takes what is under it), before
        call `before`."""
        return any(record.deleted is not None and record.deleted < before
                   for record in map(self.records.get, self._closure(ident, False)) if record is not None)

    def noun_of(self, ident):
        record = self.records.get(ident)
        return (record and record.noun) or self.words.get(ident) or self.start.noun(ident) or "record"

    # ------------------------------------------------------------ what a call relied on
    def unknown(self, call):
        """The ids a successful call's path names that neither the start world nor a journaled call made."""
        if call.template is None or not 200 <= call.status < 300:
            return []
        return [(noun(word), ident) for word, ident in path_ids(call.template, call.path)
                if not self.start.holds(ident) and not self._made_before(ident, call.id)]

    def _made_before(self, ident, before):
        record = self.records.get(ident)
        return record is not None and record.created is not None and record.created < before

    def relied(self, call, source, everything=False):
        """The provider states of a call (see the module)."""
        query, _, body = call.parts()
        ids = path_ids(call.template, call.path) if call.template else []
        named = [(noun(word), ident) for word, ident in ids] + body_ids(body)
        for word, ident in named:
            self.words.setdefault(ident, word)
        relevant = self._relevant(ids, [ident for _, ident in named], call.id, everything)
        events = []
        for ident in relevant:
            events += self._events(ident, call.id, including=call.method == "GET")
        events.sort(key=lambda event: event[:3])
        return [{"name": SOURCE_STATE, "params": {"source": source}}] + _merged(events)

    def _relevant(self, ids, named, before, everything):
        """The ids whose writes the reply of a call can show (see the module): what it names and what is above
        them, and the records the flow wrote under what it names (under its organization only for a call on
        the organization itself), with what is above those."""
        written = [record.id for record in self.records.values() if record.first is not None
                   and record.first < before]
        if everything:
            under = written
        else:
            org_level = bool(ids) and noun(ids[-1][0]) == "organization"
            roots = {ident for _, value in ids for ident in (self.chain(value) if org_level
                                                              else self.chain(value)[:-1])}
            under = [ident for ident in written if not roots.isdisjoint(self.above(ident))]
        found: dict[str, None] = {}
        for ident in [*named, *under]:
            found.update(dict.fromkeys(self.above(ident)))
        return found

    def _events(self, ident, before, including):
        """(call id, order, id, kind, what) of the writes of one record before a call, and its state."""
        record = self.records.get(ident)
        word = self.noun_of(ident)
        made = self._made_before(ident, before)
        if self.gone(ident, before):
            if not made and record is not None and record.deleted is not None and record.deleted < before:
                return [(record.deleted, DELETED, ident, word, {"delete": record.delete})]
            return []
        if not made and not self.start.holds(ident):
            return []                           # the call relied on its absence, which a fresh world gives
        events = [(record.created, CREATED, ident, word, {"create": record.create})] \
            if made and record is not None else []
        events += [(at, EDITED, ident, word, {"edits": [edit]}) for at, edit in self._kept(record, before)]
        if not events:
            events.append((0, CREATED, ident, word, {}))
        if word in SERVICES:
            events += self._service_state(record, ident, word, before, including)
        return events

    @staticmethod
    def _kept(record, before):
        """The edits of a record before a call that still count (see the module), oldest first."""
        kept: list[tuple[int, dict]] = []
        covered: dict[str, frozenset] = {}
        for at, operation, fields, edit in reversed(record.edits if record is not None else ()):
            if at >= before:
                continue
            done = covered.get(operation)
            if done is None or not fields <= done:
                kept.append((at, edit))
                covered[operation] = (done or frozenset()) | fields
        kept.reverse()
        return kept

    def _service_state(self, record, ident, word, before, including):
        state = self.state_of(ident, before, including)
        if state is None:
            return []
        acted = [at for at in (record.actions if record is not None else ()) if at < before]
        at = max(acted[-1] if acted else 0, record.created or 0 if record is not None else 0)
        params = {"state": state, **({"acted": True} if acted else {})}
        return [(at, STATE, ident, word, params)]


def _merged(events):
    """Events as provider states: a record's consecutive create and edits are one state."""
    states: list[dict] = []
    for _, kind, ident, word, what in events:
        last = states[-1] if states else None
        if kind == STATE:
            states.append({"name": f"{word} {{id}} exists and is {{state}}", "params": {"id": ident, **what}})
        elif kind == DELETED:
            states.append({"name": f"{word} {{id}} does not exist", "params": {"id": ident, **what}})
        elif last is not None and last["params"]["id"] == ident and last["name"].endswith("{id} exists"):
            if "edits" in what:
                last["params"].setdefault("edits", []).extend(what["edits"])
        else:
            states.append({"name": f"{word} {{id}} exists", "params": {"id": ident, **what}})
    return states


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
