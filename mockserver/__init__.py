"""A high-fidelity mock server of the Infrastructure Deployment Platform API."""

__version__ = "0.1.0"
