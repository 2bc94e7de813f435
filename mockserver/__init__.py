"""A high-fidelity mock server of the Infrastructure Deployment Platform API."""

from mockserver.core.version import __version__

__all__ = ["__version__"]
