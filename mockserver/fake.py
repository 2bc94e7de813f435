"""Seeded realistic values for what a client never sends: people, commits, log lines, backups.

One `Fake` per runtime, seeded from `--seed`: the same seed gives the same data. Values
tied to one record (the logs of a deployment, the commits of a repository) come from a
generator seeded by that record's id, so they do not depend on the order of requests.
"""

import hashlib
import random
import uuid

from faker import Faker

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


class Fake:
    def __init__(self, seed):
        self.seed = seed
        self.rng = random.Random(seed)
        self._pinned = None
        self._faker = None                     # made on first use: building one costs ~1 ms
        self._faker_state = None

    @property
    def faker(self):
        if self._faker is None:
            self._faker = Faker()
            self._faker.seed_instance(self.seed)
            if self._faker_state is not None:
                self._faker.random.setstate(self._faker_state)
        return self._faker

    def reseed(self, key):
        """Another reproducible sequence for a copy of this world (a sandbox named `key`), so that
        worlds copied from one start do not hand out the same new ids."""
        self.rng = random.Random(f"{self.seed}:{key}")
        self._faker = None
        self._faker_state = random.Random(f"{self.seed}:{key}:faker").getstate()

    def __getstate__(self):
        """Saved with the world as the generators' positions (a Faker instance is not worth copying)."""
        state = dict(self.__dict__)
        if self._faker is not None:
            state["_faker_state"] = self._faker.random.getstate()
        state["_faker"] = None
        return state

    def uuid(self):
        if self._pinned is not None:
            ident, self._pinned = self._pinned, None
            return ident
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    @property
    def pinned(self):
        return self._pinned is not None

    def pin(self, ident):
        """The next uuid() returns `ident` (fixtures give some records fixed ids)."""
        self._pinned = ident

    def person(self):
        return self.faker.name()

    def _local(self, key):
        """A Faker seeded by (seed, key): values tied to one record."""
        digest = hashlib.sha256(f"{self.seed}:{key}".encode()).digest()
        local = Faker()
        local.seed_instance(int.from_bytes(digest[:8], "big"))
        return local

    def commits(self, repository, branch, count, newest):
        """`count` commits of a repository's branch, newest first, one hour or so apart."""
        local = self._local(f"{repository}#{branch}")
        out, at = [], newest
        for _ in range(count):
            sha = local.sha1()
            author = local.name()
            out.append({
                "created_at": at, "git_commit_id": sha, "tag": "",
                "message": local.sentence(nb_words=7).rstrip("."), "author_name": author,
                "author_avatar_url": f"https://avatars.example.com/{author.split()[0].lower()}.png",
                "commit_page_url": f"{repository.removesuffix('.git')}/commit/{sha}",
            })
            at -= local.random_int(600, 14400)
        return out

    def log_lines(self, key, step, values, count):
        local = self._local(f"{key}:{step}")
        templates = LOG_TEMPLATES.get(step, LOG_TEMPLATES["RUN"])
        lines = []
        for index in range(count):
            template = templates[index % len(templates)] if step != "RUN" else local.random_element(templates)
            lines.append(template.format(ms=local.random_int(2, 180), base=local.random_element(BASES),
                                         build=local.random_element(BUILDS), **values))
        return lines

    def backup_name(self, database, when):
        return f"{database}-{when[:10]}-{self.faker.lexify('????').lower()}"

    def tfvars(self, repository):
        local = self._local(repository)
        files = []
        for env in ("production", "staging"):
            files.append({"source": f"env/{env}.tfvars",
                          "variables": {"region": local.random_element(["eu-west-3", "us-east-1", "ap-south-1"]),
                                        "instance_type": local.random_element(["t3.small", "t3.medium", "m6i.large"]),
                                        "environment": env, "replicas": str(local.random_int(1, 5))}})
        return files
