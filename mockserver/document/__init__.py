"""The API document: written from tables (schemas, operations, ids), compiled once at start-up into a router and
validators; the control API's own document beside it."""
