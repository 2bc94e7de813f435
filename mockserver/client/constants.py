"""The facts every control client holds the same: written by `python -m mockserver.client.generate`
from the control document (mockserver/document/control.yaml); do not edit."""

import re

VERSION = '0.1.0'
DEFAULT_TOKENS = {                      # short key -> value
    'admin': 'mock-admin-token',
    'read': 'mock-read-token',
    'write': 'mock-write-token',
    'deploy': 'mock-deploy-token',
}
DEFAULT_TOKEN_NAMES = {                 # every name of a default token -> its short key
    'admin': 'admin',
    'read': 'read',
    'write': 'write',
    'deploy': 'deploy',
    'reader': 'read',
    'writer': 'write',
    'deployer': 'deploy',
}
DEFAULT_ORGANIZATION = '8d3e6a4b-1f2c-4b7a-9e1d-3c5f7a9b2d10'
DEFAULT_APPLICATION = 'a7c9e1b3-5d7f-4b9d-8f1b-3d5f7b9d1fa5'
SANDBOX_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}\Z")
RESERVED_SANDBOX_NAMES = ('.', '..')
SERVER_JOURNAL_BODY_LIMIT = 65536
MIN_JOURNAL_BODY_LIMIT = 1024
MAX_JOURNAL_BODY_LIMIT = 16777216
JOURNAL_BODY_LIMIT = 1048576           # of each test's sandbox
PRIVATE_SNAPSHOT_HEAD = 48
PRIVATE_SNAPSHOT_DIGEST = 'sha1'
PRIVATE_SNAPSHOT_DIGEST_CHARS = 12
PRIVATE_SNAPSHOT_KEY = '{sandbox}|{name}'
