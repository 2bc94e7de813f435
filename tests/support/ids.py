"""The ids of the default fixtures (fixtures/*.yaml) the tests name, and the headers of their four API tokens."""

ORG = "8d3e6a4b-1f2c-4b7a-9e1d-3c5f7a9b2d10"
OTHER_ORG = "5b1c9e2a-7d4f-4a3b-8c6e-0f2d4b6a8c21"
CLUSTER = "c1a5e7d9-3b2f-4e6a-8d1c-9f7b5a3e1d42"
PROJECT = "2f6b8d0a-4c1e-4b3d-9a5f-7e9c1b3d5f63"
ENV = "e4a6c8b0-2d4f-4a6c-8e0b-2d4f6a8c0e84"
APP = "a7c9e1b3-5d7f-4b9d-8f1b-3d5f7b9d1fa5"
CONTAINER = "c8e0a2c4-6d8f-4a0c-9e2a-4c6e8a0c2e69"
DATABASE = "d0e2a4c6-8a0c-4e2a-8c4e-6a8c0e2a4c06"
JOB = "b3d5f7a9-1c3e-4f5a-9b1d-5f7a9c1e3b27"
HELM = "f6a8c0e2-4b6d-4f8a-8c0e-6b8d0f2a4c48"
TERRAFORM = "e9f1a3b5-7c9e-4b1d-8f3a-5b7d9f1b3d8a"
REGISTRY = "0a2c4e6f-8b0d-4f2a-9c4e-6f8b0d2f4a6c"
ADMIN = {"Authorization": "Token mock-admin-token"}
READ = {"Authorization": "Token mock-read-token"}
WRITE = {"Authorization": "Token mock-write-token"}
DEPLOY = {"Authorization": "Token mock-deploy-token"}
