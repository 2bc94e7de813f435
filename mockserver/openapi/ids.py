"""Identifiers of the default fixtures, shared by the document's examples and the fixtures.

Path parameter examples in the document point at these records, so that the examples
a client or a contract tester sends reach real resources of the default organization.
"""

IDS = {
    "organization": "8d3e6a4b-1f2c-4b7a-9e1d-3c5f7a9b2d10",
    "other_organization": "5b1c9e2a-7d4f-4a3b-8c6e-0f2d4b6a8c21",
    "cluster": "c1a5e7d9-3b2f-4e6a-8d1c-9f7b5a3e1d42",
    "project": "2f6b8d0a-4c1e-4b3d-9a5f-7e9c1b3d5f63",
    "environment": "e4a6c8b0-2d4f-4a6c-8e0b-2d4f6a8c0e84",
    "application": "a7c9e1b3-5d7f-4b9d-8f1b-3d5f7b9d1fa5",
    "container": "c8e0a2c4-6d8f-4a0c-9e2a-4c6e8a0c2e69",
    "database": "d0e2a4c6-8a0c-4e2a-8c4e-6a8c0e2a4c06",
    "job": "b3d5f7a9-1c3e-4f5a-9b1d-5f7a9c1e3b27",
    "helm": "f6a8c0e2-4b6d-4f8a-8c0e-6b8d0f2a4c48",
    "terraform": "e9f1a3b5-7c9e-4b1d-8f3a-5b7d9f1b3d8a",
    "registry": "0a2c4e6f-8b0d-4f2a-9c4e-6f8b0d2f4a6c",
    "labels_group": "1b3d5f7a-9c1e-4a3b-8d5f-7a9c1e3b5d7f",
    "credentials": "3c5e7a9b-1d3f-4b5c-8e7a-9b1d3f5c7e9a",
    "webhook": "4d6f8b0c-2e4a-4c6d-9f8b-0c2e4a6d8f0b",
    "variable": "6e8a0c2d-4f6b-4d8e-8a0c-2d4f6b8e0a2c",
    "secret": "7f9b1d3e-5a7c-4e9f-9b1d-3e5a7c9f1b3d",
    "custom_domain": "9a1c3e5f-7b9d-4f1a-8c3e-5f7b9d1a3c5e",
    "backup": "5e7a9c1b-3d5f-4a7e-9c1b-3d5f7a9e1c3b",
    "user": "3a5c7e9b-1d3f-4a5c-9e7b-1d3f5a7c9e1b",
}

FIXED_REGISTRY_URLS = {
    "PUBLICHUB_CR": "https://registry.publichub.example",
    "CODEHOST1_CR": "https://registry.codehost1.example",
    "CODEHOST2_CR": "https://registry.codehost2.example",
}
