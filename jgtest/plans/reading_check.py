"""How a text-to-plan reader does on a paraphrase suite: each set becomes a passing plan, is refused
with guesses, is **misread**, a plan that names other steps than its writer meant, or is
**unplayable**, read as its writer meant into a plan that fails on the normal level. An unplayable
set is its writer's to mend, not the reader's: its plan is the annotation's (the annotation names no
instance, so the reader's choice, :func:`jgtest.plans.dungeon.nearest_instances`, is its reading
too), and the level cannot pass it ("kill the goblin" first, when the goblin is behind the locked
door).

A suite is JSON lines, each set ``{"text", "nodes", "rules"?, "game"?}`` (``game`` defaults to
``Dungeon-v0``; steps written ``"interact switch"``, ``"go collectable"``). Dungeon plans are run on
the normal level from ``seeds`` starts (:func:`jgtest.plans.agent.run_plans`); a Doom level's plans
are checked against its targets (:meth:`jgtest.plans.doom.DoomPlans.target`), not played.
"""

from __future__ import annotations

from operator import itemgetter

from jgtest.errors import PlanError
from jgtest.plans.calibrate import step_name

DUNGEON = "Dungeon-v0"
#: A set's outcomes (:func:`judge`).
OUTCOMES = ("passed", "refused", "misread", "unplayable")


def plan_steps(plan) -> tuple[list[str], list[str]]:
    """A plan as the suites write it: ``"action actor"`` per node and per rule."""
    return (
        [step_name(n.action, n.actor) for n in plan.nodes],
        [step_name(r.action, r.preconditions[0].actor_near) for r in plan.rules],
    )


def judge(reader, sets: list[dict], seeds: int = 2) -> list[str]:
    """Each set's outcome: ``"passed"``, ``"refused: <the reader's message>"``, ``"misread: <why>"``
    or ``"unplayable: <the failure>"`` (:data:`OUTCOMES`)."""
    import jax
    import numpy as np

    import jgtest
    from jgtest.plans import dungeon
    from jgtest.plans.agent import run_plans
    from jgtest.plans.compiled import stack_plans
    from jgtest.plans.model import plan_game
    from jgtest.plans.report import run_report

    env, params = jgtest.make(DUNGEON)
    outcomes, to_run = [], []
    for i, entry in enumerate(sets):
        game = entry.get("game", DUNGEON)
        if entry.get("rules") and not getattr(plan_game(game), "RULES", True):
            outcomes.append(f"unplayable: {game} plans take no rules")
            continue
        try:
            plan = reader.plan(entry["text"], env if game == DUNGEON else game, name=f"set {i}")
        except PlanError as error:
            outcomes.append(f"refused: {error}")
            continue
        wanted = (entry["nodes"], entry.get("rules", []))
        if plan_steps(plan) != wanted:
            outcomes.append(f"misread: {plan_steps(plan)} for {wanted}")
        elif game == DUNGEON:
            outcomes.append("passed")
            to_run.append((i, plan))
        else:
            vocab = plan_game(game)
            try:
                for k, node in enumerate(plan.nodes):
                    vocab.target(node, f"nodes[{k}]")
                outcomes.append("passed")
            except PlanError as error:
                outcomes.append(f"misread: {error}")
    if to_run:
        plans = [plan for _, plan in to_run]
        agent, _ = run_plans(
            env,
            dungeon,
            params,
            stack_plans(plans, env),
            jax.vmap(jax.random.key)(np.arange(seeds)),
        )
        agent = jax.device_get(agent)
        for p, (i, plan) in enumerate(to_run):
            for s in range(seeds):
                report = run_report(plan, jax.tree.map(itemgetter((p, s)), agent), env, s)
                if not report["passed"]:
                    outcomes[i] = f"unplayable: {report['failure']}, from start {s}"
                    break
    return outcomes


def tally(outcomes: list[str]) -> dict:
    """How many sets passed, were refused, were misread and were unplayable."""
    return {kind: sum(o.startswith(kind) for o in outcomes) for kind in OUTCOMES}
