"""PacMaze beside the real Ms. Pac-Man: the probes its free parameters are calibrated with.

:func:`twin_side` and :func:`real_side` measure them; ``benchmarks/pacmaze_probes.py`` writes both
to ``benchmarks/results/pacmaze_probes.json``, which ``tests/envs/test_pacmaze_probes.py`` holds
the twin against. Each probe is measured on the twin (``PacMaze-v0``) and on the real game (ALE
through envpool, :class:`envs_bridge.ale.MsPacmanEnv`: the RAM position, RAM gates, after the
replication package's 65 intro no-ops), the same policy on both:

* **speeds**: cells a step up/down and across, of the player and of the ghosts, over a random
  player's moving steps (real: RAM pixels / 4; twin: its parameters);
* **route lengths** (:class:`GateWalker`, shortest paths on the twin's maze): steps from the start
  to the first gate (lower-left), and on to the other mouth of that side (upper-left);
* **random player** (RELINE's random agent, §3.2): steps a life, the first life's length
  (quantiles), and episodes per 1,000 with at least n of the 4 gates (the paper's random row:
  24 / 17 / 1 / 1);
* **gate walker**: the ghost-blind walker's round of the four gates (:data:`ROUND_GATES`),
  episodes per 1,000 with at least n gates (a tenth of the random player's episodes).
"""

from __future__ import annotations

from collections import deque

import jax
import jax.numpy as jnp
import numpy as np

from jgtest.envs.pacmaze import MOVES, NOOP

#: The package's intro: no-ops after each reset, not counted as the agent's (``Agent._reset``).
INTRO_STEPS = 65
#: The paper's random row (Table 1): episodes of 1,000 with at least n = 1..4 gates.
PAPER_RANDOM_GATES = (24, 17, 1, 1)
#: RAM bytes of the four ghosts' x and y (OCAtari's ``ocatari/ram/mspacman.py``).
GHOSTS_X, GHOSTS_Y = slice(6, 10), slice(12, 16)
#: The walker's gates, in order: lower-left (from the start), then upper-left (the same side).
WALK_GATES = (2, 0)
#: The gate walker's round of all four: lower-left, upper-left, through the upper tunnel to
#: upper-right, then lower-right.
ROUND_GATES = (2, 0, 1, 3)


