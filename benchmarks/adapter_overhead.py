"""The gymnax adapter's overhead (jgtest.adapt) over the raw gymnax-API game, and the Gymnasium and
ViZDoom bridges' over raw Gymnasium and ViZDoom loops, at the same batch, in the same run.

    python benchmarks/adapter_overhead.py --quick --json
    benchmarks/results/adapter_overhead_quick.json

* **adapter**: steps/s of ``jit(vmap)`` + ``lax.scan`` over the raw game's own auto-resetting
  ``step`` (gymnax's CartPole-v1; Craftax-Classic-Symbolic-v1, its ``auto_reset=True`` env, where
  the ``craftax`` extra is installed) against the adapted game's ``step`` (telemetry, assertions,
  jgtest's auto-reset), every output folded into a checksum so that nothing is dropped as dead code.
  Actions and keys are drawn before the clock starts.
* **bridge**: steps/s of ``gym:CartPole-v1`` through :class:`envs_bridge.gym.GymnasiumEnv` (frames
  drawn by ``render()``, each copy's step timed, the frame hashed into a cell) against a plain
  Python loop over the same copies that steps, resets when an episode ends and renders the frames as
  a batch: what an agent that reads pixels needs from Gymnasium without jgtest.
* **ViZDoom**: steps/s of ``vizdoom:freedoom2/MAP01`` through
  :class:`envs_bridge.vizdoom.VizDoomEnv` (each step timed, cells, labels, game variables, the stuck
  oracle and Doom's assertions) against a plain loop over as many engines that acts and reads the
  screens and variables as a batch and the labels.

Rows are timed round after round, interleaved, and each reports its median round. Target: at most
10% overhead at a batch of 8 or more.
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import time
from pathlib import Path

os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false"
).strip()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import parse_args, write_json  # noqa: E402

from jgtest.envs.registration import make  # noqa: E402

TARGET = 0.10


def _scan(step, reset, params, batch: int, steps: int, num_actions: int):
    """A jitted ``(keys, actions) -> checksum`` of ``steps`` vmapped steps over ``batch`` games."""
    vstep = jax.vmap(step, in_axes=(0, 0, 0, None))

    def run(keys, actions):
        _, state = jax.vmap(reset, in_axes=(0, None))(keys[0], params)

        def body(carry, xs):
            state, total = carry
            k, a = xs
            out = vstep(k, state, a, params)
            leaves = [
                x
                for x in jax.tree.leaves((out[0], *out[2:]))
                if jnp.issubdtype(jnp.asarray(x).dtype, jnp.number) or jnp.asarray(x).dtype == bool
            ]
            return (out[1], total + sum(jnp.sum(jnp.asarray(x, jnp.float32)) for x in leaves)), None

        (_, total), _ = jax.lax.scan(body, (state, jnp.float32(0)), (keys[1:], actions))
        return total

    run = jax.jit(run)
    keys = jax.random.split(jax.random.key(0), (steps + 1) * batch).reshape(steps + 1, batch)
    actions = jax.random.randint(jax.random.key(1), (steps, batch), 0, num_actions)
    jax.block_until_ready(run(keys, actions))
    return lambda: jax.block_until_ready(run(keys, actions))


def _interleaved(timed: dict, rounds: int) -> dict:
    """Each callable's median seconds over ``rounds`` rounds, the order rotating each round."""
    names, seconds = list(timed), {name: [] for name in timed}
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            start = time.perf_counter()
            timed[name]()
            seconds[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in seconds.items()}


def _row(game: str, batch: int, steps: int, raw_s: float, ours_s: float) -> dict:
    raw, ours = batch * steps / raw_s, batch * steps / ours_s
    return {
        "game": game,
        "batch": batch,
        "raw_steps_per_s": round(raw),
        "adapted_steps_per_s": round(ours),
        "overhead": round(raw / ours - 1, 4),
    }


def _auto_resetting(game: str, inner):
    """The raw game with its own auto-reset: gymnax's ``step`` resets; Craftax's adapter wraps its
    no-reset env, so the raw row uses Craftax's auto-resetting one (its ``step`` draws a new world
    for every step that could end an episode, as jgtest's does: that world generation is most of
    either's time)."""
    if not game.startswith("craftax:"):
        return inner
    from craftax.craftax_env import make_craftax_env_from_name

    return make_craftax_env_from_name(game.partition(":")[2], auto_reset=True)


def adapter_row(game: str, batch: int, steps: int, rounds: int) -> dict:
    """The raw game's auto-resetting step against the adapted game's, ``batch`` games."""
    adapted, params = make(game)
    inner = _auto_resetting(game, adapted.inner)
    medians = _interleaved(
        {
            "raw": _scan(inner.step, inner.reset, params.inner, batch, steps, adapted.num_actions),
            "adapted": _scan(
                adapted.step, adapted.reset, params, batch, steps, adapted.num_actions
            ),
        },
        rounds,
    )
    return _row(game, batch, steps, medians["raw"], medians["adapted"])


