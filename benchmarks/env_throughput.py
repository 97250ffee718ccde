"""Env steps/s of every game under jit(vmap) + lax.scan, bare and with telemetry, next to
gymnax's own CartPole-v1 (the JAX peer) and Gymnasium's CartPole-v1 stepped in a Python
loop (the way the papers worked), on the same machine in the same run.

    python benchmarks/env_throughput.py --quick --json benchmarks/results/env_throughput_quick.json

What is timed is what a trainer or a campaign pays. Each step's outputs are folded
into a checksum, so XLA cannot drop any of them as dead code:

* **bare**: observation, reward, terminated, truncated and the gymnax ``info``
  entries (``final_observation``, ...), everything but the telemetry;
* **telemetry**: all of that plus every field of ``info["telemetry"]`` (the
  frame-time noise, the coverage cell, position, bugs fired, ...), what oracles,
  coverage and reports read. gymnax's CartPole-v1 has no telemetry: its row
  consumes all it returns.

The harness's own work is kept small: the reset key, every step's key and a
random action per step are drawn before the clock starts and streamed in through
the ``lax.scan``. Its cost is measured by the **harness floor** row, a do-nothing
game whose outputs (telemetry included) are built from the action and the key at
almost no cost; ``harness share`` is that row's time per step over a game's.

Each game is timed in a set of its own with the two reference rows (harness
floor, gymnax CartPole-v1), round after round interleaved (each round starting
one row further on), and each row reports its median, so that drift of the
machine hits every row of a set alike; ``× gymnax`` and ``harness share`` are
taken within the set. The batch
is sharded over all local devices (on CPU, one host device per core) whenever it
divides evenly. The JSON holds every row, ``cartpole_telemetry_vs_gymnax``
(``CartPoleBugs-v0`` with telemetry over gymnax ``CartPole-v1`` at the largest
batch) and ``speedup_vs_gymnasium``.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import time
from pathlib import Path

# One XLA host device per core, so the env batch is split across cores (XLA's CPU
# backend runs one small-kernel program mostly on one thread). Must precede jax's import.
os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "")
    + f" --xla_force_host_platform_device_count={os.cpu_count()} --xla_cpu_multi_thread_eigen=false"
).strip()

import gymnax  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from _common import write_json  # noqa: E402

import jgtest  # noqa: E402
from jgtest.types import Telemetry  # noqa: E402

FULL_BATCHES = (1, 4, 16, 64, 256, 1024, 4096)
QUICK_BATCHES = (1, 64, 4096)
FLOOR = "harness floor (do-nothing game)"
GYMNAX = "gymnax CartPole-v1"


class DoNothing(jgtest.TestingEnv):
    """A game that does no work: its outputs, telemetry included, are cheap functions of
    the action and the step key, so the harness row times the harness alone."""

    @property
    def default_params(self):
        return gymnax.environments.environment.EnvParams(max_steps_in_episode=1_000_000)

    @property
    def bug_kinds(self):
        return ("low_fps",)

    @property
    def map_shape(self):
        return (1, 1)

    def action_space(self, params=None):
        return gymnax.environments.spaces.Discrete(2)

    def observation_space(self, params):
        return gymnax.environments.spaces.Box(0.0, 2.0**32, (4,), jnp.float32)

    def reset_env(self, key, params):
        return jnp.zeros(4), gymnax.environments.environment.EnvState(time=0)

    def step(self, key, state, action, params=None):
        value = action.astype(jnp.float32) + jax.random.key_data(key)[0].astype(jnp.float32)
        obs, flag = jnp.full((4,), value), action > 1
        telemetry = Telemetry.make(
            jnp.stack([value, value]), action, flag[None], value, value, flag
        )
        info = {
            "telemetry": telemetry,
            "terminated": flag,
            "truncated": flag,
            "final_observation": obs,
        }
        return obs, state, value, flag, flag, info


def _checksum(outputs) -> jax.Array:
    """Sum of every leaf of ``outputs``, as float32: keeps all of them alive."""
    return sum(jnp.sum(leaf.astype(jnp.float32)) for leaf in jax.tree.leaves(outputs))


def make_runner(env, params, batch: int, steps: int, telemetry: bool, max_seconds: float = 1.0):
    """A compiled ``run(inputs) -> checksum`` of ``batch`` games for at most ``steps``
    scanned steps, its inputs (reset keys, step keys, actions, drawn and placed
    beforehand) and the steps it runs.

    A 4-step probe run first sizes the measurement: a game so slow that ``steps``
    would take over ``max_seconds`` is measured over fewer steps (at least 4), so
    that slow pixel games at large batches do not hold up the benchmark.
    """
    run, inputs = _compiled_runner(env, params, batch, 4, telemetry)
    start = time.perf_counter()
    run(*inputs).block_until_ready()
    per_step = (time.perf_counter() - start) / 4
    steps = max(4, min(steps, int(max_seconds / per_step)))
    if steps > 4:
        run, inputs = _compiled_runner(env, params, batch, steps, telemetry)
    return run, inputs, steps


def _compiled_runner(env, params, batch: int, steps: int, telemetry: bool):

    def one_game(reset_key, step_keys, actions):
        _, state = env.reset(reset_key, params)

        def body(carry, xs):
            state, checksum = carry
            key, action = xs
            obs, state, reward, terminated, truncated, info = env.step(key, state, action, params)
            if not telemetry:
                info = {k: v for k, v in info.items() if k != "telemetry"}
            return (state, checksum + _checksum((obs, reward, terminated, truncated, info))), None

        (_, checksum), _ = jax.lax.scan(body, (state, jnp.float32(0)), (step_keys, actions))
        return checksum

    devices = jax.devices()
    n_shards = len(devices) if batch % len(devices) == 0 else 1
    mesh = jax.sharding.Mesh(devices[:n_shards], ("env",))
    by_env = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("env"))
    by_step_env = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(None, "env"))
    key = jax.random.key(batch)
    step_keys = jax.random.split(jax.random.fold_in(key, 1), (steps, batch))
    actions = jax.vmap(env.action_space(params).sample)(
        jax.random.split(jax.random.fold_in(key, 2), steps * batch)
    )
    inputs = (
        jax.device_put(jax.random.split(jax.random.fold_in(key, 0), batch), by_env),
        jax.device_put(step_keys, by_step_env),
        jax.device_put(actions.reshape(steps, batch, *actions.shape[1:]), by_step_env),
    )
    return jax.jit(jax.vmap(one_game, in_axes=(0, 1, 1))).lower(*inputs).compile(), inputs


def time_interleaved(runners: dict, batch: int, rounds: int) -> dict[str, float]:
    """Median steps/s of each ``(run, inputs, steps)`` runner, timed one after another for
    ``rounds`` rounds. Each round starts one runner further on, so no runner always
    follows the same one (a run just after a long pixel-game run is slowed)."""
    seconds = {name: [] for name in runners}
    names = list(runners)
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            run, inputs, _ = runners[name]
            start = time.perf_counter()
            run(*inputs).block_until_ready()
            seconds[name].append(time.perf_counter() - start)
    return {name: batch * runners[name][2] / float(np.median(s)) for name, s in seconds.items()}


def time_game_set(references: dict, game: str, batch: int, steps: int, rounds: int):
    """Steps/s (and steps run) of ``game`` bare and with telemetry, timed interleaved with the
    reference rows (harness floor, gymnax CartPole-v1) in a set of their own.

    Each game gets its own set, freed before the next is built: next to a pixel
    game's large buffers, the small reference programs ran 2-8× slower here, so
    sharing one set would skew every ratio.
    """
    specs = {(name, True): env_params for name, env_params in references.items()}
    env, params = jgtest.make(game)
    specs.update({(game, False): (env, params), (game, True): (env, params)})
    runners = {
        key: make_runner(*env_params, batch, steps, key[1]) for key, env_params in specs.items()
    }
    sps = time_interleaved(runners, batch, rounds)
    steps_run = {key: runner[2] for key, runner in runners.items()}
    del runners
    gc.collect()
    return sps, steps_run


def gymnasium_steps_per_second(total_steps: int, repeats: int) -> float:
    """Best-of-``repeats`` steps/s of Gymnasium CartPole-v1 in a Python loop, random actions."""
    import gymnasium as gym

    env = gym.make("CartPole-v1")
    env.action_space.seed(0)
    best = float("inf")
    for r in range(repeats):
        env.reset(seed=r)
        start = time.perf_counter()
        for _ in range(total_steps):
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            if terminated or truncated:
                env.reset()
        best = min(best, time.perf_counter() - start)
    return total_steps / best


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer batch sizes and steps")
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument(
        "--games", nargs="*", default=None, help="games to measure (default: all registered)"
    )
    args = parser.parse_args(argv)
    batches = QUICK_BATCHES if args.quick else FULL_BATCHES
    steps = 200 if args.quick else 500
    rounds = 9 if args.quick else 15
    games = args.games or list(jgtest.registered_games())

    gym_sps = gymnasium_steps_per_second(20_000 if args.quick else 100_000, 3)
    rows = [
        {
            "game": "Gymnasium CartPole-v1 (Python loop)",
            "telemetry": False,
            "batch": 1,
            "steps_per_s": gym_sps,
        }
    ]
    references = {
        FLOOR: (DoNothing(), DoNothing().default_params),
        GYMNAX: gymnax.make("CartPole-v1"),
    }
    games = sorted(games, key=lambda name: name != "CartPoleBugs-v0")  # the comparison's set first
    print(
        f"{'game':34s} {'consumes':>10s} {'batch':>6s} {'steps/s':>14s} "
        f"{'× gymnasium':>12s} {'× gymnax':>9s} {'harness share':>14s}"
    )
    print(
        f"{rows[0]['game']:34s} {'-':>10s} {1:>6d} {gym_sps:>14,.0f} {1.0:>12.1f} {'-':>9s} "
        f"{'-':>14s}"
    )
    for batch in batches:
        for i, game in enumerate(games):
            sps, steps_run = time_game_set(references, game, batch, steps, rounds)
            for (name, telemetry), value in sps.items():
                if name in references and i > 0:
                    continue  # the references are reported from the first set
                row = {
                    "game": name,
                    "telemetry": telemetry,
                    "batch": batch,
                    "steps": steps_run[(name, telemetry)],
                    "steps_per_s": value,
                    "vs_gymnax": value / sps[(GYMNAX, True)],
                    "harness_share": value / sps[(FLOOR, True)],
                }
                rows.append(row)
                consumes = "all" if name in references else ("telemetry" if telemetry else "bare")
                print(
                    f"{name:34s} {consumes:>10s} {batch:>6d} {value:>14,.0f} "
                    f"{value / gym_sps:>12.1f} "
                    f"{row['vs_gymnax']:>9.2f} {row['harness_share']:>14.1%}",
                    flush=True,
                )

    def at_largest(game, telemetry):
        found = [
            r
            for r in rows
            if r["game"] == game and r["telemetry"] == telemetry and r["batch"] == max(batches)
        ]
        return found[0]["steps_per_s"] if found else None

    cartpole, peer = at_largest("CartPoleBugs-v0", True), at_largest(GYMNAX, True)
    result = {
        "benchmark": "env_throughput",
        "quick": args.quick,
        "devices": [str(d) for d in jax.devices()],
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "jax_version": jax.__version__,
        "steps_per_measurement": steps,  # fewer for a row whose "steps" says so
        "rounds": rounds,
        "rows": rows,
        "gymnasium_steps_per_s": gym_sps,
        "speedup_vs_gymnasium": None if cartpole is None else cartpole / gym_sps,
        "cartpole_telemetry_vs_gymnax": None if cartpole is None else cartpole / peer,
    }
    if cartpole is not None:
        print(
            f"\nCartPoleBugs-v0 with telemetry at batch {max(batches)}: {cartpole / peer:.2f}× "
            "gymnax CartPole-v1, "
            f"{cartpole / gym_sps:.0f}× Gymnasium's Python loop"
        )
    write_json(args.json, result)
    return result


if __name__ == "__main__":
    main()
