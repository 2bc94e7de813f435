"""Seeded realistic values for what a client never sends: people, commits, log lines, backups.

One `Fake` per runtime, seeded from `--seed`: the same seed gives the same data. Values
tied to one record (the logs of a deployment, the commits of a repository) come from a
generator seeded by (seed, that record's key), so they do not depend on the order of requests.

Building a `Faker` costs milliseconds, so it does not happen per request. The process has one
`Faker`, reseeded before each use (reseeding gives exactly the draws a new instance with that seed
would), and what is drawn per key is made once and kept in bounded caches shared by every sandbox
(`functools.lru_cache`): a log read after the first costs a lookup. Commits do not use Faker: each is
made alone from its position by `commits.py`, so a deploy or a page of commits makes only its own.
Cached values are shared, so callers must not change them (`tfvars` hands out copies because its
caller edits them).
"""

import functools
import hashlib
import random
from array import array

from faker import Faker

from mockserver.world.commits import Commits

LOG_TEMPLATES = {
    "GIT_CLONE": ["Cloning {url} (branch {branch})", "Checked out commit {sha}"],
    "BUILD": ["Step 1/6 : FROM {base}", "Step 2/6 : WORKDIR /app", "Step 3/6 : COPY . .",
              "Step 4/6 : RUN {build}", "Step 5/6 : EXPOSE {port}", "Successfully built {short}",
              "Pushing image to the registry"],
    "MIRROR_IMAGE": ["Mirroring image {image} into the cluster registry", "Image mirrored"],
    "DEPLOYMENT": ["Applying manifests to namespace {namespace}", "Waiting for rollout of {name}",
                   "Rollout of {name} complete: {replicas} replicas ready"],
    "ROUTER_DEPLOYMENT": ["Updating router for {name}", "Router ready"],
    "RUN": ["Starting {name} on port {port}", "GET /healthz 200 {ms}ms", "Connected to database",
            "Listening on 0.0.0.0:{port}", "GET / 200 {ms}ms", "POST /api/orders 201 {ms}ms"],
}
BASES = ["node:22-alpine", "python:3.12-slim", "golang:1.23", "eclipse-temurin:21-jre"]
BUILDS = ["npm ci && npm run build", "pip install -r requirements.txt", "go build ./cmd/server", "./gradlew build"]
VERSION_MASK = ~((0xf000 << 64) | (0xc000 << 48))          # the version and variant bits of a uuid
VERSION_4 = (0x4000 << 64) | (0x8000 << 48)                 # version 4, the RFC 4122 variant
LOG_DRAWS = 64          # draws made per (deployment, step) at once; a longer log draws again, for its length
CACHE = 4096            # keys kept per kind of generated value (log draws, tfvars)

_faker: list[Faker] = []   # the process's one Faker, made on first use


def shared_faker():
    if not _faker:
        _faker.append(Faker())
    return _faker[0]


def _seeded(seed, key):
    """The shared Faker, reseeded by (seed, key): the draws a `Faker` seeded so would make."""
    digest = hashlib.sha256(f"{seed}:{key}".encode()).digest()
    faker = shared_faker()
    faker.seed_instance(int.from_bytes(digest[:8], "big"))
    return faker


@functools.lru_cache(maxsize=CACHE)
def _log_draws(seed, key, step, count):
    """Per line: (template index or None, ms, base, build), in the order the draws are made."""
    local = _seeded(seed, f"{key}:{step}")
    templates = LOG_TEMPLATES.get(step, LOG_TEMPLATES["RUN"])
    out = []
    for _ in range(count):
        chosen = templates.index(local.random_element(templates)) if step == "RUN" else None
        out.append((chosen, local.random_int(2, 180), local.random_element(BASES), local.random_element(BUILDS)))
    return tuple(out)


@functools.lru_cache(maxsize=CACHE)
def _tfvars(seed, repository):
    local = _seeded(seed, repository)
    return tuple((env, local.random_element(["eu-west-3", "us-east-1", "ap-south-1"]),
                  local.random_element(["t3.small", "t3.medium", "m6i.large"]), str(local.random_int(1, 5)))
                 for env in ("production", "staging"))


