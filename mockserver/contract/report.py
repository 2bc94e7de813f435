"""Reports of a parity run (contract/parity.py): one row per operation of the document, the allow-list of known
differences, and the report as JSON, Markdown and JUnit XML.

A row is `agree` (every call of the operation answered alike), `drift` (what differs: each finding with
its kind and JSON path, in the vocabulary of contract/drift.py that recording shares), `allowed`
(differences, each named by the allow-list with its reason) or `not run` (with why: not in the flow, a
read-only run, an id no step gave, left out, the run stopped). What was not compared because the two sides'
records are not alike (a field that follows the record's state, records only one side lists) is listed
with the row (`unlike`), never drift.
The exit status is 1 when a row drifts, 2 when the run could not run (the platform refused the token,
or could not be reached), stopped early or could not delete what it made on the platform, 0 otherwise.

The allow-list is a YAML file: a list of entries (or `{allow: [...]}`), each naming an `operation`
(operationId or glob), optionally the `kind` of difference and its `path` (JSON path or header name,
glob), and always the `reason`:

    - operation: getEnvironment
      kind: type
      path: $.cluster_id
      reason: the platform sends the cluster's number here since March; the mock follows the spec
"""

import fnmatch
import re
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import orjson
import yaml

from mockserver.contract.drift import KINDS
from mockserver.core.clock import iso
from mockserver.core.errors import StartupError

ENTRY_KEYS = {"operation", "kind", "path", "reason"}


def public(url):
    """A URL as it may be printed: without user and password."""
    return re.sub(r"//[^/@]*@", "//", str(url))


class AllowError(StartupError, ValueError):
    """An allow-list that cannot be read (one line naming the file and the entry)."""


@dataclass
class Allowance:
    operation: str
    reason: str
    kind: str = None
    path: str = None
    used: int = 0

    def allows(self, operation, item):
        return (fnmatch.fnmatchcase(operation, self.operation) and self.kind in (None, item["kind"])
                and (self.path is None or fnmatch.fnmatchcase(item["path"], self.path)))


def load_allow(path):
    try:
        with open(path, "rb") as handle:
            document = yaml.safe_load(handle)
    except (OSError, yaml.YAMLError) as error:
        raise AllowError(f"{path}: cannot read the allow-list: {getattr(error, 'strerror', None) or error}") from None
    entries = document.get("allow") if isinstance(document, dict) else document
    if not isinstance(entries, list):
        raise AllowError(f"{path}: an allow-list is a list of entries (operation, kind, path, reason)")
    return [_allowance(path, number, entry) for number, entry in enumerate(entries, 1)]


def _allowance(path, number, entry):
    where = f"{path}: entry {number}"
    if not isinstance(entry, dict):
        raise AllowError(f"{where}: must be a mapping of operation, kind, path and reason")
    unknown = set(entry) - ENTRY_KEYS
    if unknown:
        raise AllowError(f"{where}: unknown key(s) {', '.join(sorted(unknown))} (use operation, kind, path, reason)")
    if not isinstance(entry.get("reason"), str) or not entry["reason"].strip():
        raise AllowError(f"{where}: every known difference needs its reason")
    if entry.get("kind") is not None and entry["kind"] not in KINDS:
        raise AllowError(f"{where}: kind {entry['kind']!r} is not one of {', '.join(KINDS)} (contract/drift.py)")
    return Allowance(str(entry.get("operation", "*")), entry["reason"].strip(), entry.get("kind"),
                     None if entry.get("path") is None else str(entry["path"]))


