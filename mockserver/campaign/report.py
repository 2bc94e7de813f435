"""What a campaign found, per fault: its outcome, whether the team expects it, and the evidence; written as a table on
the terminal, JSON (`--json`), JUnit XML (`--junit`: one testcase per fault, failing when its outcome is unexpected)
and a page (`--html`: operations by faults, each cell leading to its run's calls and failing tests' output). The
shards of one campaign are merged from their JSON (`merge`).

Outcomes: `survived` (the command passed, and the client broke no rule of behaviour.py), `failed` (the command
failed: which tests, and its output's tail), `misbehaved` (a rule of behaviour.py broke, whether its tests passed or
not), `not reached` (the fault never acted: no run of the suite made that call; not a finding), `not run` (the
budget ran out, the campaign was interrupted, or the run could not be made).
"""

import hashlib
import html
import json
import time
from dataclasses import dataclass, field
from xml.sax.saxutils import escape, quoteattr

from mockserver.campaign import behaviour
from mockserver.campaign.expectations import verdict
from mockserver.campaign.faults import CLIENT_MEETS, Fault

FORMAT = 1                              # of the JSON report


@dataclass
class Result:
    """One planned fault and what came of it."""
    fault: Fault
    outcome: str = "not run"
    expected: bool = True
    accepted_by: str | None = None      # the expectation that accepted it (its `because`)
    findings: list = field(default_factory=list)
    failed_tests: list = field(default_factory=list)
    exit_code: int | None = None
    timed_out: bool = False
    seconds: float = 0.0
    tail: list = field(default_factory=list)
    calls: list = field(default_factory=list)
    note: str = ""

    def as_dict(self):
        return {"key": self.fault.key, "operation": self.fault.operation, "fault": self.fault.name,
                "at": self.fault.at, "outcome": self.outcome, "expected": self.expected,
                "accepted_by": self.accepted_by, "findings": self.findings, "failed_tests": self.failed_tests,
                "exit_code": self.exit_code, "timed_out": self.timed_out, "seconds": round(self.seconds, 3),
                "tail": self.tail, "calls": self.calls, "note": self.note}

    @classmethod
    def of(cls, data):
        fault = Fault(data["operation"], data["fault"], data["at"])
        fields = {name: data[name] for name in ("outcome", "expected", "accepted_by", "findings", "failed_tests",
                                                 "exit_code", "timed_out", "seconds", "tail", "calls", "note")}
        return cls(fault, **fields)


def judge(fault, run, expectations):
    """The Result of one run of `fault`."""
    result = Result(fault, exit_code=run.exit_code, timed_out=run.timed_out, seconds=run.seconds, tail=run.tail,
                    failed_tests=run.failed_tests, calls=run.calls)
    if run.problem:
        result.outcome, result.note = "not run", run.problem
        return result
    found = behaviour.findings(run.calls, fault.name)
    result.findings = [finding.as_dict() for finding in found]
    failed = run.timed_out or run.exit_code != 0
    if not behaviour.injected(run.calls):
        result.outcome = "not reached"
        result.note = "the suite made no such call in this run" + (" (and failed without the fault)" if failed else "")
    elif found:
        result.outcome = "misbehaved"
    elif failed:
        result.outcome = "failed"
        if run.timed_out:
            result.note = f"stopped after {run.seconds:.0f} s (--run-timeout)"
    else:
        result.outcome = "survived"
    rules = [behaviour.SHORT[finding.rule] for finding in found]
    result.expected, entry = verdict(expectations, fault, result.outcome, rules)
    result.accepted_by = entry.because if entry is not None else None
    return result


def plan_key(command, faults):
    """What tells the shards of one campaign apart from another's: its command and its whole plan."""
    text = json.dumps([command, sorted(fault.key for fault in faults)])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def document(meta, results, coverage_of):
    """The JSON report."""
    return {"format": FORMAT, **meta, "summary": summary(results), "coverage": coverage_of(results),
            "results": [result.as_dict() for result in sorted(results, key=lambda r: r.fault.key)]}


def summary(results):
    counts: dict = {}
    for result in results:
        counts[result.outcome] = counts.get(result.outcome, 0) + 1
    return {"runs": len(results), "outcomes": counts, "unexpected": sum(not r.expected for r in results)}