class Fake:
    """The world's values nobody sent: new ids, passwords, names. They come from the world's own sequence, or,
    while a change that the server's change log keeps is made (`keyed`), from a stream of that change's own,
    derived from the seed and the change's key (its place in the log): a change run again from the log draws what
    it drew the first time, whatever changes before it did (or were left out as damaged)."""

    def __init__(self, seed):
        self.seed = seed
        self.rng = random.Random(seed)
        self._pinned = None
        self._faker_seed = None                 # a named sandbox's own sequence starts from this seed
        self._faker_state = None                # the sequence's position once drawn from (packed)
        self._name = str(seed)                  # what tells this world's streams from another's
        self._stream: list | None = None        # [key, draws so far] of the change being made, or None

    def reseed(self, key):
        """Another reproducible sequence for a copy of this world (a sandbox named `key`), so that
        worlds copied from one start do not hand out the same new ids."""
        self.rng = random.Random(f"{self.seed}:{key}")
        self._faker_seed = f"{self.seed}:{key}:faker"
        self._faker_state = None
        self._name = f"{self.seed}:{key}"

    def keyed(self, key):
        """Draw from the stream of the change `key` until `unkeyed` (see the class)."""
        self._stream = [key, 0]

    def unkeyed(self):
        self._stream = None

    def _streamed(self):
        """The next 16 bytes of the change's stream, as an int."""
        stream = self._stream
        assert stream is not None
        key, drawn = stream
        stream[1] += 1
        return int.from_bytes(hashlib.blake2b(f"{self._name}/{key}/{drawn}".encode(), digest_size=16).digest(), "big")

    def _draw(self, how):
        """One value from this world's own sequence (people, passwords, backup suffixes), drawn with the
        shared Faker set to the sequence's position, which is kept afterwards (or to the change's stream)."""
        faker = shared_faker()
        if self._stream is not None:
            faker.seed_instance(self._streamed())
            return how(faker)
        faker.seed_instance(self.seed)
        if self._faker_state is not None:
            version, words, gauss = self._faker_state
            faker.random.setstate((version, tuple(array("I", words)), gauss))
        elif self._faker_seed is not None:
            faker.random.setstate(random.Random(self._faker_seed).getstate())
        value = how(faker)
        version, words, gauss = faker.random.getstate()
        self._faker_state = (version, array("I", words).tobytes(), gauss)
        return value

    def uuid(self):
        if self._pinned is not None:
            ident, self._pinned = self._pinned, None
            return ident
        drawn = self.rng.getrandbits(128) if self._stream is None else self._streamed()
        bits = (drawn & VERSION_MASK) | VERSION_4                          # as uuid.UUID(int=..., version=4)
        text = f"{bits:032x}"
        return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"

    @property
    def pinned(self):
        return self._pinned is not None

    def pin(self, ident):
        """The next uuid() returns `ident` (fixtures give some records fixed ids)."""
        self._pinned = ident

    def person(self):
        return self._draw(lambda faker: faker.name())

    def person_of(self, key):
        """The same made-up person for the same key (a token's name) in every world of this seed; the world's
        own sequence is left where it is."""
        faker = shared_faker()
        faker.seed_instance(f"{self.seed}:person:{key}")
        return faker.name()

    def password(self, length=24):
        return self._draw(lambda faker: faker.password(length=length))

    def backup_name(self, database, when):
        return f"{database}-{when[:10]}-{self._draw(lambda faker: faker.lexify('????')).lower()}"

    def commits(self, repository, branch, count, newest):
        """`count` commits of a repository's branch, newest first, two hours or so apart, with ISO dates: a
        sequence that makes a commit when it is read (shared dicts: read only)."""
        return Commits(self.seed, repository, branch, newest, count)

    def log_lines(self, key, step, values, count):
        draws = _log_draws(self.seed, key, step, max(LOG_DRAWS, count))[:count]
        templates = LOG_TEMPLATES.get(step, LOG_TEMPLATES["RUN"])
        return [templates[index % len(templates) if chosen is None else chosen].format(
                    ms=ms, base=base, build=build, **values)
                for index, (chosen, ms, base, build) in enumerate(draws)]

    def tfvars(self, repository):
        return [{"source": f"env/{env}.tfvars",
                 "variables": {"region": region, "instance_type": size, "environment": env, "replicas": replicas}}
                for env, region, size, replicas in _tfvars(self.seed, repository)]