# ---------------------------------------------------------------- the report
def build(parity, spec, allowances, mock_label, flow_label):
    """The whole report as a JSON-ready dict (what every format is written from)."""
    rows = _rows(parity, spec, allowances)
    counts = {result: sum(row["result"] == result for row in rows) for result in ("agree", "drift", "allowed",
                                                                                   "not run")}
    failed = bool(parity.aborted or parity.cleanup_failures)
    exit_status = 2 if failed else 1 if counts["drift"] else 0
    pacer = parity.upstream.pacer
    return {
        "upstream": public(parity.config.upstream), "mock": mock_label, "flow": flow_label,
        "writes": parity.config.allow_writes, "run": parity.name,
        "started": iso(parity.started or time.time()), "finished": iso(parity.finished or time.time()),
        "requests": {"upstream": parity.upstream.requests, "mock": parity.mock.requests},
        "waits": [{"seconds": round(seconds, 3), "why": why} for seconds, why in (pacer.waits if pacer else [])],
        "aborted": parity.aborted,
        "cleanup": {"failures": parity.cleanup_failures, "signals_during_cleanup": parity.signals},
        "summary": {"agree": counts["agree"], "drift": counts["drift"], "allowed": counts["allowed"],
                    "not_run": counts["not run"]},
        "exit_status": exit_status,
        "operations": rows,
        "progressions": parity.progressions,
        "calls": parity.calls,
        "allow_list": [{"operation": a.operation, "kind": a.kind, "path": a.path, "reason": a.reason, "used": a.used}
                       for a in allowances],
    }


def _rows(parity, spec, allowances):
    calls = {}
    for call in parity.calls:
        calls.setdefault(call["operation"], []).append(call)
    in_flow = parity.flow_operations
    names = list(spec.operations) + [name for name in calls if name not in spec.operations]
    rows = []
    for name in names:
        operation = spec.operations.get(name)
        row = {"operation": name, "method": operation.method if operation else name.split(" ")[0],
               "path": operation.template if operation else name.split(" ", 1)[-1]}
        if name in calls:
            row.update(_judged(name, calls[name], allowances))
        else:
            reason = parity.not_run.get(name) or ("not reached: the run stopped" if parity.aborted and name in in_flow
                                                   else "not in the flow")
            row.update({"result": "not run", "calls": 0, "findings": [], "reason": reason})
        rows.append(row)
    return rows


def _judged(name, calls, allowances):
    findings, seen = [], set()
    for call in calls:
        for item in call["findings"]:
            key = (item["kind"], item["path"], item["message"])
            if key in seen:
                continue
            seen.add(key)
            allowance = next((a for a in allowances if a.allows(name, item)), None)
            if allowance is not None:
                allowance.used += 1
                item = {**item, "allowed": allowance.reason}
            findings.append(item)
    if any("allowed" not in item for item in findings):
        result = "drift"
    else:
        result = "allowed" if findings else "agree"
    unlike = list(dict.fromkeys(note for call in calls for note in call.get("unlike", ())))
    return {"result": result, "calls": len(calls), "findings": findings, "unlike": unlike}


def to_json(report):
    return orjson.dumps(report, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS) + b"\n"


# ---------------------------------------------------------------- Markdown
def markdown(report):
    summary = report["summary"]
    lines = ["# Parity: the platform against the mock", "",
             f"- Platform: {report['upstream']} · Mock: {report['mock']} · Flow: {report['flow']}, "
             f"{'writes allowed' if report['writes'] else 'read-only'}",
             f"- Run {report['run']}, {report['started']} to {report['finished']}; {report['requests']['upstream']} "
             f"requests to the platform, {len(report['waits'])} wait(s) the platform asked for",
             f"- **{summary['drift']} drift, {summary['agree']} agree, {summary['allowed']} allowed, "
             f"{summary['not_run']} not run: exit {report['exit_status']}**"]
    if report["aborted"]:
        lines.append(f"- **{_stopped(report).capitalize()}: {report['aborted']}**")
    for failure in report["cleanup"]["failures"]:
        lines.append(f"- **Left on the platform: {failure}**")
    ran = [row for row in report["operations"] if row["result"] != "not run"]
    lines += ["", "| operation | call | result | what |", "|---|---|---|---|"]
    for row in ran:
        what = "<br>".join(_finding_text(item) for item in row["findings"] if "allowed" not in item)
        lines.append(f"| {row['operation']} | `{row['method']} {row['path']}` | {row['result']} | {_cell(what)} |")
    lines += _progressions(report) + _allowed(ran) + _unlike(ran) + _not_run(report["operations"])
    return "\n".join(lines) + "\n"


def _finding_text(item):
    return f"{item['kind']} `{item['path']}`: {item['message']}"


def _cell(text):
    return text.replace("|", "\\|").replace("\n", " ")


