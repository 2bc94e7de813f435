"""Where things are answered: the API's optional prefix, the document's paths and the control API's root."""

API_PREFIX = "/api/v1"                           # the same operations answer under it (the spec's pagination example)
DOCUMENT_PATHS = ("/openapi.json", "/openapi.yaml")
CONTROL = "/_mock"


def without_api_prefix(path):
    """The path an operation is routed by: `/api/v1/organization` -> `/organization`."""
    return path[len(API_PREFIX):] if path.startswith(API_PREFIX + "/") else path
