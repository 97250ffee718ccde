"""What a plan run found, for people: each validation with its node or rule, action, actor, and
expected and observed values (:func:`run_report`, :func:`validation_table`).
"""

from __future__ import annotations

from jgtest.plans.agent import OUTCOMES, PASSED, STATUSES
from jgtest.plans.failures import failure_text
from jgtest.plans.model import Plan, plan_game


def run_report(plan: Plan, agent, env, seed: int) -> dict:
    """One run's report, a JSON-able dict; ``agent`` is that run's ``AgentState`` (numpy leaves).

    A failure names the node (or rule), the action, the actor and the variable that did not change
    as expected, e.g. ``node 0: interact switch: expected door_open +1 after switch_toggled within
    10 steps; observed +0 (timeout)``.
    """
    game = plan_game(plan.game)
    checks = list(game.CHECKS.items())
    action_names = {v: k for k, v in game.ACTIONS.items()}
    actor_name = lambda a: (
        f"{game.ACTOR_TYPES[int(env.actor_types[a])]} #{int(a)}" if a >= 0 else "a location"
    )
    validations = []
    for i in range(int(agent.log_count)):
        (action, actor_type), check = checks[int(agent.log_check[i])]
        node, rule = int(agent.log_node[i]), int(agent.log_rule[i])
        validations.append(
            {
                "source": f"node {node}" if node >= 0 else f"rule {rule}",
                "node": node,
                "rule": rule,
                "action": action_names[int(agent.log_action[i])],
                "actor": actor_name(int(agent.log_actor[i])),
                "variable": check.variable,
                "expected_change": check.change,
                "observed_change": float(agent.log_observed[i]),
                "bound_to": check.event or f"a {check.timeout}-step delay",
                "timeout": check.timeout,
                "step": int(agent.log_start[i]),
                "status": STATUSES[int(agent.log_status[i])],
            }
        )
    outcome = int(agent.outcome)
    report = {
        "plan": plan.name or f"{len(plan.nodes)} nodes, {len(plan.rules)} rules",
        "seed": seed,
        "passed": outcome == PASSED,
        "outcome": OUTCOMES[outcome],
        "steps": int(agent.steps),
        "nodes_done": int((agent.node_done_at >= 0).sum()),
        "validations": validations,
        "failure": None,
    }
    if outcome != PASSED:
        report["failure"] = _failure(plan, agent, validations, outcome)
    return report


def _failure(plan: Plan, agent, validations: list, outcome: int) -> str:
    entry = int(agent.fail_entry)
    if entry >= 0:
        return failure_text(validations[entry], plan_game(plan.game).EVENTS)
    node = int(agent.fail_node)
    target = plan.nodes[node]
    action = target.action + " " if target.action else ""
    what = f"{action}{target.actor or 'location ' + str(list(target.location))}"
    return f"node {node} ({what}): {OUTCOMES[outcome]}"


def validation_table(report: dict):
    """A rich table of one run's validations."""
    from rich.table import Table

    from jgtest.report.console import printable

    table = Table(
        title=printable(
            f"{report['plan']} (seed {report['seed']}): "
            f"{'PASSED' if report['passed'] else 'FAILED: ' + report['failure']}"
        )
    )
    for column in ("step", "by", "action", "actor", "checks", "expected", "observed", "status"):
        table.add_column(column)
    for v in report["validations"]:
        table.add_row(
            str(v["step"]),
            v["source"],
            v["action"],
            v["actor"],
            f"{v['variable']} after {v['bound_to']}",
            f"{v['expected_change']:+g}",
            f"{v['observed_change']:+g}",
            v["status"],
        )
    return table