def maze_distances(blocked: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """``int[H, W]``: moves from each cell to the nearest of ``targets`` (``bool[H, W]``) through
    open cells, the map wrapping left to right as the tunnels do; -1 where none is reachable."""
    rows, cols = blocked.shape
    dist = np.full(blocked.shape, -1, np.int64)
    queue = deque(map(tuple, np.argwhere(targets)))
    for cell in queue:
        dist[cell] = 0
    while queue:
        r, c = queue.popleft()
        for dr, dc in MOVES[:4]:
            nr, nc = r + dr, (c + dc) % cols
            if 0 <= nr < rows and not blocked[nr, nc] and dist[nr, nc] < 0:
                dist[nr, nc] = dist[r, c] + 1
                queue.append((nr, nc))
    return dist


class GateWalker:
    """Walks the shortest path on the twin's maze to each of ``gates`` in turn, blind to the
    ghosts: at a cell it asks for the move that brings it one step nearer the gate (``moves``,
    a table for every cell), and goes on to the next once the gate fires."""

    def __init__(self, params, gates: tuple[int, ...] = WALK_GATES):
        blocked = np.asarray(params.walls | params.door)
        gate_id = np.asarray(params.gate_id)
        rows, cols = blocked.shape
        #: ``int32[len(gates), H, W]``: the move towards each gate from each cell (noop there).
        self.moves = np.full((len(gates), rows, cols), NOOP, np.int32)
        for leg, gate in enumerate(gates):
            dist = maze_distances(blocked, gate_id == gate)
            for r, c in np.argwhere(dist > 0):
                for move, (dr, dc) in enumerate(MOVES[:4]):
                    nr, nc = r + dr, (c + dc) % cols
                    if 0 <= nr < rows and 0 <= dist[nr, nc] < dist[r, c]:
                        self.moves[leg, r, c] = move
                        break

    def action(self, leg: int, cell: tuple[int, int]) -> int:
        return int(self.moves[leg][cell])


def ram_cell(x: int, y: int) -> tuple[int, int]:
    """The twin's cell of a RAM position: row ``(y + 2) / 4``; column ``(x - 10) / 4`` left of
    the centre (x 88, column 20) and ``(x - 6) / 4`` right of it."""
    col = 20 if x == 88 else (x - 10) / 4 if x < 88 else (x - 6) / 4
    return int(round((y + 2) / 4)), int(np.clip(round(col), 0, 40))


def twin_walk(env, params, walker: GateWalker, max_steps: int = 300) -> list[int]:
    """The walker on the twin, its ghosts kept in the pen: the step each gate first fired."""
    params = params.replace(release_steps=jnp.full_like(params.release_steps, 1 << 30))
    params = params.replace(frame_noise_ms=0.0)
    step = jax.jit(lambda k, s, a: env.step(k, s, a, params))
    _, state = env.reset(jax.random.key(0), params)
    fired_at, leg = [], 0
    for t in range(1, max_steps + 1):
        cell = tuple(int(v) for v in state.pos)
        _, state, _, _, _, info = step(jax.random.key(t), state, walker.action(leg, cell))
        if bool(info["telemetry"].bugs_fired[WALK_GATES[leg]]):
            fired_at.append(t)
            leg += 1
            if leg == len(WALK_GATES):
                break
    return fired_at


def real_walk(walker: GateWalker, env, seed: int = 0, max_steps: int = 300) -> list[int]:
    """The walker on the real game (``env``: one :class:`envs_bridge.ale.MsPacmanEnv` game, its
    RAM position and gates): the step each gate first fired. The real ghosts play on; a lost
    life ends the walk (an empty list)."""
    _, info = env.reset(seed)
    for _ in range(INTRO_STEPS):
        _, _, _, _, info = env.step(np.array([NOOP]))
    lives = info["lives"][0]
    fired_at, leg = [], 0
    for t in range(1, max_steps + 1):
        x, y = (int(v) for v in info["telemetry"].position[0])
        _, _, _, _, info = env.step(np.array([walker.action(leg, ram_cell(x, y))]))
        if info["lives"][0] < lives:
            return []
        if info["telemetry"].bugs_fired[0, WALK_GATES[leg]]:
            fired_at.append(t)
            leg += 1
            if leg == len(WALK_GATES):
                break
    return fired_at


def gate_counts(found: np.ndarray) -> list[float]:
    """Episodes per 1,000 with at least n = 1..4 gates, from ``bool[episodes, 4]``."""
    n = found.sum(axis=1)
    return [round(1000 * float(np.mean(n >= k)), 1) for k in range(1, 5)]


def random_summary(steps: np.ndarray, first_life: np.ndarray, found: np.ndarray, lives: int):
    """The random player's row: steps a life, first-life quantiles, gates per 1,000."""
    return {
        "episodes": len(steps),
        "steps_per_episode": round(float(np.mean(steps)), 1),
        "steps_per_life": round(float(np.mean(steps)) / lives, 1),
        "first_life_quantiles_10_25_50_75_90": np.percentile(first_life, [10, 25, 50, 75, 90])
        .round(1)
        .tolist(),
        "gates_at_least_n_per_1000": gate_counts(found),
    }


def twin_random(env, params, episodes: int, seed: int, max_steps: int = 2000) -> dict:
    """A uniformly random player on the twin: ``episodes`` games in one ``jit``, each played to
    its end (or ``max_steps``)."""

    @jax.jit
    def play(key):
        k_reset, k_steps = jax.random.split(key)
        _, state = jax.vmap(env.reset, (0, None))(jax.random.split(k_reset, episodes), params)
        zeros = jnp.zeros(episodes, jnp.int32)
        carry = (state, jnp.zeros(episodes, bool), zeros, zeros, jnp.zeros((episodes, 4), bool))

        def body(carry, key):
            state, done, steps, first_life, found = carry
            k_act, k_step = jax.random.split(key)
            action = jax.random.randint(k_act, (episodes,), 0, 5)
            _, new, _, term, trunc, info = jax.vmap(env.step, (0, 0, 0, None))(
                jax.random.split(k_step, episodes), state, action, params
            )
            live = ~done
            first_life = first_life + (live & (state.lives == params.num_lives))
            found = found | (info["telemetry"].bugs_fired & live[:, None])
            return (new, done | term | trunc, steps + live, first_life, found), None

        (_, done, steps, first_life, found), _ = jax.lax.scan(
            body, carry, jax.random.split(k_steps, max_steps)
        )
        return done, steps, first_life, found

    done, steps, first_life, found = jax.device_get(play(jax.random.key(seed)))
    if not done.all():
        raise RuntimeError(f"{int((~done).sum())} twin episodes outlived {max_steps} steps")
    return random_summary(steps, first_life, found, int(params.num_lives))


def real_random(env, episodes: int, seed: int) -> dict:
    """A uniformly random player on the real game (``env``: :class:`envs_bridge.ale.MsPacmanEnv`
    games), each episode after the intro no-ops: the same row as :func:`twin_random`, plus the
    speeds of her and the ghosts' moving steps (cells a step, up/down and across) and the pauses
    after a lost life."""
    num_envs = env.num_envs
    rng = np.random.default_rng(seed)
    _, info = env.reset(seed)
    intro = np.full(num_envs, INTRO_STEPS)
    steps, first_life = np.zeros(num_envs, int), np.zeros(num_envs, int)
    found = np.zeros((num_envs, 4), bool)
    full_lives = int(info["lives"][0])
    rows, moves = [], {"player": ([], []), "ghosts": ([], [])}
    pauses = {"dying": [], "restart": []}
    still, since_death = np.zeros(num_envs, int), np.full(num_envs, -1)
    before = None
    while len(rows) < episodes:
        counted = intro <= 0
        action = np.where(counted, rng.integers(0, 5, num_envs), NOOP)
        _, _, terminated, truncated, info = env.step(action)
        ram, lives, reset = info["ram"].astype(int), info["lives"], info["autoreset"]
        position = info["telemetry"].position.astype(int)
        intro = np.where(reset, INTRO_STEPS, intro - 1)
        counted &= ~reset
        steps += counted
        first_life += counted & (lives == full_lives)
        found |= info["telemetry"].bugs_fired & counted[:, None]
        now = (position, np.stack([ram[:, GHOSTS_X], ram[:, GHOSTS_Y]], -1), lives)
        if before is not None:
            _tally_moves(moves, before, now, counted)
            moving = np.any(now[0] != before[0], axis=1)
            lost = (now[2] < before[2]) & counted & (now[2] > 0)
            pauses["dying"] += still[lost].tolist()
            restarted = (since_death >= 0) & moving
            pauses["restart"] += since_death[restarted].tolist()
            since_death[restarted] = -1
            since_death[(since_death >= 0) & ~moving] += 1
            since_death[lost] = 0
            still = np.where(moving | ~counted, 0, still + 1)
        before = now
        for i in np.flatnonzero(terminated | truncated):
            rows.append((steps[i], first_life[i], found[i].copy()))
            steps[i], first_life[i], found[i] = 0, 0, False
    steps, first_life, found = (np.array(col) for col in zip(*rows[:episodes]))
    summary = random_summary(steps, first_life, found, full_lives)
    summary["cells_per_moving_step"] = {
        who: [round(float(np.mean(axis)) / 4, 3) for axis in by_axis]
        for who, by_axis in moves.items()
    }
    summary["death_pause_steps"] = {k: float(np.median(v)) for k, v in pauses.items()}
    return summary


def _tally_moves(moves: dict, before, now, counted: np.ndarray) -> None:
    """Adds each counted step's moves along one axis (pixels, up/down or across) of the player
    and the ghosts to ``moves`` (a teleport through a tunnel or back to a start is left out)."""
    for who, a, b in (
        ("player", before[0][:, None], now[0][:, None]),
        ("ghosts", before[1], now[1]),
    ):
        delta = np.abs(b - a)[counted]
        across = (delta[..., 1] == 0) & (delta[..., 0] > 0) & (delta[..., 0] < 8)
        updown = (delta[..., 0] == 0) & (delta[..., 1] > 0) & (delta[..., 1] < 8)
        moves[who][0].extend(delta[..., 1][updown].tolist())
        moves[who][1].extend(delta[..., 0][across].tolist())


def twin_walker_round(env, params, walker: GateWalker, episodes: int, seed: int, steps=3000):
    """The ghost-blind :class:`GateWalker` round of :data:`ROUND_GATES` on the twin, ``episodes``
    games in one ``jit``: episodes per 1,000 with at least n gates."""
    moves = jnp.asarray(walker.moves)
    order = jnp.asarray(ROUND_GATES)

    def action(state):
        missing = ~state.bugs_seen[order]
        leg = jnp.argmax(missing)
        return jnp.where(jnp.any(missing), moves[leg, state.pos[0], state.pos[1]], NOOP)

    @jax.jit
    def play(key):
        k_reset, k_steps = jax.random.split(key)
        _, state = jax.vmap(env.reset, (0, None))(jax.random.split(k_reset, episodes), params)

        def body(carry, key):
            state, done, found = carry
            _, new, _, term, trunc, info = jax.vmap(env.step, (0, 0, 0, None))(
                jax.random.split(key, episodes), state, jax.vmap(action)(state), params
            )
            found = found | (info["telemetry"].bugs_fired & ~done[:, None])
            return (new, done | term | trunc, found), None

        carry = (state, jnp.zeros(episodes, bool), jnp.zeros((episodes, 4), bool))
        (_, done, found), _ = jax.lax.scan(body, carry, jax.random.split(k_steps, steps))
        return done, found

    done, found = jax.device_get(play(jax.random.key(seed)))
    return {"episodes": episodes, "gates_at_least_n_per_1000": gate_counts(found)}


def real_walker_round(env, walker: GateWalker, episodes: int, seed: int) -> dict:
    """:func:`twin_walker_round` on the real game (``env``: :class:`envs_bridge.ale.MsPacmanEnv`
    games), each episode after the intro no-ops."""
    num_envs = env.num_envs
    _, info = env.reset(seed)
    intro = np.full(num_envs, INTRO_STEPS)
    found = np.zeros((num_envs, 4), bool)
    rows = []
    while len(rows) < episodes:
        cells = [ram_cell(int(x), int(y)) for x, y in info["telemetry"].position]
        action = np.full(num_envs, NOOP)
        for i, cell in enumerate(cells):
            missing = [leg for leg, g in enumerate(ROUND_GATES) if not found[i, g]]
            if intro[i] <= 0 and missing:
                action[i] = walker.action(missing[0], cell)
        _, _, terminated, truncated, info = env.step(action)
        reset = info["autoreset"]
        intro = np.where(reset, INTRO_STEPS, intro - 1)
        found |= info["telemetry"].bugs_fired & ~reset[:, None]
        for i in np.flatnonzero(terminated | truncated):
            rows.append(found[i].copy())
            found[i] = False
    return {"episodes": episodes, "gates_at_least_n_per_1000": gate_counts(np.array(rows))}


def twin_side(env, params, episodes: int, seed: int) -> dict:
    """The twin's probes (module docstring)."""
    walker = GateWalker(params)
    first, second = twin_walk(env, params, walker)
    return {
        "route_steps": {"start_to_first_gate": first, "between_mouths_of_a_side": second - first},
        "cells_per_moving_step": {
            "player": np.asarray(params.player_speed, np.float64).round(3).tolist(),
            "ghosts": np.asarray(params.ghost_speed, np.float64).round(3).tolist(),
        },
        "death_pause_steps": {
            "dying": int(params.dying_steps),
            "restart": int(params.restart_steps),
        },
        "random": twin_random(env, params, episodes, seed),
        "walker_round": twin_walker_round(
            env, params, GateWalker(params, ROUND_GATES), episodes // 10, seed
        ),
    }


def real_side(params, make_env, episodes: int, seed: int) -> dict:
    """The real game's probes (module docstring); ``make_env(num_envs, seed)`` builds
    :class:`envs_bridge.ale.MsPacmanEnv` games (the walk plays one, the random player 16)."""
    with make_env(1, seed) as env:
        walk = real_walk(GateWalker(params), env, seed)
    if len(walk) != len(WALK_GATES):
        raise RuntimeError(f"the gate walker lost a life on the real game (seed {seed})")
    with make_env(16, seed) as env:
        random = real_random(env, episodes, seed)
    with make_env(16, seed) as env:
        round_ = real_walker_round(env, GateWalker(params, ROUND_GATES), episodes // 10, seed)
    return {
        "route_steps": {
            "start_to_first_gate": walk[0],
            "between_mouths_of_a_side": walk[1] - walk[0],
        },
        "cells_per_moving_step": random.pop("cells_per_moving_step"),
        "death_pause_steps": random.pop("death_pause_steps"),
        "random": random,
        "walker_round": round_,
    }
