"""JUnit XML, the results format CI servers read (Jenkins, GitLab, GitHub's test reporters), written
with ``junitparser`` for a campaign (:func:`campaign_junit`), plan runs (:func:`plan_junit`) and
``jgtest verify`` (:func:`verify_junit`).

The files follow the Ant/Jenkins JUnit format (``testsuites`` › ``testsuite`` › ``testcase`` ›
``failure``) that ``tests/data/junit.xsd`` states.
"""

from __future__ import annotations

import io
import shlex
from collections.abc import Sequence
from pathlib import Path

from junitparser import Failure, JUnitXml, TestCase, TestSuite

from jgtest.files import write_atomically
from jgtest.records import located_records, replay_command
from jgtest.report.distinct import distinct_bugs


def campaign_junit(
    run_dir: str | Path, path: str | Path, name: str, oracles: Sequence[str] = ()
) -> int:
    """Writes a campaign's JUnit file (``jgtest run ... --junit PATH``): one test suite with one
    failing test case per distinct bug (:mod:`jgtest.report.distinct`), named by its game, kind and
    place (:func:`bug_case_name`), its failure's text the command that replays it; and one passing
    case per oracle (bug kind: ``crash``, ``stuck``, ``logical``, ``low_fps`` …) of ``oracles``
    that found nothing, so that CI lists what was checked. Jenkins' and GitLab's JUnit readers show
    one failure per test case, hence a case per bug. Returns the number of distinct bugs."""
    located = located_records(run_dir)
    where = {id(r): (p, i) for r, p, i in located}
    bugs = distinct_bugs([r for r, _, _ in located])
    suite = TestSuite(name)
    for bug in bugs:
        record = bug.representative
        case = TestCase(bug_case_name(record), classname=f"jgtest.{record.game}.{bug.kind}")
        case.result = [
            _failure(
                f"{bug.kind} bug {record.bug_id} of {record.game}: "
                f"{record.detail or 'found'} ({len(bug.records)} record(s))",
                bug.kind,
                replay_command(record, *where[id(record)]),
            )
        ]
        suite.add_testcase(case)
    found = {bug.kind for bug in bugs}
    for kind in dict.fromkeys(k for k in oracles if k not in found):
        suite.add_testcase(TestCase(f"oracle: {kind}", classname="jgtest.campaign"))
    _write(path, [suite])
    return len(bugs)


def bug_case_name(record) -> str:
    """A bug's test case name: ``"BlockMaze-v0 · logical · bug 3 at (4, 7)"``."""
    place = ", ".join(f"{p:g}" for p in record.position)
    return f"{record.game} · {record.kind} · bug {record.bug_id}" + (
        f" at ({place})" if place else ""
    )


def plan_junit(reports: dict[str, list[dict]], path: str | Path, command: Sequence[str]) -> int:
    """Writes plan runs' JUnit file (``jgtest plan run|suite ... --junit PATH``): one test suite per
    plan, one test case per validation its runs made (node or rule, action, actor, checked variable)
    and one for its outcome (a node never reached), a ``<failure>`` per distinct failure with the
    command that runs the plan again. ``reports`` maps each plan file to its runs' reports
    (:func:`jgtest.plans.report.run_report`); ``command``, the plan command's arguments but the
    plan. Returns the number of distinct failures."""
    suites, failed = [], 0
    for plan_path, runs in reports.items():
        suite = TestSuite(f"plan {Path(plan_path).name}")
        cases: dict[tuple, list[str]] = {}
        outcome: list[str] = []  # failures no validation names (a node the agent never reached)
        for run in runs:
            failed_check = False
            for v in run["validations"]:
                key = (v["source"], v["action"], v["actor"], v["variable"])
                cases.setdefault(key, [])
                if v["status"] != "passed" and run["failure"]:
                    failed_check = True
                    if run["failure"] not in cases[key]:
                        cases[key].append(run["failure"])
            if not run["passed"] and not failed_check and run["failure"] not in outcome:
                outcome.append(run["failure"])
        again = shlex.join([*command[:3], plan_path, *command[3:]])
        for (source, action, actor, variable), failures in [
            *cases.items(),
            (("plan", "outcome", "", ""), outcome),
        ]:
            case = TestCase(
                f"{source}: {action} {actor} ({variable})".strip()
                if variable
                else f"{source} {action}",
                classname=f"jgtest.plan.{Path(plan_path).stem}",
            )
            case.result = [_failure(message, "plan", again) for message in failures]
            failed += len(failures)
            suite.add_testcase(case)
        suites.append(suite)
    _write(path, suites)
    return failed


def verify_junit(results: list, path: str | Path) -> None:
    """Writes ``jgtest verify``'s JUnit file: a case per stored bug, failing when it is still
    present or changed (:class:`jgtest.report.verify.Verdict`,
    :class:`jgtest.plans.verify.PlanVerdict`)."""
    suite = TestSuite("jgtest verify")
    for verdict in results:
        case = TestCase(verdict.case_name, classname="jgtest.verify")
        if verdict.status != "fixed":
            case.result = [
                _failure(
                    f"{verdict.shown_status}: {verdict.describe()}", verdict.status, verdict.command
                )
            ]
        suite.add_testcase(case)
    _write(path, [suite])


def _failure(message: str, kind: str, text: str) -> Failure:
    failure = Failure(message, kind)
    failure.text = text
    return failure


def _write(path: str | Path, suites: list[TestSuite]) -> None:
    xml = JUnitXml("jgtest")
    for suite in suites:
        xml.add_testsuite(suite)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    xml.write(buffer, pretty=True)
    write_atomically(path, buffer.getvalue())  # a CI server never reads half a file
