"""Handlers of the API's operations, by operationId: thin functions over the store.

A handler takes a `Context` and returns the reply body (the status is the operation's
documented success status); it raises `ApiError` for anything else.
"""

from mockserver.api.handlers import history, organization, platform, services, variables

HANDLERS = {**organization.HANDLERS, **services.HANDLERS, **history.HANDLERS, **variables.HANDLERS,
            **platform.HANDLERS}
PRECHECKS = platform.PRECHECKS
