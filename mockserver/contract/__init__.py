"""The contract tools: the recording proxy in front of the platform, drift against the document, fixtures harvested
from replies, parity runs, and the provider states that replay a pact."""
