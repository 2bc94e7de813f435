"""The commits of a repository's branch, each made alone from (seed, repository, branch, position).

A commit is a pure function of its key and its position on the branch (0 the newest): one SHA-256 of
`{seed}:{repository}#{branch}:{position}` gives its id (the first 20 bytes, as a git SHA-1 is 20) and, from
the bytes after, its author, its message and its age, read through the tables below. No commit depends on
the one before it, so a deploy makes the one commit it pins, a listing makes the commits of its page, and
finding an id hashes 100 ids without making any commit. Made commits are kept in a bounded cache shared by
every sandbox, so a deploy's commit is one object however many deploys keep it (callers must not change it).

Ages: commit n (after the newest) is `n * SPACING` seconds before the newest and up to `JITTER` more, so
commits stay in order and come 600 to 13,800 seconds apart (two hours on average).
"""

import functools
import hashlib
from collections.abc import Sequence

from mockserver.core.clock import iso

FIRST_NAMES = ("Amy", "Ben", "Carla", "Dmitri", "Elena", "Farid", "Grace", "Hiroshi", "Ines", "Jamal", "Kate",
               "Liam", "Maya", "Nikhil", "Olga", "Pablo", "Quinn", "Rosa", "Sam", "Tariq", "Uma", "Victor",
               "Wei", "Ximena", "Yusuf", "Zoe", "Anders", "Beatriz", "Chidi", "Dana", "Emre", "Fatima", "Gabriel",
               "Hana", "Ivan", "Julia", "Kofi", "Lena", "Marco", "Nadia")
LAST_NAMES = ("Owens", "Garcia", "Nakamura", "Okafor", "Schmidt", "Rossi", "Kowalski", "Haddad", "Lindqvist",
              "Moreau", "Patel", "Silva", "Novak", "Kim", "Jensen", "Dubois", "Hernandez", "Ivanova", "Mensah",
              "O'Brien", "Tanaka", "Yilmaz", "Costa", "Fischer", "Andersen", "Chen", "Morales", "Nguyen",
              "Popescu", "Reyes", "Singh", "Walker", "Bianchi", "Cohen", "Eriksson", "Fernandes", "Gomez",
              "Horvat", "Larsen", "Murphy")
VERBS = ("Fix", "Add", "Update", "Refactor", "Remove", "Simplify", "Speed up", "Document", "Test", "Clean up",
         "Rework", "Harden", "Log", "Retry", "Cache", "Validate")
SUBJECTS = ("the health check endpoint", "retries in the payment client", "the order export job",
            "the database connection pool", "rate limiting on login", "the CI workflow", "the Dockerfile build stage",
            "pagination of the orders list", "the checkout feature flag", "errors of the signup form",
            "the Helm chart values", "the cleanup job schedule", "TLS settings of the ingress",
            "migrations of the invoices table", "timeouts of the search client", "the README setup steps",
            "the webhook signature check", "metrics of the queue worker", "session cookie settings",
            "dependency versions", "the nightly backup script", "image thumbnails", "the cart total rounding",
            "email templates", "the admin dashboard", "OpenAPI descriptions", "the config loader",
            "graceful shutdown", "the inventory sync", "logging of failed requests", "the search index mapping",
            "currency conversion")
SPACING = 7200          # seconds between commits n and n + 1, before the jitter
JITTER = 6600           # up to this many seconds more, per commit (below SPACING: the order holds)
CACHE = 4096            # commits kept made


def _digest(seed, repository, branch, position):
    return hashlib.sha256(f"{seed}:{repository}#{branch}:{position}".encode()).digest()


def _pick(table, digest, at):
    return table[int.from_bytes(digest[at:at + 2], "big") % len(table)]


@functools.lru_cache(maxsize=CACHE)
def make_commit(seed, repository, branch, newest, position):
    """The commit at `position` (0 the newest) of a branch whose newest commit is at `newest`."""
    digest = _digest(seed, repository, branch, position)
    sha = digest[:20].hex()
    first, last = _pick(FIRST_NAMES, digest, 20), _pick(LAST_NAMES, digest, 22)
    message = f"{_pick(VERBS, digest, 24)} {_pick(SUBJECTS, digest, 26)}"
    merged = int.from_bytes(digest[28:30], "big")
    if merged % 2:                                  # one message in two names the pull request that merged it
        message += f" (#{100 + (merged >> 1) % 900})"
    age = position * SPACING + (int.from_bytes(digest[30:32], "big") % JITTER if position else 0)
    return {"created_at": iso(newest - age), "git_commit_id": sha, "tag": "", "message": message,
            "author_name": f"{first} {last}", "author_avatar_url": f"https://avatars.example.com/{first.lower()}.png",
            "commit_page_url": f"{repository.removesuffix('.git')}/commit/{sha}"}


def commit_ids(seed, repository, branch, count):
    """The ids of a branch's last `count` commits, newest first, one at a time, without making the commits
    (the hash of the common part of the key is copied, not redone: docs/performance.md)."""
    common = hashlib.sha256(f"{seed}:{repository}#{branch}:".encode())
    for position in range(count):
        digest = common.copy()
        digest.update(b"%d" % position)
        yield digest.hexdigest()[:40]


class Commits(Sequence):
    """A branch's last `count` commits, newest first; a commit is made when it is read."""

    def __init__(self, seed, repository, branch, newest, count):
        self.key = (seed, repository, branch, newest)
        self.length = count

    def __len__(self):
        return self.length

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[position] for position in range(*index.indices(self.length))]
        position = index + self.length if index < 0 else index
        if not 0 <= position < self.length:
            raise IndexError(index)
        return make_commit(*self.key, position)

    def position(self, wanted, prefix=False):
        """Where the commit `wanted` is (the first whose id starts with it, with `prefix`), or None."""
        seed, repository, branch, _ = self.key
        for position, sha in enumerate(commit_ids(seed, repository, branch, self.length)):
            if sha == wanted or (prefix and sha.startswith(wanted)):
                return position
        return None


NO_COMMITS = Commits(None, "", "", 0.0, 0)     # a service built from an image or a chart: no repository
