"""Fixed-key trajectories of every registered game: a faster step must compute the same game.

``python -c "import tests.conftest, tests.envs.trajectories as t; t.record()"`` records them
into :data:`RECORDED` (under the tests' XLA flags, which ``tests.conftest`` sets;
``t.record(("PacMaze-v0",))`` one game's);
``test_trajectories.py`` plays them again and compares.
Re-record only for a change of a game's rules, never for a speed-up.

Each game plays :data:`BATCH` games for :data:`STEPS` auto-resetting steps from fixed reset keys,
step keys and random actions, with episodes cut at :data:`EPISODE` steps so that every game also
auto-resets. Every output is recorded at every step: the observation (as pixels:
a game whose observation is drawn on read is drawn, :func:`pixels`), ``final_observation``, the
state, the reward, the flags and each field of the telemetry. A leaf of more than :data:`EXACT`
values a game is kept as a digest (its sum and a fixed random projection), the rest value by value.

* chosen: the recording is made under the tests' XLA flags (``tests/conftest.py``), because
  floats may differ in the last bit between optimisation levels.
"""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np

import jgtest
from jgtest.envs import bitmask

#: Where the trajectories are recorded.
RECORDED = Path(__file__).resolve().parent.parent / "data" / "twin_trajectories.npz"
#: Games a trajectory, and its steps.
BATCH, STEPS = 16, 64
#: ``max_steps_in_episode`` of the recorded games.
EPISODE = 32
#: A leaf with more values than this a game is recorded as a digest.
EXACT = 64


def pixels(env, obs: jax.Array) -> jax.Array:
    """The observation as a learner that reads pixels sees it: drawn, for a game whose step returns
    what to draw (``env.draw``), else as returned."""
    draw = getattr(env, "draw", None)
    return obs if draw is None else jax.vmap(draw)(obs)


def _flags_as_bools(env, state):
    """``state`` with a ``uint32`` ``bugs_seen`` bitmask (:mod:`jgtest.envs.bitmask`) as the
    ``bool[num_bugs]`` it stands for: a game that packs its flags plays the trajectory it
    recorded with them unpacked."""
    seen = getattr(state, "bugs_seen", None)
    if seen is None or seen.dtype != np.uint32:
        return state
    return state.replace(bugs_seen=bitmask.unpack(seen, env.num_bugs))


def _digest(leaf: np.ndarray) -> np.ndarray:
    """``[..., 2]``: each game's sum and a fixed random projection of its values (float64)."""
    flat = leaf.reshape(*leaf.shape[:2], -1).astype(np.float64)
    weights = np.random.default_rng(0).uniform(-1.0, 1.0, flat.shape[-1])
    return np.stack([flat.sum(-1), flat @ weights], -1)


def trajectory(game: str) -> dict[str, np.ndarray]:
    """The recorded outputs of ``game`` (module docstring): name → ``[STEPS, BATCH, ...]`` values,
    or ``[STEPS, BATCH, 2]`` digests for names ending in ``#digest``."""
    env, params = jgtest.make(game, max_steps_in_episode=EPISODE)
    key = jax.random.key(20261202)
    _, state = jax.vmap(env.reset, in_axes=(0, None))(
        jax.random.split(jax.random.fold_in(key, 0), BATCH), params
    )
    step_keys = jax.random.split(jax.random.fold_in(key, 1), (STEPS, BATCH))
    actions = jax.vmap(env.action_space(params).sample)(
        jax.random.split(jax.random.fold_in(key, 2), STEPS * BATCH)
    ).reshape(STEPS, BATCH)

    @jax.jit
    def step(state, keys, action):
        obs, state, reward, terminated, truncated, info = jax.vmap(
            env.step, in_axes=(0, 0, 0, None)
        )(keys, state, action, params)
        outputs = {
            "obs": pixels(env, obs),
            "final_observation": pixels(env, info["final_observation"]),
            "reward": reward,
            "terminated": terminated,
            "truncated": truncated,
            "state": _flags_as_bools(env, state),
            "telemetry": info["telemetry"],
        }
        return state, outputs

    steps = []
    for t in range(STEPS):
        state, outputs = step(state, step_keys[t], actions[t])
        steps.append(jax.device_get(outputs))
    stacked = jax.tree.map(lambda *xs: np.stack(xs), *steps)
    recorded = {}
    for path, leaf in jax.tree_util.tree_flatten_with_path(stacked)[0]:
        name = jax.tree_util.keystr(path)
        if leaf[0, 0].size > EXACT:
            recorded[f"{name}#digest"] = _digest(leaf)
        else:
            recorded[name] = leaf
    return recorded


def record(games: tuple[str, ...] = ()) -> None:
    """Records the trajectories of ``games`` (every registered game by default) into
    :data:`RECORDED`, keeping the recorded ones of the others."""
    games = games or tuple(jgtest.registered_games())
    kept = {}
    if RECORDED.exists():
        with np.load(RECORDED) as data:
            kept = {name: data[name] for name in data if name.split("/", 1)[0] not in games}
    arrays = {
        **kept,
        **{f"{game}/{name}": value for game in games for name, value in trajectory(game).items()},
    }
    np.savez_compressed(RECORDED, **arrays)
    print(f"recorded {len(arrays) - len(kept)} arrays of {len(games)} game(s) in {RECORDED}")


def recorded(game: str) -> dict[str, np.ndarray]:
    """``game``'s recorded trajectory, as :func:`trajectory` returns it."""
    with np.load(RECORDED) as data:
        return {name.split("/", 1)[1]: data[name] for name in data if name.startswith(game + "/")}