def _progressions(report):
    if not report["progressions"]:
        return []
    lines = ["", "## States seen while polling", "", "| operation | platform | mock |", "|---|---|---|"]
    for item in report["progressions"]:
        lines.append(f"| {item['operation']} | {' → '.join(item['upstream'] or ['none'])} | "
                     f"{' → '.join(item['mock'] or ['none'])} |")
    return lines


def _allowed(rows):
    allowed = [(row["operation"], item) for row in rows for item in row["findings"] if "allowed" in item]
    if not allowed:
        return []
    lines = ["", "## Known differences (allow-list)", "", "| operation | difference | reason |", "|---|---|---|"]
    lines += [f"| {name} | {_cell(_finding_text(item))} | {_cell(item['allowed'])} |" for name, item in allowed]
    return lines


def _unlike(rows):
    notes = [(row["operation"], note) for row in rows for note in row.get("unlike", ())]
    if not notes:
        return []
    lines = ["", "## Not compared: the records are not alike (no drift)", "", "| operation | what |", "|---|---|"]
    return lines + [f"| {name} | {_cell(note)} |" for name, note in notes]


def _not_run(rows):
    reasons = {}
    for row in rows:
        if row["result"] == "not run":
            reasons.setdefault(row["reason"], []).append(row["operation"])
    if not reasons:
        return []
    lines = ["", "## Not run", ""]
    lines += [f"- {reason} ({len(names)}): {', '.join(names)}" for reason, names in reasons.items()]
    return lines


# ---------------------------------------------------------------- JUnit XML
def junit(report):
    """A JUnit XML document: a test case per operation; drift fails, not run is skipped."""
    rows = report["operations"]
    suite = ET.Element("testsuite", name="mockserver parity", tests=str(len(rows)),
                       failures=str(report["summary"]["drift"]), skipped=str(report["summary"]["not_run"]),
                       errors=str(int(bool(report["aborted"] or report["cleanup"]["failures"]))),
                       timestamp=report["started"])
    for row in rows:
        case = ET.SubElement(suite, "testcase", classname=f"parity.{row['method']}", name=row["operation"])
        if row["result"] == "drift":
            drifted = [item for item in row["findings"] if "allowed" not in item]
            failure = ET.SubElement(case, "failure", type="drift",
                                    message=f"{len(drifted)} difference(s) from the platform")
            failure.text = "\n".join(_finding_text(item) for item in drifted)
        elif row["result"] == "not run":
            ET.SubElement(case, "skipped", message=row["reason"])
        elif row["result"] == "allowed":
            ET.SubElement(case, "system-out").text = "\n".join(
                f"{_finding_text(item)} (allowed: {item['allowed']})" for item in row["findings"])
    if report["aborted"] or report["cleanup"]["failures"]:
        case = ET.SubElement(suite, "testcase", classname="parity", name="run")
        ET.SubElement(case, "error", message=report["aborted"] or "cleanup failed").text = \
            "\n".join(report["cleanup"]["failures"])
    ET.indent(suite)
    return b'<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suite, encoding="utf-8") + b"\n"


def _stopped(report):
    """How an aborted run is named: it could not run (nothing compared: the platform refused the token, or
    could not be reached), or it stopped early."""
    return "could not run" if not report["calls"] else "the run stopped early"


def summary(report):
    """Lines for the terminal: the result, then every difference not allowed; a run that could not compare a
    single call is one line saying why (and what it could not delete)."""
    counts = report["summary"]
    lines = []
    if report["calls"] or not report["aborted"]:
        lines.append(f"parity: {counts['drift']} drift, {counts['agree']} agree, {counts['allowed']} allowed, "
                     f"{counts['not_run']} not run ({report['requests']['upstream']} requests to the platform)")
    for row in report["operations"]:
        if row["result"] == "drift":
            lines += [f"  {row['operation']}: {_finding_text(item)}" for item in row["findings"]
                      if "allowed" not in item]
    unlike = sum(len(row.get("unlike", ())) for row in report["operations"])
    if unlike:
        lines.append(f"parity: {unlike} difference(s) not compared: the two sides' records are not alike (a field that "
                     f"follows a record's state, records one side only lists); the report lists them")
    if report["aborted"]:
        lines.append(f"parity: {_stopped(report)}: {report['aborted']}")
    lines += [f"parity: left on the platform: {failure}" for failure in report["cleanup"]["failures"]]
    return lines
