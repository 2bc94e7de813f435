"""The API: the request path of one call (route, authenticate, rate limit, authorize, validate, rules, handler,
render, journal) and the handlers of the operations, by operationId."""
