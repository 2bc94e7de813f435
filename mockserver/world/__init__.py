"""One world: the state a sandbox owns and a reset rebuilds (store, tokens, rate limits, deployments on the clock,
webhooks, scenarios, fake data), read from fixture files and frozen to bytes. Knows nothing of HTTP or of other
worlds."""
