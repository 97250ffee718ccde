"""A plan run verified against the game now (``jgtest verify report.json``): each failed run's plan
run again, its failure **still present**, **changed**, or **fixed** (:mod:`jgtest.report.verify`).
"""

from __future__ import annotations

import dataclasses
import shlex
from pathlib import Path

from jgtest.errors import BadFile, BadInput


@dataclasses.dataclass(frozen=True)
class PlanVerdict:
    """A plan run that failed, run again against the game now: ``status``
    (:data:`jgtest.report.verify.STATUSES`: its failure again, another failure, or a pass) and both
    failures."""

    plan: str
    seed: int
    status: str
    failure: str
    now: str | None
    command: str

    @property
    def where(self) -> str:
        return f"{Path(self.plan).name} seed {self.seed}"

    @property
    def shown_status(self) -> str:
        """The status as printed (a plan has one trace: the plan itself)."""
        return self.status

    @property
    def case_name(self) -> str:
        return f"{self.where}: {self.failure}"

    def describe(self) -> str:
        if self.status == "changed":
            return f"{self.failure} -> now {self.now}"
        return self.failure if self.status == "still present" else f"{self.failure} -> now passes"


def verify_plan_report(path: str | Path, game_args: dict | None = None) -> list[PlanVerdict]:
    """The failed runs of a plan run's ``report.json`` (``jgtest plan run|suite --out``), each plan
    run again under the same seeds and settings, on the variant ``game_args`` names (default: the
    report's).

    Raises:
      BadFile: the report cannot be read, is not a plan report, or names a plan file that is gone.
    """
    import json

    from jgtest.files import read_bytes
    from jgtest.plans.suite import plan_reports, plan_run_options

    try:
        report = json.loads(read_bytes(path))
        game, plans, seeds = report["game"], report["plans"], int(report["seeds"])
    except (ValueError, KeyError, TypeError) as error:
        raise BadFile(f"{path}: not a plan run's report.json ({error})") from None
    unknown = sorted(set(game_args or {}) - {"variant"})
    if unknown:
        raise BadInput(
            f"a plan run is verified against a --game-arg variant=...; {', '.join(unknown)} is "
            "not a plan run's setting"
        )
    variant = (game_args or {}).get("variant", report.get("variant", "normal"))
    failed = [(plan, run) for plan, runs in plans.items() for run in runs if not run["passed"]]
    missing = sorted({plan for plan, _ in failed if not Path(plan).exists()})
    if missing:
        raise BadFile(
            f"{path}: the plan file {missing[0]} is gone; run jgtest verify from where the plans "
            "were run"
        )
    now = (
        plan_reports(
            sorted({Path(p) for p, _ in failed}),
            game,
            variant,
            seeds,
            int(report.get("max_steps", 200)),
        )
        if failed
        else {}
    )
    verdicts = []
    for plan, run in failed:
        again = now[str(Path(plan))][run["seed"]]
        status = (
            "fixed"
            if again["passed"]
            else "still present"
            if again["failure"] == run["failure"]
            else "changed"
        )
        command = shlex.join(
            ["jgtest", "plan", "run", plan, *plan_run_options(game, variant, seeds)]
        )
        verdicts.append(
            PlanVerdict(plan, run["seed"], status, run["failure"], again["failure"], command)
        )
    return verdicts