def bridge_row(batch: int, steps: int, rounds: int) -> dict:
    """``gym:CartPole-v1`` through the bridge against a plain loop that steps, resets and
    renders."""
    import gymnasium

    from envs_bridge.gym import GymnasiumEnv

    actions = np.random.default_rng(0).integers(0, 2, (steps, batch))
    bridge = GymnasiumEnv("CartPole-v1", num_envs=batch)
    bridge.reset(0)
    plain = [gymnasium.make("CartPole-v1", render_mode="rgb_array") for _ in range(batch)]
    for i, env in enumerate(plain):
        env.reset(seed=i)

    def run_bridge():
        for a in actions:
            bridge.step(a)

    def run_plain():
        for a in actions:
            frames = []
            for env, action in zip(plain, a):
                _, _, terminated, truncated, _ = env.step(int(action))
                if terminated or truncated:
                    env.reset()
                frames.append(env.render())
            np.stack(frames)  # a batch, as an agent reads it

    medians = _interleaved({"plain": run_plain, "bridge": run_bridge}, rounds)
    bridge.close()
    for env in plain:
        env.close()
    return _row("gym:CartPole-v1", batch, steps, medians["plain"], medians["bridge"])


def vizdoom_row(batch: int, steps: int, rounds: int) -> dict:
    """``vizdoom:freedoom2/MAP01`` through :class:`envs_bridge.vizdoom.VizDoomEnv` against a plain
    loop over as many engines set up as the bridge's
    (:meth:`~envs_bridge.vizdoom.VizDoomEnv.start_engine`) that acts, starts a new episode when one
    ends, and reads the screens and game variables as a batch and each state's labels: what an agent
    that reads pixels and positions needs from ViZDoom without jgtest."""
    from envs_bridge.vizdoom import VizDoomEnv

    actions = np.random.default_rng(0).integers(0, 8, (steps, batch))
    bridge = VizDoomEnv("freedoom2/MAP01", num_envs=batch)
    bridge.reset(0)
    plain = [bridge.start_engine() for _ in range(batch)]
    for game in plain:
        game.new_episode()
    buttons = np.eye(bridge.num_actions, dtype=int).tolist()

    def run_bridge():
        for a in actions:
            bridge.step(a)

    def run_plain():
        for a in actions:
            states = []
            for game, action in zip(plain, a):
                game.make_action(buttons[action], 4)
                if game.is_episode_finished():
                    game.new_episode()
                states.append(game.get_state())
            # a batch, as an agent reads it
            (
                np.stack([state.screen_buffer for state in states]),
                np.stack([state.game_variables for state in states]),
            )
            [state.labels for state in states]  # noqa: B018

    medians = _interleaved({"plain": run_plain, "bridge": run_bridge}, rounds)
    bridge.close()
    for game in plain:
        game.close()
    return _row("vizdoom:freedoom2/MAP01", batch, steps, medians["plain"], medians["bridge"])


def main(argv=None) -> int:
    args = parse_args(__doc__, argv)
    batches = (8, 64) if args.quick else (8, 64, 512)
    # the median of nine rounds; a round of each game's steps takes a second or more on 2 cores
    rounds = 9
    scale = 1 if args.quick else 2
    steps = {"gymnax:CartPole-v1": 2000 * scale, "craftax:Craftax-Classic-Symbolic-v1": 100 * scale}
    games = ["gymnax:CartPole-v1"]
    try:
        import craftax  # noqa: F401

        games.append("craftax:Craftax-Classic-Symbolic-v1")
    except ImportError:
        print("craftax not installed: its rows are skipped (pip install jgtest[craftax])")
    rows = [adapter_row(game, batch, steps[game], rounds) for game in games for batch in batches]
    host_rounds = 5 if args.quick else 7  # the host rows take seconds a round
    rows += [
        bridge_row(batch, 200 if args.quick else 300, host_rounds)
        for batch in ((8,) if args.quick else (8, 32))
    ]
    try:
        import vizdoom  # noqa: F401

        rows += [
            vizdoom_row(batch, 200 if args.quick else 300, host_rounds)
            for batch in ((8,) if args.quick else (8, 32))
        ]
    except ImportError:
        print("vizdoom not installed: its rows are skipped (pip install jgtest[bridges])")
    print(f"{'game':40s}{'batch':>7s}{'raw steps/s':>14s}{'ours steps/s':>14s}{'overhead':>10s}")
    for row in rows:
        print(
            f"{row['game']:40s}{row['batch']:>7d}{row['raw_steps_per_s']:>14,d}{row['adapted_steps_per_s']:>14,d}{row['overhead']:>10.1%}"
        )
    met = all(row["overhead"] <= TARGET for row in rows if row["batch"] >= 8)
    print(f"target (at most {TARGET:.0%} at a batch of 8 or more): {'met' if met else 'not met'}")
    write_json(
        args.json,
        {
            "command": f"python benchmarks/adapter_overhead.py{' --quick' if args.quick else ''}",
            "steps": steps,
            "rounds": rounds,
            "host_rounds": host_rounds,
            "rows": rows,
            "target": TARGET,
            "target_met": met,
            "platform": platform.platform(),
            "cpu_count": os.cpu_count(),
            "device": str(jax.devices()[0]),
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
