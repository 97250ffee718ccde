"""Plans compiled to padded arrays (:func:`compile_plan`, :func:`stack_plans`), so that many plans ×
seeds run in one jitted, vmapped call.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jgtest.plans.model import Plan, PlanError, plan_game

MAX_PRECONDITIONS = 2
CHECK_NONE = -1
#: Precondition kinds.
NEAR, HEALTH_BELOW = 0, 1


@struct.dataclass
class CompiledPlan:
    node_actor: jax.Array  # int32[N] actor id (-1: a location)
    node_location: jax.Array  # int32[N, 2]
    node_action: jax.Array  # int32[N] game action (-1: none)
    node_check: jax.Array  # int32[N] index into the game's CHECKS (-1: none)
    node_radius: jax.Array  # int32[N]
    node_teleport: jax.Array  # bool[N]
    node_wait: jax.Array  # int32[N]
    num_nodes: jax.Array  # int32
    rule_kind: jax.Array  # int32[R, P] precondition kind (-1: none)
    rule_type: jax.Array  # int32[R, P] actor type (NEAR)
    rule_value: jax.Array  # int32[R, P] distance (NEAR) or health (HEALTH_BELOW)
    rule_priority: jax.Array  # int32[R]
    rule_action: jax.Array  # int32[R] game action (-1: walk onto the actor)
    rule_check: jax.Array  # int32[R]
    rule_valid: jax.Array  # bool[R]


def compile_plan(
    plan: Plan, env, max_nodes: int | None = None, max_rules: int | None = None
) -> CompiledPlan:
    """``plan`` bound to ``env``: each node's actor instance to the game's actor id, each action to
    the game's action index and its validation (:data:`CHECK_NONE` when the pair has none), padded
    to ``max_nodes`` nodes and ``max_rules`` rules of ``MAX_PRECONDITIONS`` preconditions.

    Raises:
      PlanError: an actor instance the level does not have, a location off the map, or more nodes
        or rules than ``max_nodes`` / ``max_rules``.
    """
    vocab = plan_game(plan.game)
    if plan.game != env.name:
        raise PlanError(f"game: the plan is for {plan.game}, the game is {env.name}")
    n, r = max_nodes or len(plan.nodes), max_rules or max(len(plan.rules), 1)
    if len(plan.nodes) > n or len(plan.rules) > r:
        raise PlanError(
            f"plan: {len(plan.nodes)} nodes and {len(plan.rules)} rules exceed the batch's {n} "
            f"and {r}"
        )
    checks = list(vocab.CHECKS)
    check_of = lambda action, actor: (
        checks.index((action, actor)) if (action, actor) in checks else CHECK_NONE
    )
    rows, cols = env.map_shape
    out = {
        "node_actor": np.full(n, -1),
        "node_location": np.zeros((n, 2)),
        "node_action": np.full(n, -1),
        "node_check": np.full(n, CHECK_NONE),
        "node_radius": np.zeros(n),
        "node_teleport": np.zeros(n, bool),
        "node_wait": np.zeros(n),
        "rule_kind": np.full((r, MAX_PRECONDITIONS), -1),
        "rule_type": np.zeros((r, MAX_PRECONDITIONS)),
        "rule_value": np.zeros((r, MAX_PRECONDITIONS)),
        "rule_priority": np.zeros(r),
        "rule_action": np.full(r, -1),
        "rule_check": np.full(r, CHECK_NONE),
        "rule_valid": np.zeros(r, bool),
    }
    for i, node in enumerate(plan.nodes):
        if node.actor is not None:
            ids = env.actor_ids(vocab.ACTOR_TYPES.index(node.actor))
            if node.instance >= len(ids):
                raise PlanError(
                    f"nodes[{i}].instance: the level has {len(ids)} {node.actor} actor(s), not an "
                    f"instance {node.instance}"
                )
            out["node_actor"][i] = ids[node.instance]
        else:
            if not (node.location[0] < rows and node.location[1] < cols):
                raise PlanError(
                    f"nodes[{i}].location: {list(node.location)} is off the {rows}x{cols} map"
                )
            out["node_location"][i] = node.location
        out["node_action"][i] = vocab.ACTIONS[node.action] if node.action else -1
        out["node_check"][i] = check_of(node.action, node.actor)
        out["node_radius"][i], out["node_teleport"][i], out["node_wait"][i] = (
            node.radius,
            node.movement == "teleport",
            node.wait,
        )
    for j, rule in enumerate(plan.rules):
        if len(rule.preconditions) > MAX_PRECONDITIONS:
            raise PlanError(
                f"rules[{j}].preconditions: at most {MAX_PRECONDITIONS} per rule, got "
                f"{len(rule.preconditions)}"
            )
        for k, pre in enumerate(rule.preconditions):
            near = pre.actor_near is not None
            out["rule_kind"][j, k] = NEAR if near else HEALTH_BELOW
            out["rule_type"][j, k] = vocab.ACTOR_TYPES.index(pre.actor_near) if near else 0
            out["rule_value"][j, k] = pre.distance if near else pre.health_below
        out["rule_priority"][j], out["rule_valid"][j] = rule.priority, True
        out["rule_action"][j] = vocab.ACTIONS[rule.action] if rule.action else -1
        out["rule_check"][j] = check_of(rule.action, rule.preconditions[0].actor_near)
    as_jax = {
        k: jnp.asarray(v, jnp.bool_ if v.dtype == bool else jnp.int32) for k, v in out.items()
    }
    return CompiledPlan(num_nodes=jnp.int32(len(plan.nodes)), **as_jax)


def stack_plans(plans: list[Plan], env) -> CompiledPlan:
    """``plans`` compiled to the same sizes and stacked on a leading axis."""
    if not plans:
        raise PlanError("plans: an empty batch")
    n, r = max(len(p.nodes) for p in plans), max(max(len(p.rules) for p in plans), 1)
    return jax.tree.map(lambda *xs: jnp.stack(xs), *[compile_plan(p, env, n, r) for p in plans])
