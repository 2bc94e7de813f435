"""The call journal: every API call a world answered, kept compactly for tests to assert on, and the documents written
from it (Pact, HAR, operation coverage)."""
