"""The guide's reference pages, written from the code: the command line (the option table, and every command's
own arguments), the control API (its document), the scenario format (its JSON Schema), the operations (the API
document) and the expectations format of fault campaigns (its JSON Schema).

    python -m mockserver.cli.reference           # rewrite docs/reference/*.md
    python -m mockserver.cli.reference --check   # exit 1 when a page differs from what the code says

A page is never edited by hand: tests/cli/test_reference.py fails when one is stale.
"""

import argparse
import sys
from pathlib import Path

import yaml

from mockserver.cli.main import COMMANDS, OPTIONS
from mockserver.document.spec import CONTROL_DOCUMENT, DOCUMENT
from mockserver.world.scenarios import schema_document

PAGES = Path(__file__).resolve().parents[2] / "docs" / "reference"
GENERATED = "<!-- Written by `python -m mockserver.cli.reference` from the code: do not edit by hand. -->\n\n"


def cell(text):
    """Text fit for a Markdown table cell."""
    return " ".join(str(text).split()).replace("|", "\\|")


def shown(value):
    if value is None or value == []:
        return ""
    if isinstance(value, Path):                                   # the fixtures: where the package finds its own
        return "the embedded fixtures"
    if isinstance(value, tuple) and len(value) == 2:            # a rate: (requests, seconds)
        return f"`{value[0]}/{value[1]:g}`"
    return f"`{value}`"


# ---------------------------------------------------------------- the command line
def cli_page(options=OPTIONS, commands=COMMANDS):
    lines = [GENERATED + "# Command line", "",
             "`mockserver COMMAND [options]`. Every option of the option table may also be set by the environment "
             "variables beside it (the first one set wins; the command line wins over all). `mockserver COMMAND "
             "--help` prints the same.", ""]
    subcommands = _subcommands()
    for command in commands:
        rows = [option for option in options if option.of(command)]
        sub = subcommands[command]
        lines += [f"## `mockserver {command}`", "", cell(sub.description or ""), ""]
        if rows:
            lines += ["| option | environment | default | what it does |", "|---|---|---|---|"]
            for option in rows:
                flag = cell(f"`{option.flag} {option.metavar}`" if option.metavar else f"`{option.flag}`")
                env = ", ".join(f"`{name}`" for name in option.env)
                lines.append(f"| {flag} | {env} | {shown(option.default)} | {cell(option.help)} |")
        else:
            lines += ["| argument | default | what it does |", "|---|---|---|"]
            lines += [_argument_row(action) for action in sub._actions if action.dest != "help"]
        lines.append("")
    return "\n".join(lines)


def _subcommands():
    """The parsers of `mockserver`'s commands, by name."""
    import argparse

    from mockserver.cli.main import parser
    top = parser()
    choices = next(action for action in top._actions if isinstance(action, argparse._SubParsersAction)).choices
    return dict(choices)


def _argument_row(action):
    """A row of a command whose options are argparse's own (export, usage, mcp, campaign)."""
    if action.option_strings:
        name = ", ".join(action.option_strings) + (f" {action.metavar}" if action.metavar else "")
    else:
        name = action.metavar or action.dest
    default = action.default if action.default not in (None, False, [], "==SUPPRESS==") else None
    return f"| `{cell(name)}` | {shown(default)} | {cell(action.help or '')} |"


# ---------------------------------------------------------------- the control API
def control_page(document=None):
    document = document or yaml.safe_load(CONTROL_DOCUMENT.read_text())
    lines = [GENERATED + "# Control API", "", cell(document["info"]["description"]), "",
             "| method | path | client method | what it does |", "|---|---|---|---|"]
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if not isinstance(operation, dict):
                continue
            client = operation.get("x-client")
            name = f"`{client}`" if client else "(none: a file of the page)"
            lines.append(f"| {method.upper()} | `{path}` | {name} | {cell(operation.get('summary', ''))} |")
    lines += ["", "The client method is the Python name (`mockserver.client.Client`); the TypeScript and Go clients "
              "use the same name in their casing (`mint_token`: `mintToken`, `MintToken`).", ""]
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if isinstance(operation, dict):
                lines += control_details(method, path, operation)
    return "\n".join(lines)


