"""The explicit plan agent (EPA): walks a compiled plan's nodes, pre-empted by its rules, validating
every action; :func:`make_runner` is one episode, jittable, so plans × seeds vmap.

* chosen: a rule acts on the nearest actor of its first precondition, as the article is silent.
* chosen: a node not reached in ``node_timeout`` steps fails as unreachable, so every run ends.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
from flax import struct
from jax.sharding import Mesh, PartitionSpec

from jgtest.envs.grid import NSEW, UNREACHABLE, grid_distances, walk_distances
from jgtest.plans.compiled import HEALTH_BELOW, NEAR, CompiledPlan
from jgtest.sharding import BATCH_AXIS, batch_sharding

OUTCOMES = ("running", "passed", "validation failed", "unreachable", "player died", "out of steps")
RUNNING, PASSED, VALIDATION_FAILED, UNREACHABLE_NODE, DIED, OUT_OF_STEPS = range(6)
#: Log entry statuses.
EMPTY, PENDING, OK, WRONG_STATE, TIMEOUT = range(5)
STATUSES = ("empty", "pending", "passed", "wrong post-state", "timeout")


@dataclasses.dataclass(frozen=True)
class RunSettings:
    """Attributes:
    max_steps: the episode's step budget.
    node_timeout: steps one node may take before it counts as unreachable.
    log_size: validations one run can record.
    """

    max_steps: int = 200
    node_timeout: int = 80
    log_size: int = 16


@struct.dataclass
class AgentState:
    node: jax.Array  # int32 current node
    acted: jax.Array  # bool the current node's action is done
    waited: jax.Array  # int32 steps waited at the current node
    node_steps: jax.Array  # int32 steps spent on the current node
    steps: jax.Array  # int32
    outcome: jax.Array  # int32 OUTCOMES
    fail_node: jax.Array  # int32 the node being worked on when the run failed
    fail_entry: jax.Array  # int32 the log entry that failed (-1)
    node_done_at: jax.Array  # int32[N] step each node completed (-1)
    log_node: jax.Array  # int32[V] node of the action (-1: a rule's)
    log_rule: jax.Array  # int32[V] rule of the action (-1: a node's)
    log_action: jax.Array  # int32[V] game action
    log_actor: jax.Array  # int32[V] actor id acted on (-1: a location)
    log_check: jax.Array  # int32[V] index into the game's CHECKS
    log_target: jax.Array  # int32[V, 2] the target's cell at the action
    log_start: jax.Array  # int32[V] step of the action
    log_pre: jax.Array  # float32[V] the pre-action measure
    log_observed: jax.Array  # float32[V] post − pre when closed
    log_status: jax.Array  # int32[V] STATUSES
    log_count: jax.Array  # int32


def _initial(plan: CompiledPlan, log_size: int) -> AgentState:
    v = log_size
    return AgentState(
        node=jnp.int32(0),
        acted=jnp.bool_(False),
        waited=jnp.int32(0),
        node_steps=jnp.int32(0),
        steps=jnp.int32(0),
        outcome=jnp.int32(RUNNING),
        fail_node=jnp.int32(-1),
        fail_entry=jnp.int32(-1),
        node_done_at=jnp.full(plan.node_actor.shape, -1, jnp.int32),
        log_node=jnp.full(v, -1, jnp.int32),
        log_rule=jnp.full(v, -1, jnp.int32),
        log_action=jnp.full(v, -1, jnp.int32),
        log_actor=jnp.full(v, -1, jnp.int32),
        log_check=jnp.full(v, -1, jnp.int32),
        log_target=jnp.zeros((v, 2), jnp.int32),
        log_start=jnp.zeros(v, jnp.int32),
        log_pre=jnp.zeros(v, jnp.float32),
        log_observed=jnp.zeros(v, jnp.float32),
        log_status=jnp.zeros(v, jnp.int32),
        log_count=jnp.int32(0),
    )


def scripted_navigator(
    passable: jax.Array, pos: jax.Array, target: jax.Array, observation, key
) -> jax.Array:
    """The move (0–3, ``NSEW``) down the shortest-path distance field to ``target`` over
    ``passable`` cells (the target's own cell counts as passable, so a solid actor can be
    approached); ``-1`` when no move gets closer (no path, or already there)."""
    del observation, key
    walls = ~passable.at[target[0], target[1]].set(True)
    field = grid_distances(walls, target)
    h, w = passable.shape
    nxt = jnp.clip(pos[None] + jnp.asarray(NSEW), 0, jnp.array([h - 1, w - 1]))
    around = field[nxt[:, 0], nxt[:, 1]]
    best = jnp.argmin(around)
    return jnp.where(
        (around[best] < field[pos[0], pos[1]]) & (around[best] < UNREACHABLE), best, -1
    ).astype(jnp.int32)


def make_runner(
    env, game, settings: RunSettings = RunSettings(), navigator: Callable = scripted_navigator
):
    """``run(params, plan, key) -> (agent, trace)``: one plan's episode on ``env``, jittable
    and vmappable over ``plan`` (a :class:`CompiledPlan`) and ``key``. ``game`` is the game's plan
    module (:mod:`jgtest.plans.dungeon`);
    ``navigator(passable, pos, target, observation, key) -> move or -1``. ``trace`` holds each
    step's ``pos [T, 2]``, ``action [T]`` and ``events`` ``[T, E]``.

    One step:

    1. the applicable rules (every precondition holds) and the highest-priority one; its target is
       the nearest present actor of its first precondition's type;
    2. the current target: the rule's, else the current node's (an actor's cell, or a location);
    3. the action: on arrival (Manhattan distance ≤ the radius; a rule's: beside the actor, or on
       it when it has no action) the node's or rule's action (a jump first turns to face its
       target), then the node's waiting time, then the next node; before arrival, the
       ``navigator``'s move (:func:`scripted_navigator`, or a learned policy), or a teleport for a
       ``"teleport"`` node;
    4. an action with a validation in the game's ``CHECKS`` opens a log entry with the pre-action
       measure; after the game's step, each open entry is closed by its event (pass if the variable
       changed as expected, else a wrong post-state), by its delay, or by its timeout.

    The run ends passed (every node done, every validation closed and passed) or failed: a
    validation failed (wrong post-state or timeout), a node not reached within ``node_timeout``
    steps (unreachable), the player died, or ``max_steps`` ran out.
    """
    checks = list(game.CHECKS.values())
    check_var = jnp.asarray([game.VARIABLES.index(c.variable) for c in checks], jnp.int32)
    check_change = jnp.asarray([c.change for c in checks], jnp.float32)
    check_event = jnp.asarray(
        [game.EVENTS.index(c.event) if c.event else -1 for c in checks], jnp.int32
    )
    check_timeout = jnp.asarray([c.timeout for c in checks], jnp.int32)
    env_jump = game.ACTIONS.get("jump", -2)  # a jump first turns to face its target

    def decide(plan: CompiledPlan, state, agent: AgentState, obs, key):
        """``(game state, env action, plan action flag, log fields)``: steps 1–3 of
        :func:`make_runner`'s docstring."""
        types, positions, present = game.actors(state, env)
        pos = state.pos
        passable = game.passable(state, env)
        walk = walk_distances(passable, pos, positions)  # steps to stand beside (or on) each actor

        # 1. rules: "near" is a walking distance, so an actor behind a wall or the lava is not met
        def holds(kind, kind_type, value):
            near = (present & (types == kind_type) & (walk <= value)).any()
            return jnp.select(
                [kind == NEAR, kind == HEALTH_BELOW], [near, state.health < value], True
            )

        applicable = plan.rule_valid & jax.vmap(jax.vmap(holds))(
            plan.rule_kind, plan.rule_type, plan.rule_value
        ).all(-1)
        rule = jnp.argmax(jnp.where(applicable, plan.rule_priority, jnp.iinfo(jnp.int32).min))
        rule_on = applicable.any()
        of_type = present & (types == plan.rule_type[rule, 0])
        rule_actor = jnp.argmin(jnp.where(of_type, walk, UNREACHABLE))
        # 2. the target
        node = jnp.minimum(agent.node, plan.node_actor.shape[0] - 1)
        node_actor = plan.node_actor[node]
        node_target = jnp.where(
            node_actor >= 0, positions[jnp.maximum(node_actor, 0)], plan.node_location[node]
        )
        target = jnp.where(rule_on, positions[rule_actor], node_target)
        actor = jnp.where(rule_on, rule_actor, node_actor)
        action = jnp.where(
            rule_on, plan.rule_action[rule], jnp.where(agent.acted, -1, plan.node_action[node])
        )
        check = jnp.where(rule_on, plan.rule_check[rule], plan.node_check[node])
        radius = jnp.where(
            rule_on, jnp.where(plan.rule_action[rule] >= 0, 1, 0), plan.node_radius[node]
        )
        arrived = jnp.abs(target - pos).sum() <= radius
        # 3. the action
        move = navigator(passable, pos, target, obs, key)
        facing = game.face_action(pos, target)
        turn_first = (action == env_jump) & (state.facing != facing)
        acting = arrived & (action >= 0) & ~turn_first
        node_finished = ~rule_on & arrived & (action < 0) & (agent.waited >= plan.node_wait[node])
        env_action = jnp.select(
            [arrived & turn_first & (action >= 0), acting, arrived | (move < 0)],
            [facing, action, game.WAIT],
            move,
        ).astype(jnp.int32)
        # teleport: to the free cell within the radius nearest the player
        h, w = passable.shape
        cells = jnp.stack(jnp.meshgrid(jnp.arange(h), jnp.arange(w), indexing="ij"), -1).reshape(
            -1, 2
        )
        fits = passable.reshape(-1) & (jnp.abs(cells - target[None]).sum(-1) <= radius)
        spot = cells[jnp.argmin(jnp.where(fits, jnp.abs(cells - pos[None]).sum(-1), UNREACHABLE))]
        jump_to = ~rule_on & plan.node_teleport[node] & ~arrived & fits.any()
        state = jax.tree.map(
            lambda a, b: jnp.where(jump_to, a, b),
            game.teleport(state, spot, game.face_action(spot, target)),
            state,
        )
        env_action = jnp.where(jump_to, game.WAIT, env_action)
        waiting = ~rule_on & arrived & (action < 0) & ~node_finished
        return (
            state,
            env_action,
            {
                "acting": acting & (check >= 0),
                "rule_on": rule_on,
                "rule": rule,
                "node": node,
                "actor": actor,
                "target": target,
                "check": check,
                "action": action,
                "node_finished": node_finished,
                "waiting": waiting,
                "plan_acted": acting & ~rule_on,
            },
        )

    def step(params, plan: CompiledPlan, carry, key):
        state, agent, obs = carry
        k_nav, k_env = jax.random.split(key)
        running = agent.outcome == RUNNING
        moved, env_action, d = decide(plan, state, agent, obs, k_nav)
        # 4. open a log entry: the pre-action measure
        slot = jnp.minimum(agent.log_count, agent.log_status.shape[0] - 1)
        opens = running & d["acting"] & (agent.log_count < agent.log_status.shape[0])
        pre = game.measure(moved, d["target"])[check_var[jnp.maximum(d["check"], 0)]]
        put = lambda arr, value: jnp.where(opens, arr.at[slot].set(value), arr)
        agent = agent.replace(
            log_node=put(agent.log_node, jnp.where(d["rule_on"], -1, d["node"])),
            log_rule=put(agent.log_rule, jnp.where(d["rule_on"], d["rule"], -1)),
            log_action=put(agent.log_action, d["action"]),
            log_actor=put(agent.log_actor, d["actor"]),
            log_check=put(agent.log_check, d["check"]),
            log_target=put(agent.log_target, d["target"]),
            log_start=put(agent.log_start, agent.steps),
            log_pre=put(agent.log_pre, pre),
            log_status=put(agent.log_status, PENDING),
            log_count=agent.log_count + opens.astype(jnp.int32),
        )
        obs_next, stepped, _, _, info = env.step_env(k_env, moved, env_action, params)
        state_next = jax.tree.map(lambda a, b: jnp.where(running, a, b), stepped, state)
        # 4. close entries: event, delay or timeout
        events = jnp.stack([info["events"][e] for e in game.EVENTS])
        c = jnp.maximum(agent.log_check, 0)
        measures = jax.vmap(lambda t: game.measure(state_next, t))(agent.log_target)
        values = measures[jnp.arange(c.shape[0]), check_var[c]]
        observed = values - agent.log_pre
        elapsed = agent.steps + 1 - agent.log_start
        bound = check_event[c] >= 0
        fired = bound & events[jnp.maximum(check_event[c], 0)]
        due = fired | (elapsed >= check_timeout[c])
        pending = (agent.log_status == PENDING) & running
        closes = pending & due
        right = jnp.abs(observed - check_change[c]) < 1e-6
        status = jnp.where(
            closes,
            jnp.where(right, OK, jnp.where(bound & ~fired, TIMEOUT, WRONG_STATE)),
            agent.log_status,
        )
        agent = agent.replace(
            log_status=status, log_observed=jnp.where(closes, observed, agent.log_observed)
        )
        # progress through the nodes
        advance = running & d["node_finished"]
        node_done_at = jnp.where(
            advance, agent.node_done_at.at[d["node"]].set(agent.steps), agent.node_done_at
        )
        acted = jnp.where(advance, False, agent.acted | (running & d["plan_acted"]))
        waited = jnp.where(advance, 0, agent.waited + (running & d["waiting"]).astype(jnp.int32))
        node_steps = jnp.where(advance, 0, agent.node_steps + 1)
        node = agent.node + advance.astype(jnp.int32)
        # the outcome
        failed_entry = (status == WRONG_STATE) | (status == TIMEOUT)
        all_done = (node >= plan.num_nodes) & ~(status == PENDING).any()
        outcome = jnp.select(
            [
                ~running,
                failed_entry.any(),
                state_next.dead,
                all_done,
                node_steps > settings.node_timeout,
                agent.steps + 1 >= settings.max_steps,
            ],
            [agent.outcome, VALIDATION_FAILED, DIED, PASSED, UNREACHABLE_NODE, OUT_OF_STEPS],
            RUNNING,
        ).astype(jnp.int32)
        ends = running & (outcome != RUNNING)
        agent = agent.replace(
            node=node,
            acted=acted,
            waited=waited,
            node_steps=node_steps,
            node_done_at=node_done_at,
            steps=agent.steps + running.astype(jnp.int32),
            outcome=outcome,
            fail_node=jnp.where(ends, jnp.minimum(agent.node, plan.num_nodes - 1), agent.fail_node),
            fail_entry=jnp.where(
                ends & failed_entry.any(), jnp.argmax(failed_entry), agent.fail_entry
            ),
        )
        trace = {
            "pos": state_next.pos,
            "action": jnp.where(running, env_action, -1),
            "events": events,
        }
        return (state_next, agent, jnp.where(running, obs_next, obs)), trace

    def run(params, plan: CompiledPlan, key):
        k_reset, k_run = jax.random.split(key)
        obs, state = env.reset_env(k_reset, params)
        carry = (state, _initial(plan, settings.log_size), obs)
        (state, agent, _), trace = jax.lax.scan(
            lambda c, k: step(params, plan, c, k),
            carry,
            jax.random.split(k_run, settings.max_steps),
        )
        return agent, trace

    return run


