"""Requests built from the API document's examples: path parameters, query parameters and a request body
(the first branch of a oneOf; read-only fields and optional write-only ones left out), as a contract tester
or a client reading the document sends them first (document/test_examples_reach.py checks that each such
request reaches its 2xx)."""

METHODS = ("get", "post", "put", "delete")


def resolve(schema, components):
    while "$ref" in schema:
        schema = components[schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def example_of(schema, components):
    """A value built from the examples of a schema (first branch of a oneOf), or None."""
    schema = resolve(schema, components)
    if "example" in schema and schema.get("type") != "object":
        return schema["example"]
    if "oneOf" in schema:
        return example_of(schema["oneOf"][0], components)
    if schema.get("type") == "array":
        item = example_of(schema["items"], components)
        return [] if item is None else [item]
    if schema.get("type") == "object" or "properties" in schema:
        out = {}
        for name, sub in schema.get("properties", {}).items():
            sub_schema = resolve(sub, components)
            if sub_schema.get("readOnly") or sub_schema.get("writeOnly") and name not in schema.get("required", []):
                continue
            value = example_of(sub_schema, components)
            if value is not None:
                out[name] = value
        return out
    return None


def example_request(path, raw, components):
    for param in raw.get("parameters", []):
        if param["in"] == "path":
            path = path.replace(f"{{{param['name']}}}", str(param["example"]))
    query = {p["name"]: p["schema"]["example"] for p in raw.get("parameters", [])
             if p["in"] == "query" and "example" in p.get("schema", {})}
    body = None
    if "requestBody" in raw:
        media = raw["requestBody"]["content"]["application/json"]
        body = media.get("example", example_of(media["schema"], components))
    return path, query, body
