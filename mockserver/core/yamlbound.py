"""Bounded YAML: every scenario and fixture document the mock reads, from a file or a request.

A document is refused before any of it is built when it is larger than its size bound, nests
deeper than MAX_DEPTH, or when its aliases would add more than MAX_ALIAS_NODES nodes. An alias
repeats the node its anchor names, so a few hundred bytes of anchors whose nodes list the
previous alias ten times stand for billions of nodes; an alias inside the node it names stands
for a structure without end. `load` first reads the document's events once (a flat stream: no
tree is built and nothing nests on the stack, which a deep document would overflow), adding up
what each alias stands for, and stops at the first bound crossed; only a document within every
bound is then built.
"""

import yaml

MAX_DEPTH = 64                       # nested mappings and lists
MAX_ALIAS_NODES = 100_000            # nodes all the aliases of a document may add together
SCENARIO_BYTES = 1024 * 1024         # one scenario document
FIXTURE_BYTES = 64 * 1024 * 1024     # all the files of one fixtures folder together

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)   # libyaml's parser where PyYAML has it: far faster
_OPEN = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
_CLOSE = (yaml.SequenceEndEvent, yaml.MappingEndEvent)


class BoundError(ValueError):
    """A document past one of the bounds: the problem, naming the bound, and its line (or None)."""

    def __init__(self, problem, line=None):
        super().__init__(problem)
        self.problem, self.line = problem, line


def size_text(limit):
    return f"{limit // (1024 * 1024)} MiB" if limit % (1024 * 1024) == 0 else f"{limit} bytes"


def load(data, loader=LOADER, max_bytes=SCENARIO_BYTES):
    """The document in `data` (str or bytes), or BoundError; yaml.YAMLError when it is not YAML."""
    return compose(data, loader, max_bytes)[1]


def compose(data, loader=LOADER, max_bytes=SCENARIO_BYTES):
    """(node tree, document) of `data`: the tree tells where each part is (its lines)."""
    size = len(data.encode("utf-8", "surrogatepass")) if isinstance(data, str) else len(data)
    if size > max_bytes:
        raise BoundError(f"the document is larger than {size_text(max_bytes)} (the bound of such documents)")
    reader = loader(data)
    try:
        check(reader)
    except yaml.YAMLError as error:
        # libyaml 0.2.6 (PyYAML 6.0.4) stops past 1,000 levels itself, before any event of them is read
        if "maximum nesting depth" not in str(getattr(error, "problem", "")):
            raise
        mark = getattr(error, "problem_mark", None)
        raise BoundError(f"nests deeper than {MAX_DEPTH} levels (the bound)", mark.line + 1 if mark else None) from None
    finally:
        reader.dispose()
    builder = loader(data)
    try:
        node = builder.get_single_node()
        return node, (builder.construct_document(node) if node is not None else None)
    finally:
        builder.dispose()


def check(reader):
    """Walk a loader's events: BoundError at the first bound crossed (depth, aliases)."""
    sizes: dict[str, int | None] = {}  # anchor -> nodes it stands for (None while its node is still open)
    stack: list[list] = []             # [anchor, nodes so far] of each mapping or list still open
    added = 0
    while reader.check_event():
        event = reader.get_event()
        if isinstance(event, _OPEN):
            if len(stack) >= MAX_DEPTH:
                raise BoundError(f"nests deeper than {MAX_DEPTH} levels (the bound)", _line(event))
            stack.append([event.anchor, 1])
            if event.anchor is not None:
                sizes[event.anchor] = None       # named while still open: an alias to it now is inside it
            continue
        if isinstance(event, _CLOSE):
            anchor, size = stack.pop()
        elif isinstance(event, yaml.ScalarEvent):
            anchor, size = event.anchor, 1
        elif isinstance(event, yaml.AliasEvent):
            anchor, size = None, _alias(event, sizes)
            added += size
            if added > MAX_ALIAS_NODES:
                raise BoundError(f"its aliases expand it by more than {MAX_ALIAS_NODES} nodes (the bound); "
                                 "write the repeated parts out, or use fewer aliases", _line(event))
        else:
            continue                 # stream and document starts and ends
        if anchor is not None:
            sizes[anchor] = size
        if stack:
            stack[-1][1] += size


def _alias(event, sizes):
    """The nodes an alias stands for; an alias inside the node it names is refused."""
    if event.anchor in sizes and sizes[event.anchor] is None:
        raise BoundError("an alias is inside the node it names (a structure without end)", _line(event))
    return sizes.get(event.anchor, 1)    # an unknown anchor: the loader names the problem


def _line(event):
    return event.start_mark.line + 1 if event.start_mark is not None else None
