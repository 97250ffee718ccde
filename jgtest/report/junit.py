"""JUnit XML, the results format CI servers read (Jenkins, GitLab, GitHub's test reporters), written
with ``junitparser``.

* A campaign (``jgtest run ... --junit PATH``, :func:`campaign_junit`): one test suite, one test
  case per oracle the game has (a bug kind: ``crash``, ``stuck``, ``logical``, ``low_fps`` …),
  and in it one ``<failure>`` per distinct bug of that kind (:mod:`jgtest.report.distinct`), whose
  text is the command that replays it. A case without a failure passed: the oracle found nothing.
* Plans (``jgtest plan run|suite ... --junit PATH``, :func:`plan_junit`): one test suite per plan,
  one test case per validation the plan's runs made (its node or rule, action, actor and checked
  variable) and one for the plan's outcome (a node never reached), a ``<failure>`` per distinct
  failure with the command that runs the plan again.
* ``jgtest verify --junit PATH`` (:func:`verify_junit`): one test case per stored bug, failing
  while the bug is still present or has changed.

The files follow the Ant/Jenkins JUnit format (``testsuites`` › ``testsuite`` › ``testcase`` ›
``failure``); ``tests/data/junit.xsd`` states it, and the tests validate every file against it.
"""

from __future__ import annotations

import io
import shlex
from collections.abc import Sequence
from pathlib import Path

from junitparser import Failure, JUnitXml, TestCase, TestSuite

from jgtest.files import write_atomically
from jgtest.report.distinct import distinct_bugs
from jgtest.report.records import located_records, replay_command


def campaign_junit(run_dir: str | Path, path: str | Path, name: str, oracles: Sequence[str] = ()) -> int:
    """Writes a campaign's JUnit file (module docstring); ``oracles``: the game's bug kinds (the kinds
    found are added); the number of distinct bugs, each a failure."""
    located = located_records(run_dir)
    where = {id(r): (p, i) for r, p, i in located}
    bugs = distinct_bugs([r for r, _, _ in located])
    suite = TestSuite(name)
    for kind in dict.fromkeys([*oracles, *(b.kind for b in bugs)]):
        case = TestCase(f"oracle: {kind}", classname="jgtest.campaign")
        failures = []
        for bug in (b for b in bugs if b.kind == kind):
            record = bug.representative
            failure = Failure(f"{kind} bug {record.bug_id} of {record.game}: {record.detail or 'found'} ({len(bug.records)} record(s))", kind)
            failure.text = replay_command(record, *where[id(record)])
            failures.append(failure)
        case.result = failures
        suite.add_testcase(case)
    _write(path, [suite])
    return len(bugs)


def plan_junit(reports: dict[str, list[dict]], path: str | Path, command: Sequence[str]) -> int:
    """Writes plan runs' JUnit file (module docstring): ``reports`` maps each plan file to its runs'
    reports (:func:`jgtest.plans.report.run_report`); ``command``, the plan command's arguments
    but the plan, to run one plan again. The number of distinct failures."""
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
        for (source, action, actor, variable), failures in [*cases.items(), (("plan", "outcome", "", ""), outcome)]:
            case = TestCase(f"{source}: {action} {actor} ({variable})".strip() if variable else f"{source} {action}", classname=f"jgtest.plan.{Path(plan_path).stem}")
            case.result = [_failure(message, "plan", again) for message in failures]
            failed += len(failures)
            suite.add_testcase(case)
        suites.append(suite)
    _write(path, suites)
    return failed


def verify_junit(results: list, path: str | Path) -> None:
    """Writes ``jgtest verify``'s JUnit file: a case per stored bug, failing when it is still present
    or changed (:class:`jgtest.report.verify.Verdict`, :class:`jgtest.plans.verify.PlanVerdict`)."""
    suite = TestSuite("jgtest verify")
    for verdict in results:
        case = TestCase(verdict.case_name, classname="jgtest.verify")
        if verdict.status != "fixed":
            case.result = [_failure(f"{verdict.shown_status}: {verdict.describe()}", verdict.status, verdict.command)]
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
