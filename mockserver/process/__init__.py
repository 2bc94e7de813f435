"""The serving process: its memory allocator, its garbage collector's policy, and the limits of a connection below
HTTP."""