def run_plans(
    env,
    game,
    params,
    plans: CompiledPlan,
    keys: jax.Array,
    settings: RunSettings = RunSettings(),
    navigator: Callable = scripted_navigator,
):
    """Every plan of the stacked ``plans`` (leading axis P) under every key (``[S]``), in one jitted
    call: ``(agent [P, S], trace [P, S, T])``. Compiled once per game, settings and navigator (and
    shapes).

    The seeds are split over the devices (:func:`jgtest.sharding.batch_mesh`) when they divide
    evenly (on CPU, one device a core where ``--xla_force_host_platform_device_count`` makes them),
    each device playing its share on its own.

    * chosen: ``shard_map`` rather than a sharded ``jit``, because the runs' searches loop until the
      slowest has settled: under a sharded ``jit`` each loop's test joins every device, step after
      step.
    """
    seeds = batch_sharding(keys.shape[0])
    mesh = None if seeds is None else seeds.mesh
    return _batched(env, game, settings, navigator, mesh)(params, plans, keys)


@functools.lru_cache(maxsize=16)
def _batched(env, game, settings: RunSettings, navigator: Callable, mesh: Mesh | None):
    run = make_runner(env, game, settings, navigator)
    batched = jax.vmap(jax.vmap(run, in_axes=(None, None, 0)), in_axes=(None, 0, None))
    if mesh is None:
        return jax.jit(batched)
    return jax.jit(
        jax.shard_map(
            batched,
            mesh=mesh,
            in_specs=(PartitionSpec(), PartitionSpec(), PartitionSpec(BATCH_AXIS)),
            out_specs=PartitionSpec(None, BATCH_AXIS),
            check_vma=False,  # each device's share is independent: nothing to check across them
        )
    )
