"""Bounded YAML: every scenario and fixture document the mock reads, from a file or a request.

A document is refused before any of it is built when it is larger than its size bound, nests
deeper than MAX_DEPTH, or when it would expand past its expansion bound (`Expansion`). An alias
repeats the node its anchor names, so a few hundred bytes of anchors whose nodes list the
previous alias ten times stand for billions of nodes, and one long string named a hundred
thousand times stands for gigabytes, which every reply, export or save that writes the document
out as JSON would have to write; an alias inside the node it names stands for a structure without
end. What a document expands to is counted in bytes (the values and keys of the document as
built, each alias counted as a copy of what it names: a document without aliases never expands
past its own size) and in nodes (those its aliases add). `load` first reads the document's events
once (a flat stream: no tree is built and nothing nests on the stack, which a deep document would
overflow), adding up what each anchor stands for, and stops at the first bound crossed; only a
document within every bound is then built.
"""

import yaml

MAX_DEPTH = 64                       # nested mappings and lists
MAX_ALIAS_NODES = 100_000            # nodes all the aliases of a document (a fixtures folder's) may add together
SCENARIO_BYTES = 1024 * 1024         # one scenario document, as sent and as it expands
FIXTURE_BYTES = 64 * 1024 * 1024     # all the files of one fixtures folder together, as read and as they expand

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)   # libyaml's parser where PyYAML has it: far faster
_OPEN = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
_CLOSE = (yaml.SequenceEndEvent, yaml.MappingEndEvent)


class BoundError(ValueError):
    """A document past one of the bounds: the problem, naming the bound, and its line (or None)."""

    def __init__(self, problem, line=None):
        super().__init__(problem)
        self.problem, self.line = problem, line


class Expansion:
    """What documents may expand to: `max_bytes` of values and keys (each alias counted as a copy of what
    it names) and `max_nodes` nodes added by aliases. One for each document read alone; the files of a
    fixtures folder share one, so that the bound holds for the folder."""

    def __init__(self, max_bytes, max_nodes=MAX_ALIAS_NODES, what="such documents"):
        self.max_bytes, self.max_nodes, self.what = max_bytes, max_nodes, what
        self.bytes = self.nodes = 0

    def add(self, nodes, size, event):
        """Count what an event adds; BoundError, at its line, when that crosses a bound."""
        self.nodes += nodes
        self.bytes += size
        if self.nodes > self.max_nodes:
            raise BoundError(f"its aliases expand it by more than {self.max_nodes} nodes (the bound of {self.what}); "
                             "write the repeated parts out, or use fewer aliases", _line(event))
        if self.bytes > self.max_bytes:
            raise BoundError(f"it expands to more than {size_text(self.max_bytes)} of values and keys (the bound of "
                             f"{self.what}, each alias counted as a copy of what it names); use fewer or smaller "
                             "aliases", _line(event))


def size_text(limit):
    return f"{limit // (1024 * 1024)} MiB" if limit % (1024 * 1024) == 0 else f"{limit} bytes"


def load(data, loader=LOADER, max_bytes=SCENARIO_BYTES, expansion=None):
    """The document in `data` (str or bytes), or BoundError; yaml.YAMLError when it is not YAML. `expansion`:
    the bound it expands within (by default one of `max_bytes` for this document alone)."""
    return compose(data, loader, max_bytes, expansion)[1]


def compose(data, loader=LOADER, max_bytes=SCENARIO_BYTES, expansion=None):
    """(node tree, document) of `data`: the tree tells where each part is (its lines)."""
    size = len(data.encode("utf-8", "surrogatepass")) if isinstance(data, str) else len(data)
    if size > max_bytes:
        raise BoundError(f"the document is larger than {size_text(max_bytes)} (the bound of such documents)")
    reader = loader(data)
    try:
        check(reader, expansion if expansion is not None else Expansion(max_bytes))
    except yaml.YAMLError as error:
        # libyaml 0.2.6 (PyYAML 6.0.4) stops past 1,000 levels itself, before any event of them is read
        if "maximum nesting depth" not in str(getattr(error, "problem", "")):
            raise
        mark = getattr(error, "problem_mark", None)
        raise BoundError(f"nests deeper than {MAX_DEPTH} levels (the bound)", mark.line + 1 if mark else None) from None
    finally:
        reader.dispose()
    return _build(loader(data))


def _build(builder):
    """The checked document built: (node tree, document). A value its tag cannot be made of (a date that is
    not one, an integer of more digits than Python reads) is a yaml.YAMLError, as a syntax error is."""
    try:
        node = builder.get_single_node()
        try:
            return node, (builder.construct_document(node) if node is not None else None)
        except (ValueError, OverflowError) as error:
            raise yaml.constructor.ConstructorError(None, None, f"a value that cannot be read ({error})",
                                                    None) from None
    finally:
        builder.dispose()


def check(reader, expansion):
    """Walk a loader's events: BoundError at the first bound crossed (depth, what it expands to)."""
    sizes: dict[str, tuple | None] = {}  # anchor -> (nodes, bytes) it stands for (None while its node is open)
    stack: list[list] = []               # [anchor, nodes, bytes so far] of each mapping or list still open
    while reader.check_event():
        event = reader.get_event()
        if isinstance(event, _OPEN):
            if len(stack) >= MAX_DEPTH:
                raise BoundError(f"nests deeper than {MAX_DEPTH} levels (the bound)", _line(event))
            stack.append([event.anchor, 1, 0])
            if event.anchor is not None:
                sizes[event.anchor] = None       # named while still open: an alias to it now is inside it
            continue
        if isinstance(event, _CLOSE):
            anchor, nodes, size = stack.pop()
        elif isinstance(event, yaml.ScalarEvent):
            anchor, nodes, size = event.anchor, 1, _bytes(event.value)
            expansion.add(0, size, event)
        elif isinstance(event, yaml.AliasEvent):
            anchor, (nodes, size) = None, _alias(event, sizes)
            expansion.add(nodes, size, event)
        else:
            continue                 # stream and document starts and ends
        if anchor is not None:
            sizes[anchor] = (nodes, size)
        if stack:
            stack[-1][1] += nodes
            stack[-1][2] += size


def _bytes(text):
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _alias(event, sizes):
    """(nodes, bytes) an alias stands for; an alias inside the node it names is refused."""
    if event.anchor in sizes and sizes[event.anchor] is None:
        raise BoundError("an alias is inside the node it names (a structure without end)", _line(event))
    return sizes.get(event.anchor) or (1, 0)    # an unknown anchor: the loader names the problem


def _line(event):
    return event.start_mark.line + 1 if event.start_mark is not None else None
