"""`mockserver campaign`: its options (`add_parsers`) and its two entries, the campaign and `merge` (`run`)."""

import json
import os
import sys

from mockserver.campaign import plan
from mockserver.cli.values import positive

DESCRIPTION = ("Run a test command as it is, once against a fresh mock (the baseline), then once per fault: at each "
               "operation the baseline called, each failure the API document lists for it, network faults and failed "
               "deployments, injected at its first call in every sandbox. Report what the client survived, where its "
               "tests failed, and where it misbehaved (retried sooner than Retry-After, repeated a write that may "
               "have been made, retried in a storm). The command gets MOCKSERVER_URL (the run's own mock). Exit 0: "
               "nothing unexpected; 1: an outcome no expectation accepts; 2: the campaign could not be made (a "
               "failing baseline, a bad option or expectations file); 130: interrupted (the reports hold what "
               "it had). `mockserver campaign merge SHARD.json ... [--json F] [--junit F] [--html F]` merges the "
               "JSON reports of a campaign's shards (--shard K/N on the jobs of a CI matrix) into one.")


def env_default(name, cast=str, default=None):
    text = os.environ.get(name)
    return cast(text) if text else default


def add_parsers(commands, parser_class):
    sub = commands.add_parser("campaign", help="run a test command again and again, one fault injected each time",
                              description=DESCRIPTION, usage="mockserver campaign [options] -- COMMAND [ARGS...]")
    sub.add_argument("--jobs", type=positive(int), default=env_default("MOCKSERVER_CAMPAIGN_JOBS", int, 2),
                     help="runs at once, each with its own mock (default 2; MOCKSERVER_CAMPAIGN_JOBS)")
    sub.add_argument("--at", type=_reader(plan.parse_at), default=(1,),
                     help="the call of an operation, in each sandbox, a fault acts at: 1 (default: the first), a list "
                          "(1,2,3), or all (every call the baseline made of it)")
    sub.add_argument("--client-timeout", type=positive(float), metavar="SECONDS",
                     help="the client's own request timeout: the delay fault waits past it (without it, no delay "
                          "fault is run)")
    sub.add_argument("--fault", action="append", metavar="GLOB", help="only these faults (repeatable; globs of "
                     "names: 'status 5*', reset, 'outage 503', delay, 'deployment *'); default: all")
    sub.add_argument("--operation", action="append", metavar="GLOB",
                     help="only faults at these operations (repeatable; operationIds or globs); default: all called")
    sub.add_argument("--max-runs", type=positive(int), metavar="N", help="run at most N faults (the budget)")
    sub.add_argument("--max-seconds", type=positive(float), metavar="SECONDS",
                     help="start no run after SECONDS (the budget); runs under way finish")
    sub.add_argument("--run-timeout", type=positive(float), metavar="SECONDS",
                     help="stop a run's command after SECONDS (default: 5 times the baseline's, at least 60)")
    sub.add_argument("--shard", type=_reader(plan.parse_shard), default=(1, 1), metavar="K/N",
                     help="run the K-th of N parts of the plan (the jobs of a CI matrix; merge their --json)")
    sub.add_argument("--expect", metavar="FILE", help="the expectations file: the outcomes the team accepts "
                     "(docs/guide/campaigns.md; its format: docs/reference/expectations-format.md)")
    sub.add_argument("--json", metavar="FILE", help="write the report as JSON (what merge reads)")
    sub.add_argument("--junit", metavar="FILE", help="write the report as JUnit XML: one testcase per fault")
    sub.add_argument("--html", metavar="FILE", help="write the report as a page: operations by faults")
    sub.add_argument("--serve-arg", action="append", default=[], metavar="ARG",
                     help="an option for every run's `mockserver serve` (repeatable: --serve-arg=--fixtures "
                          "--serve-arg=DIR)")
    sub.add_argument("--clock", choices=("manual", "real"), default="manual",
                     help="the clock of every run's mock (default manual, as the harnesses' local mocks)")
    sub.add_argument("--quiet", action="store_true", help="print the table and summary only")
    sub.add_argument("argv", nargs="*", metavar="COMMAND", help="the test command and its arguments (after --)")
    return sub


def _reader(parse):
    def read(text):
        return parse(text)
    read.__name__ = parse.__name__.removeprefix("parse_")
    return read


def run(args):
    """`mockserver campaign ...`: the campaign; its exit status."""
    from mockserver.campaign.campaign import Settings
    from mockserver.campaign.campaign import run as run_campaign
    from mockserver.campaign.expectations import ExpectationsError
    from mockserver.document.spec import Spec
    command = list(args.argv)
    if command and command[0] == "--":
        command = command[1:]
    if command and command[0] == "merge":
        return merge(command[1:], args)
    if not command:
        print("mockserver: campaign needs the test command after -- (mockserver campaign -- pytest tests)",
              file=sys.stderr)
        return 2
    settings = Settings(command=command, jobs=args.jobs, at=args.at, client_timeout=args.client_timeout,
                        max_runs=args.max_runs, max_seconds=args.max_seconds, run_timeout=args.run_timeout,
                        shard=args.shard, expect=args.expect, json=args.json, junit=args.junit, html=args.html,
                        faults=tuple(args.fault) if args.fault else None,
                        operations=tuple(args.operation) if args.operation else None,
                        serve_args=tuple(args.serve_arg), clock=args.clock, quiet=args.quiet)
    try:
        return run_campaign(settings, Spec.load())
    except ExpectationsError as error:
        for line in error.lines():
            print(f"mockserver: {line}", file=sys.stderr)
        return 2


def merge(paths, args):
    """`mockserver campaign merge SHARD.json ... [--json F] [--junit F] [--html F]`: one report of the shards."""
    from mockserver.campaign import report as reports
    from mockserver.campaign.campaign import Settings, finish
    from mockserver.document.spec import Spec
    if not paths:
        print("mockserver: campaign merge needs the JSON reports of the shards", file=sys.stderr)
        return 2
    try:
        loaded = []
        for path in paths:
            with open(path, encoding="utf-8") as handle:
                loaded.append(json.load(handle))
        meta, results = reports.merge(loaded)
    except (OSError, ValueError, KeyError) as error:
        print(f"mockserver: campaign merge: {error}", file=sys.stderr)
        return 2
    settings = Settings(command=meta.get("command", []), json=args.json, junit=args.junit, html=args.html,
                        quiet=args.quiet)
    return finish(settings, Spec.load(), meta, results)