def control_details(method, path, operation):
    out = [f"## {method.upper()} `{path}`", "", cell(operation.get("summary", "")), ""]
    if operation.get("description"):
        out += [cell(operation["description"]), ""]
    params = [p for p in operation.get("parameters", []) if isinstance(p, dict) and "name" in p]
    if params:
        out += ["| parameter | in | what it is |", "|---|---|---|"]
        out += [f"| `{p['name']}` | {p.get('in', '')} | {cell(p.get('description', ''))} |" for p in params]
        out.append("")
    body = operation.get("requestBody", {}).get("content", {})
    for media, content in body.items():
        fields = content.get("schema", {}).get("properties", {})
        if fields:
            out += [f"Body ({media}): " + ", ".join(f"`{name}`" for name in fields), ""]
    statuses = ", ".join(str(status) for status in operation.get("responses", {}))
    return out + [f"Answers: {statuses}.", ""]


# ---------------------------------------------------------------- the scenario format
def scenario_page(schema=None):
    schema = schema or schema_document()
    lines = [GENERATED + "# Scenario format", "", cell(schema.get("description", "")), "",
             "The JSON Schema is served at `/_mock/schemas/scenario.json` (editors: "
             "`# yaml-language-server: $schema=<that URL>`). Every field:", "",
             "| field | type | required | what it is |", "|---|---|---|---|"]
    lines += schema_rows(schema, "")
    return "\n".join(lines) + "\n"


def schema_rows(schema, prefix):
    out = []
    required = set(schema.get("required", ()))
    for name, field in schema.get("properties", {}).items():
        where = f"{prefix}{name}"
        kind = field.get("type") or ("one of " + ", ".join(map(str, field["enum"])) if "enum" in field else "")
        if "enum" in field and field.get("type"):
            kind += ": " + ", ".join(map(str, field["enum"]))
        facts = [field.get("description", "")]
        facts += [f"{key} {field[key]}" for key in ("minimum", "maximum", "minItems", "maxItems", "pattern")
                  if key in field]
        out.append(f"| `{where}` | {cell(kind)} | {'yes' if name in required else ''} | "
                   f"{cell('; '.join(fact for fact in facts if fact))} |")
        if field.get("type") == "object":
            out += schema_rows(field, where + ".")
        elif field.get("type") == "array" and isinstance(field.get("items"), dict):
            out += schema_rows(field["items"], where + "[].")
    return out


# ---------------------------------------------------------------- the operations
def operations_page(document=None):
    document = document or yaml.safe_load(DOCUMENT.read_text())
    lines = [GENERATED + "# Operations", "",
             "Every operation of the API document (`/openapi.json`): the scope its token needs (Read: GET only; "
             "Write: Read and create, edit, delete; Deploy: Read and the deployment actions; Admin: all) and every "
             "status it may answer.", "", "| method | path | operationId | scope | statuses |", "|---|---|---|---|---|"]
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if not isinstance(operation, dict) or "operationId" not in operation:
                continue
            statuses = ", ".join(str(status) for status in operation.get("responses", {}))
            lines.append(f"| {method.upper()} | `{path}` | `{operation['operationId']}` | "
                         f"{operation.get('x-scope', '').capitalize()} | {statuses} |")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- the expectations of a campaign
def expectations_page(schema=None):
    from mockserver.campaign.expectations import SCHEMA
    schema = schema or SCHEMA
    lines = [GENERATED + "# Expectations format", "", cell(schema.get("title", "")), "",
             "What a team accepts of a fault campaign's outcomes (`mockserver campaign --expect FILE`): every outcome "
             "but `survived` and `not reached` is unexpected unless an entry accepts it (the campaign then exits 1). "
             "The guide: [Fault campaigns](../guide/campaigns.md). Every field:", "",
             "| field | type | required | what it is |", "|---|---|---|---|"]
    lines += schema_rows(schema, "")
    return "\n".join(lines) + "\n"


PAGE_MAKERS = {"cli.md": cli_page, "control-api.md": control_page, "scenario-format.md": scenario_page,
               "operations.md": operations_page, "expectations-format.md": expectations_page}


def stale(folder=PAGES):
    """The pages that differ from what the code says (a missing page included)."""
    return [name for name, make in PAGE_MAKERS.items()
            if not (folder / name).is_file() or (folder / name).read_text() != make()]


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m mockserver.cli.reference", description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a page is stale; write nothing")
    args = parser.parse_args(argv)
    if args.check:
        found = stale()
        for name in found:
            print(f"docs/reference/{name} is stale: run python -m mockserver.cli.reference", file=sys.stderr)
        return 1 if found else 0
    PAGES.mkdir(parents=True, exist_ok=True)
    for name, make in PAGE_MAKERS.items():
        (PAGES / name).write_text(make())
        print(f"wrote docs/reference/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
