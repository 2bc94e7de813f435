"""The control API under /_mock (one route table), the inspector page and the start page at /."""
