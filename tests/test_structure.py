"""The shape of the package: imports go one way (no circle), functions stay short, and the project
cites only its own documents. Read from the source with `ast`, so nothing is imported to check it."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "mockserver"
LONGEST = 60            # lines a function may have, its docstring included


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
    assert "mockserver.handlers.fixtures" in graph["mockserver.server"]     # from .handlers.fixtures import ...
    assert "mockserver.persistence" in graph["mockserver.server"]           # imported inside a function
    assert "mockserver.handlers" in graph["mockserver.handlers.fixtures"]   # from . import HANDLERS


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
    tree = ast.parse((PACKAGE / "control.py").read_text())
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
