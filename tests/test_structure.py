"""The shape of the package: its groups import one way (ARCHITECTURE.md), no circle, the domain never touches
the web stack, functions stay short, and the project cites only its own documents. Read from the source with
`ast`, so nothing is imported to check it."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "mockserver"
LONGEST = 60            # lines a function may have, its docstring included

# The groups, lowest first (ARCHITECTURE.md): a module may import its own group and the groups before it.
# `face` is the package's public face at its top level (the ASGI app, the Python client, the pytest plugin).
LAYERS = ("core", "edge", "process", "document", "calls", "world", "api", "sandboxes", "contract", "control",
          "face", "campaign", "cli")
FACE = {"mockserver", "mockserver.app", "mockserver.pytest_plugin"}     # and mockserver.client.*
WEB_STACK = ("starlette", "uvicorn", "httpx", "httptools", "opentelemetry")   # tracing too: lent as a hook
NO_WEB = ("core", "document", "calls", "world")     # the domain: it never imports the web stack


def layer_of(module):
    """The group a module of the package belongs to."""
    if module in FACE or module.split(".")[:2] == ["mockserver", "client"]:
        return "face"
    if module == "mockserver.__main__":
        return "cli"
    return module.split(".")[1]


def against_the_order(graph):
    """Every import of the graph that goes up the order of LAYERS, as `importer -> imported (layer > layer)`."""
    rank = {name: index for index, name in enumerate(LAYERS)}
    found = []
    for importer, imported in sorted(graph.items()):
        for target in sorted(imported):
            if rank[layer_of(target)] > rank[layer_of(importer)]:
                found.append(f"{importer} -> {target} ({layer_of(importer)} imports {layer_of(target)})")
    return found


def module_name(path):
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path, modules):
    """The package's modules that `path` imports, at any depth of its code (lazy imports count too)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:           # `from . import handlers` names a module, not a value
                found.add(f"{target}.{alias.name}" if f"{target}.{alias.name}" in modules else target)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {module for module in found if module in modules and module != name}


def import_graph():
    paths = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    return {name: imports_of(path, paths) for name, path in paths.items()}


def cycles(graph):
    """Every circle of the graph, each as the list of modules met along it (depth-first search)."""
    found, state = [], {}

    def visit(node, trail):
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                found.append(trail[trail.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, trail + [nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return found


def test_the_cycle_finder_finds_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_lazy_and_relative_imports():
    graph = import_graph()
    assert "mockserver.api.replay" in graph["mockserver.sandboxes.worlds"]      # from ... import fresh_world
    assert "mockserver.sandboxes.statefile" in graph["mockserver.sandboxes.worlds"]   # inside a function
    assert "mockserver.api.handlers" in graph["mockserver.api.replay"]          # from ...handlers import HANDLERS


def test_every_module_belongs_to_a_group_of_the_order():
    strays = [module for module in import_graph() if layer_of(module) not in LAYERS]
    assert strays == [], f"modules outside the groups of ARCHITECTURE.md: {strays}"


def test_the_order_check_finds_an_import_that_goes_up():
    planted = {"mockserver.core.errors": {"mockserver.world.store"},
               "mockserver.world.store": {"mockserver.core.errors"},
               "mockserver.app": {"mockserver.cli.main"}, "mockserver.cli.main": {"mockserver.app"}}
    assert against_the_order(planted) == [
        "mockserver.app -> mockserver.cli.main (face imports cli)",
        "mockserver.core.errors -> mockserver.world.store (core imports world)"]


def test_the_groups_import_only_themselves_and_the_groups_below():
    assert against_the_order(import_graph()) == []


def test_the_domain_never_imports_the_web_stack():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if layer_of(module_name(path)) not in NO_WEB:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            found += [f"{path.relative_to(ROOT)}: {name}" for name in names if name.split(".")[0] in WEB_STACK]
    assert found == []


def test_no_module_of_the_package_imports_one_that_imports_it_back():
    assert cycles(import_graph()) == []


def test_no_function_is_longer_than_the_bound():
    long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > LONGEST:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {lines} lines")
    assert long == [], f"functions over {LONGEST} lines:\n" + "\n".join(long)


def test_the_control_api_is_one_table_of_plain_functions():
    tree = ast.parse((PACKAGE / "control" / "routes.py").read_text())
    top = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    nested = [node.name for fn in tree.body if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
              for node in ast.walk(fn) if node is not fn and isinstance(node, ast.AsyncFunctionDef)]
    assert nested == ["endpoint"]                  # only the method dispatcher of `route` is nested
    assert {"health", "reset", "calls", "verify", "put_sandbox", "restore_snapshot"} <= top
    tables = [node for node in tree.body if isinstance(node, ast.Assign)
              and any(getattr(target, "id", None) == "ROUTES" for target in node.targets)]
    assert len(tables) == 1


def test_the_project_cites_only_its_own_documents():
    """Decisions are in docs/decisions.md: no file names the reading aid the project was built with."""
    needle, cited = "api-" + "decisions", []
    for path in ROOT.rglob("*"):
        if any(part in (".git", ".venv", "reports", "__pycache__", "node_modules") for part in path.parts):
            continue
        if path.is_file() and path.suffix in (".py", ".md", ".yaml", ".yml", ".toml", ".cfg", ".txt", ".js", ""):
            try:
                if needle in path.read_text():
                    cited.append(str(path.relative_to(ROOT)))
            except (UnicodeDecodeError, OSError):
                continue
    assert cited == []


def defined_by_group():
    """name -> the groups whose modules define a function, method or class of that name."""
    found: dict[str, set] = {}
    for path in PACKAGE.rglob("*.py"):
        group = layer_of(module_name(path))
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                found.setdefault(node.name, set()).add(group)
    return found


def calls_up_through_getattr(sources, defined):
    """`getattr(x, "name")` in a module of one group where `name` is defined only by groups after it: a call into
    a higher group that the import graph cannot see (a hidden door). `sources`: module -> source text."""
    rank = {name: index for index, name in enumerate(LAYERS)}
    found = []
    for module, text in sorted(sources.items()):
        group = layer_of(module)
        for node in ast.walk(ast.parse(text)):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "getattr" and len(node.args) >= 2
                    and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
                name = node.args[1].value
                groups = defined.get(name, set())
                if groups and all(rank[other] > rank[group] for other in groups):
                    found.append(f"{module}:{node.lineno} getattr(..., {name!r}) ({group} reaches "
                                 f"{', '.join(sorted(groups))})")
    return found


def test_the_getattr_check_finds_a_hidden_door_up():
    defined = {"answer_whole": {"face"}, "mallctl": set(), "render": {"core"}}
    planted = {"mockserver.process.connections": "door = getattr(self.app, 'answer_whole', None)\n"
                                                 "other = getattr(lib, 'mallctl', None)\n"
                                                 "fine = getattr(error, 'render')\n"}
    assert calls_up_through_getattr(planted, defined) == [
        "mockserver.process.connections:1 getattr(..., 'answer_whole') (process reaches face)"]


def test_no_group_calls_into_a_higher_one_through_getattr():
    sources = {module_name(path): path.read_text() for path in PACKAGE.rglob("*.py")}
    assert calls_up_through_getattr(sources, defined_by_group()) == []
