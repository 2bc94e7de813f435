"""A valid request of every control route (method, path) -> JSON body or None, in an order that
makes each one meaningful (a snapshot is saved before it is read, restored and deleted), and the
route template each concrete path stands for."""

SCENARIO = {"name": "fuzz", "rules": [{"match": {"operation": "getOrganization"}, "effect": {"latency_ms": 1}}]}

CONTROL_REQUESTS = {
    ("GET", "/_mock/health"): None,
    ("GET", "/_mock/state"): None,
    ("GET", "/_mock/state/export"): None,
    ("GET", "/_mock/state/tree"): None,
    ("GET", "/_mock/clock"): None,
    ("POST", "/_mock/clock/advance"): {"seconds": 1},
    ("GET", "/_mock/calls?limit=5"): None,
    ("POST", "/_mock/calls/verify"): {"method": "GET", "at_least": 0},
    ("GET", "/_mock/calls/coverage"): None,
    ("GET", "/_mock/calls/rows?limit=5"): None,
    ("GET", "/_mock/calls/1"): None,
    ("GET", "/_mock/calls/export?format=har"): None,
    ("POST", "/_mock/provider-states"): {"state": "project {id} does not exist", "params": {"id": "fuzz-gone"},
                                         "action": "setup"},
    ("GET", "/_mock/deployments"): None,
    ("POST", "/_mock/scenarios"): SCENARIO,
    ("PUT", "/_mock/scenarios/fuzz"): SCENARIO,
    ("GET", "/_mock/scenarios"): None,
    ("GET", "/_mock/scenarios/fuzz"): None,
    ("DELETE", "/_mock/scenarios/fuzz"): None,
    ("GET", "/_mock/webhooks/deliveries"): None,
    ("POST", "/_mock/tokens"): {"scopes": ["Read"], "ttl_seconds": 60},
    ("PUT", "/_mock/sandboxes/fuzz-box"): {"clock": "manual", "rate_limit": "5/10s"},
    ("GET", "/_mock/sandboxes/fuzz-box"): None,
    ("POST", "/_mock/sandboxes/fuzz-box/reset"): {},
    ("GET", "/_mock/sandboxes"): None,
    ("POST", "/_mock/snapshots"): {"name": "fuzz-snap", "replace": True},
    ("GET", "/_mock/snapshots"): None,
    ("GET", "/_mock/snapshots/fuzz-snap"): None,
    ("POST", "/_mock/snapshots/fuzz-snap/restore"): None,
    ("DELETE", "/_mock/snapshots/fuzz-snap"): None,
    ("GET", "/_mock/openapi.json"): None,
    ("GET", "/_mock/ui"): None,
    ("GET", "/_mock/ui/"): None,
    ("GET", "/_mock/ui/app.js"): None,
    ("POST", "/_mock/reset"): {"scenarios": True},
    ("DELETE", "/_mock/calls"): None,
    ("DELETE", "/_mock/sandboxes/fuzz-box"): None,
    ("DELETE", "/_mock/sandboxes"): None,
    ("GET", "/openapi.json"): None,
    ("GET", "/openapi.yaml"): None,
    ("GET", "/"): None,
}

CONTROL_TEMPLATES = {
    "/_mock/calls?limit=5": "/_mock/calls", "/_mock/calls/rows?limit=5": "/_mock/calls/rows",
    "/_mock/calls/1": "/_mock/calls/{id:int}",
    "/_mock/calls/export?format=har": "/_mock/calls/export", "/_mock/scenarios/fuzz": "/_mock/scenarios/{name}",
    "/_mock/sandboxes/fuzz-box": "/_mock/sandboxes/{name}", "/_mock/sandboxes/fuzz-box/reset": "/_mock/sandboxes/{name}/reset",
    "/_mock/snapshots/fuzz-snap": "/_mock/snapshots/{name}",
    "/_mock/snapshots/fuzz-snap/restore": "/_mock/snapshots/{name}/restore", "/_mock/ui/app.js": "/_mock/ui/{file}",
}
