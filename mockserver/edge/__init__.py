"""The HTTP edge: what a request and a reply are at the level of HTTP, whatever world answers them (CORS, request ids,
the access log, network faults, bounded bodies and JSON). Holds no state."""