def coverage(spec, called, results):
    """Per operation the suite called: its documented failure replies a correct request may meet (the 400, 413
    and 415 of a client's own mistakes are listed apart: no fault sends them), and those the suite was seen to
    survive (a `status N` run of it that survived); and the total, survived / documented."""
    per = {}
    survived_total = documented_total = 0
    for operation_id in sorted(called):
        operation = spec.operations.get(operation_id)
        if operation is None:
            continue
        failures = sorted(status for status in operation.responses if status >= 400)
        documented = [status for status in failures if status in CLIENT_MEETS]
        survived = sorted({r.fault.status for r in results if r.fault.operation == operation_id
                           and r.fault.kind == "status" and r.outcome == "survived"})
        per[operation_id] = {"documented": documented, "survived": survived,
                             "own_mistakes": [status for status in failures if status not in CLIENT_MEETS]}
        survived_total += len(survived)
        documented_total += len(documented)
    share = round(survived_total / documented_total, 3) if documented_total else None
    return {"operations": per, "survived": survived_total, "documented": documented_total, "share": share}


# ---------------------------------------------------------------- the terminal
MARKS = {"survived": "ok", "failed": "FAILED", "misbehaved": "MISBEHAVED", "not reached": "not reached",
         "not run": "not run"}


def table(results):
    """The results as lines of text: one per fault, the unexpected marked with `!`."""
    lines = []
    width = max((len(r.fault.key) for r in results), default=10)
    for result in sorted(results, key=lambda r: r.fault.key):
        mark = "!" if not result.expected else " "
        said = MARKS[result.outcome]
        rules = list(dict.fromkeys(f["rule"] for f in result.findings))
        detail = ("; ".join(rules) or _tests(result.failed_tests) or result.note or _exit(result))
        if result.accepted_by:
            detail = f"expected: {result.accepted_by}"
        lines.append(f"{mark} {result.fault.key:<{width}}  {said:<11} {detail}".rstrip())
    return lines


def _tests(names, shown=3):
    """Failing tests, short: their last part (`file.py::test_x` -> `test_x`), the first few and how many more."""
    short = [name.rsplit("::", 1)[-1] for name in names]
    more = f" and {len(short) - shown} more" if len(short) > shown else ""
    return ", ".join(short[:shown]) + more


def _exit(result):
    """What a failed run said last, when no failing test is named."""
    if result.outcome != "failed":
        return ""
    last = next((line.strip() for line in reversed(result.tail) if line.strip()), "")
    return f"exit {result.exit_code}" + (f": {last[:100]}" if last else "")


# ---------------------------------------------------------------- JUnit XML
def junit(results, name="mockserver fault campaign"):
    """One testcase per fault; a failure when its outcome is unexpected, skipped when not reached or not run."""
    cases = []
    for result in sorted(results, key=lambda r: r.fault.key):
        body = ""
        if not result.expected:
            message = f"{result.outcome}: " + ("; ".join(f["rule"] for f in result.findings)
                                               or ", ".join(result.failed_tests) or result.note or "the suite failed")
            body = f"<failure message={quoteattr(message)}>{escape(_evidence(result))}</failure>"
        elif result.outcome in ("not reached", "not run"):
            body = f"<skipped message={quoteattr(result.note or result.outcome)}/>"
        out = escape("\n".join(result.tail)) if result.tail else ""
        cases.append(f'  <testcase classname={quoteattr("campaign." + result.fault.operation)} '
                     f'name={quoteattr(result.fault.key)} time="{result.seconds:.3f}">{body}'
                     + (f"<system-out>{out}</system-out>" if out else "") + "</testcase>")
    total = summary(results)
    skipped = sum(r.outcome in ("not reached", "not run") and r.expected for r in results)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<testsuites><testsuite name={quoteattr(name)} tests="{len(results)}" failures="{total["unexpected"]}" '
            f'skipped="{skipped}" errors="0">\n' + "\n".join(cases) + "\n</testsuite></testsuites>\n")


def _evidence(result):
    lines = [f"outcome: {result.outcome}"]
    for finding in result.findings:
        lines.append(f"{finding['rule']} (sandbox {finding['sandbox']}): {finding['detail']}")
        lines += [f"  call #{c['id']} {c['method']} {c['path']} -> {c['status']} at {c['received_at']}"
                  for c in finding["calls"]]
    if result.failed_tests:
        lines.append("failed tests: " + ", ".join(result.failed_tests))
    return "\n".join(lines)


# ---------------------------------------------------------------- the page
def page(report):
    """A standalone HTML page of a JSON report: the matrix of operations by faults, each cell opening its run."""
    data = json.dumps(report).replace("</", "<\\/")
    title = html.escape(f"Fault campaign: {' '.join(report.get('command', []))}")
    return PAGE.replace("{{title}}", title).replace("{{data}}", data)


PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{title}}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
table.matrix { border-collapse: collapse; } .matrix th, .matrix td { border: 1px solid #ccc; padding: 3px 6px; }
.matrix th.op { text-align: left; font-weight: normal; font-family: monospace; }
.matrix td { cursor: pointer; text-align: center; min-width: 2.5em; }
.survived { background: #cfeccf; } .failed { background: #f6e3a3; } .misbehaved { background: #f9c98f; }
.unexpected { outline: 3px solid #c0262d; outline-offset: -3px; font-weight: bold; }
.not-reached, .not-run { background: #eee; color: #888; } td.none { cursor: default; background: #fff; }
#detail { margin-top: 1.5em; } pre { background: #f6f6f6; padding: 8px; overflow-x: auto; max-height: 24em; }
.calls td, .calls th { border-bottom: 1px solid #ddd; padding: 2px 6px; font-family: monospace; font-size: 12px; }
</style></head><body>
<h1>Fault campaign</h1><p id="summary"></p><div id="matrix"></div><div id="detail"></div>
<script id="data" type="application/json">{{data}}</script>
<script>
const report = JSON.parse(document.getElementById("data").textContent);
const byKey = Object.fromEntries(report.results.map(r => [r.key, r]));
const ops = [...new Set(report.results.map(r => r.operation))].sort();
const faults = [...new Set(report.results.map(r => r.fault))].sort();
const s = report.summary;
document.getElementById("summary").textContent = `${s.runs} runs: ` +
  Object.entries(s.outcomes).map(([k, v]) => `${v} ${k}`).join(", ") + `; ${s.unexpected} unexpected. ` +
  (report.coverage.share === null ? "" : `Failure replies survived: ${report.coverage.survived} of ` +
   `${report.coverage.documented} documented (${Math.round(report.coverage.share * 100)} %).`);
const cls = r => r.outcome.replace(" ", "-") + (r.expected ? "" : " unexpected");
const sign = {"survived": "\\u2713", "failed": "\\u2717", "misbehaved": "!", "not reached": "\\u00b7", "not run": "-"};
let rows = "<table class=matrix><tr><th></th>" + faults.map(f => `<th>${f}</th>`).join("") + "</tr>";
for (const op of ops) {
  rows += `<tr><th class=op>${op}</th>`;
  for (const f of faults) {
    const here = report.results.filter(r => r.operation === op && r.fault === f);
    rows += here.length ? here.map(r => `<td class="${cls(r)}" data-key="${r.key}" title="${r.key}: ${r.outcome}">` +
      `${sign[r.outcome]}${here.length > 1 ? r.at : ""}</td>`).join("") : "<td class=none></td>";
  }
  rows += "</tr>";
}
document.getElementById("matrix").innerHTML = rows + "</table>";
const esc = t => String(t ?? "").replace(/[&<>]/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;"}[c]));
document.querySelectorAll("td[data-key]").forEach(td => td.onclick = () => show(byKey[td.dataset.key]));
function show(r) {
  let out = `<h2>${esc(r.key)}: ${esc(r.outcome)}${r.expected ? "" : " (unexpected)"}</h2>`;
  if (r.accepted_by) out += `<p>Expected: ${esc(r.accepted_by)}</p>`;
  if (r.note) out += `<p>${esc(r.note)}</p>`;
  for (const f of r.findings) out += `<p><b>${esc(f.rule)}</b> in sandbox ${esc(f.sandbox)}: ${esc(f.detail)}</p>`;
  if (r.failed_tests.length) out += `<p>Failed tests: ${r.failed_tests.map(esc).join(", ")}</p>`;
  if (r.tail.length) out += `<h3>Output (tail)</h3><pre>${esc(r.tail.join("\\n"))}</pre>`;
  out += `<h3>Calls (${r.calls.length})</h3><table class=calls><tr><th>sandbox</th><th>#</th><th>came</th>` +
    `<th>call</th><th>status</th><th>rule</th></tr>` + r.calls.map(c => `<tr><td>${esc(c.sandbox)}</td>` +
    `<td>${c.id}</td><td>${esc(c.received_at)}</td><td>${esc(c.method)} ${esc(c.path)}</td><td>${c.status}</td>` +
    `<td>${esc(c.scenario_rule)}</td></tr>`).join("") + "</table>";
  document.getElementById("detail").innerHTML = out;
}
</script></body></html>
"""


def merge(reports):
    """One report of the shards of one campaign (their JSON): the same command and plan, each fault once."""
    if not reports:
        raise ValueError("merge needs at least one report")
    keys = {report.get("plan_key") for report in reports}
    if len(keys) != 1:
        raise ValueError("the reports are not shards of one campaign: their commands or plans differ")
    seen: dict = {}
    for report in reports:
        for item in report["results"]:
            seen.setdefault(item["key"], item)
    merged = {name: reports[0][name] for name in reports[0] if name not in ("results", "summary", "coverage",
                                                                              "shard")}
    merged["shards"] = sorted(report.get("shard") or "1/1" for report in reports)
    merged["merged_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return merged, [Result.of(item) for item in seen.values()]
