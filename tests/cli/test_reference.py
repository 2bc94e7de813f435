"""The guide's reference pages are written from the code (mockserver/cli/reference.py) and kept in step: a page
that differs from what the code says fails here, so an option, a control route, a scenario field or an
operation cannot be added without its page."""

import copy
import dataclasses

import yaml

from mockserver.cli import reference
from mockserver.cli.main import OPTIONS
from mockserver.document.spec import CONTROL_DOCUMENT
from mockserver.world.scenarios import schema_document


def test_every_reference_page_says_what_the_code_says():
    assert reference.stale() == [], "run: python -m mockserver.cli.reference"


def test_a_new_option_without_its_page_is_caught():
    planted = dataclasses.replace(OPTIONS[0], flag="--planted-option", name="seed", help="an option nobody documented")
    page = reference.cli_page(OPTIONS + (planted,))
    assert "--planted-option" in page and page != (reference.PAGES / "cli.md").read_text()


def test_a_new_control_route_without_its_page_is_caught():
    document = yaml.safe_load(CONTROL_DOCUMENT.read_text())
    document["paths"]["/_mock/planted"] = {"get": {"operationId": "planted", "x-client": "planted", "summary": "x",
                                                   "responses": {"200": {"description": "ok"}}}}
    page = reference.control_page(document)
    assert "/_mock/planted" in page and page != (reference.PAGES / "control-api.md").read_text()


def test_a_new_scenario_field_without_its_page_is_caught():
    schema = copy.deepcopy(schema_document())                  # the shared schema stays as it is
    schema["properties"]["planted_field"] = {"type": "string", "description": "a field nobody documented"}
    page = reference.scenario_page(schema)
    assert "`planted_field`" in page and page != (reference.PAGES / "scenario-format.md").read_text()


def test_the_check_command_exits_1_on_a_stale_page(tmp_path, monkeypatch, capsys):
    for name, make in reference.PAGE_MAKERS.items():
        (tmp_path / name).write_text(make())
    (tmp_path / "operations.md").write_text("stale\n")
    monkeypatch.setattr(reference, "PAGES", tmp_path)
    monkeypatch.setattr(reference.stale, "__defaults__", (tmp_path,))
    assert reference.main(["--check"]) == 1
    assert "operations.md is stale" in capsys.readouterr().err


def test_every_command_and_its_own_arguments_are_on_the_cli_page():
    page = reference.cli_page()
    for command in reference.COMMANDS:
        assert f"## `mockserver {command}`" in page
    campaign = page.split("## `mockserver campaign`")[1]
    for argument in ("--max-runs", "--jobs", "--expect", "--junit", "--shard"):
        assert argument in campaign, argument
