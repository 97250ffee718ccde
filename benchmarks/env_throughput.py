"""Env steps/s of every game under jit and vmap, bare and with telemetry, beside JAX games of the
same kinds (the anchors) and Gymnasium's CartPole-v1 stepped in a Python loop (the way the
papers worked), on the same machine in the same run.

    python benchmarks/env_throughput.py --quick --json benchmarks/results/env_throughput.json

The anchors: gymnax's CartPole-v1 (the peer of CartPoleBugs), gymnax's MinAtar Breakout (a grid
game, as Block Maze and PacMaze are), Craftax-Classic symbolic and pixels (a rich game, with
frames: the peer of ParkWorld's, per pixel drawn) and NAVIX's MiniGrid Empty-8x8 when NAVIX is
installed (``pip install -e '.[bench]'``).

What is timed is what a trainer or a campaign pays. Each step's outputs are folded into a
checksum, so XLA cannot drop any of them as dead code:

* **bare**: observation, reward, terminated, truncated and the gymnax ``info`` entries
  (``final_observation``, ...), everything but the telemetry;
* **telemetry**: all of that plus every field of ``info["telemetry"]`` (the frame-time noise,
  the coverage cell, position, bugs fired, ...), what oracles, coverage and reports read. An
  anchor has no telemetry: its row consumes all it returns.

Each row is one compiled call that plays ``B`` games a given number of steps (traced, so one
compilation serves any) and returns their states; each row's call is sized to about a round's
seconds, and the games play on from call to call (episodes end and auto-reset). The step keys and
actions are drawn before the clock starts, and each step's are picked a step ahead and carried:
picked in the step that reads them, the slice is fused into the game's code, which XLA's CPU
backend then compiles to scalar code (CartPoleBugs ran at half its speed). The **harness floor**
row, a do-nothing game whose outputs are cheap functions of the action and the key, times the
harness alone; ``harness share`` is its time per step over a row's. Rows are timed in sets (the
floor with gymnax CartPole-v1; each game bare and with telemetry, CartPoleBugs with gymnax
CartPole-v1 too; each anchor), round after round interleaved, each round starting one row further
on; a row reports its median round, and a ratio of two rows of a set (CartPoleBugs' ``× gymnax``,
the telemetry's overhead over the bare game) is the median of its rounds' ratios, each round's pair
timed side by side, so that the machine's drift between rounds cancels; another row's ``× gymnax``
is a ratio of medians. The batch is sharded over
all local devices (on CPU, one host device per core).

``--profile`` also times each game without its observations and with the auto-reset replaced by a
fixed start, and shares its step out by subtraction: the observation's, the auto-reset's and the
telemetry's part (the JSON's ``profile``); and it traces a call of each game's row with telemetry
(``jax.profiler``): its top ops by their own time, each with the name stack of the game's code that
made it (each such row's ``ops``, :mod:`op_profile`).

The JSON holds every row and the checks the games are held to (``checks``): none slower at B = 4096
than at 64, PacMaze at least 1M steps/s at 4096, CartPoleBugs with telemetry at least
gymnax CartPole at 64 and 4096, telemetry at most 10% over the bare game, and ParkWorld's pixels
per second at least Craftax-Classic's. ``--quick``: batches 64 and 4096, short rounds, the anchors
at 4096 only.

Compiled rows are kept in JAX's persistent compilation cache (``--compile-cache``, by default
``~/.cache/jgtest/xla``), so a rerun skips most of the compiling; ``compile_s`` then counts loading.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import importlib.util
import os
import platform
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

# XLA's C++ log only when asked for (TF_CPP_MIN_LOG_LEVEL): loading a row from the compilation
# cache logs an error-level line each (a tuning feature, +prefer-no-gather, read as a machine
# mismatch). Must precede jax's import, as must the flags below.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# One XLA host device per core, so the env batch is split across cores (XLA's CPU
# backend runs one small-kernel program mostly on one thread). Must precede jax's import.
os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "")
    + f" --xla_force_host_platform_device_count={os.cpu_count()} --xla_cpu_multi_thread_eigen=false"
).strip()

import gymnax  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from _common import write_json  # noqa: E402
from op_profile import op_profile  # noqa: E402

import jgtest  # noqa: E402
from jgtest.types import Telemetry  # noqa: E402

FULL_BATCHES = (1, 4, 16, 64, 256, 1024, 4096)
QUICK_BATCHES = (64, 4096)
#: Steps whose keys and actions are drawn beforehand, used in turn.
KEYS = 64
#: The most steps one timed call plays.
MAX_STEPS = 1 << 16
FLOOR = "harness floor (do-nothing game)"
GYMNAX = "gymnax CartPole-v1"
#: The game timed beside gymnax CartPole-v1 in each round, its ``× gymnax`` a paired ratio.
GYMNAX_PEER = "CartPoleBugs-v0"
#: The anchors: name → (how to make it, pixels a frame when it draws frames).
ANCHORS = {
    "gymnax MinAtar Breakout": ("gymnax", "Breakout-MinAtar"),
    "Craftax-Classic symbolic": ("craftax", "Craftax-Classic-Symbolic-v1"),
    "Craftax-Classic pixels": ("craftax", "Craftax-Classic-Pixels-v1"),
    "NAVIX Empty-8x8": ("navix", "Navix-Empty-8x8-v0"),
}
#: The games whose observation is a drawn frame, and the anchor whose pixels per second theirs must
#: reach.
FRAME_PEER = {"ParkWorld-v0": "Craftax-Classic pixels"}
#: Telemetry may cost at most this share over the bare game.
TELEMETRY_BUDGET = 0.10
#: PacMaze's steps/s at the largest batch.
PACMAZE_TARGET = 1_000_000


@dataclasses.dataclass(frozen=True)
class Game:
    """A game as the harness plays it: ``reset(key) -> state``, ``step(key, state, action) ->
    (state, outputs)`` (everything the row consumes), its number of actions and the pixels of
    its observation when that is a drawn frame."""

    name: str
    consumes: str
    reset: Callable
    step: Callable
    num_actions: int
    frame_pixels: int | None = None


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


def _frame_pixels(shape: tuple[int, ...]) -> int | None:
    """Pixels of an ``[H, W, 3]`` frame, ``None`` for any other observation."""
    return shape[0] * shape[1] if len(shape) == 3 and shape[-1] == 3 else None


#: What a jgtest game's row consumes: every output but the telemetry, everything, and (for
#: ``--profile``) everything but the observations, or everything with the auto-reset replaced by a
#: fixed start (no ``reset_env`` computed on each step).
CONSUMES = ("bare", "telemetry", "no observation", "fixed reset")


def testing_game(env, params, name: str, consumes: str) -> Game:
    """A jgtest game (or the harness floor), consuming what ``consumes`` (:data:`CONSUMES`) says."""
    start = env.reset(jax.random.key(0), params)

    def step(key, state, action):
        if consumes == "fixed reset":
            obs, stepped, reward, terminated, info = env.step_env(key, state, action, params)
            truncated = env.is_truncated(stepped, params)
            done = terminated | truncated
            obs, state = jax.tree.map(lambda s, x: jnp.where(done, s, x), start, (obs, stepped))
            info = {**info, "final_observation": obs}
        else:
            obs, state, reward, terminated, truncated, info = env.step(key, state, action, params)
        if consumes == "bare":
            info = {k: v for k, v in info.items() if k != "telemetry"}
        if consumes == "no observation":
            obs, info = None, {k: v for k, v in info.items() if k != "final_observation"}
        return state, (obs, reward, terminated, truncated, info)

    return Game(
        name,
        consumes,
        lambda key: env.reset(key, params)[1],
        step,
        env.action_space(params).n,
        _frame_pixels(env.observation_space(params).shape),
    )


def gymnax_game(name: str, env, params) -> Game:
    """A gymnax-API game (gymnax 1.x's own, with ``terminated`` and ``truncated``; Craftax's, with
    ``done``), consuming everything its step returns."""

    def step(key, state, action):
        obs, state, reward, *flags, info = env.step(key, state, action, params)
        return state, (obs, reward, *flags, info)

    return Game(
        name,
        "all",
        lambda key: env.reset(key, params)[1],
        step,
        env.action_space(params).n,
        _frame_pixels(env.observation_space(params).shape),
    )


def navix_game(name: str, env_id: str) -> Game:
    """A NAVIX game: its ``Timestep`` is the state (it carries its own key and auto-resets)."""
    import navix

    env = navix.make(env_id)

    def step(key, timestep, action):
        timestep = env.step(timestep, action)
        return timestep, (timestep.observation, timestep.reward, timestep.step_type)

    return Game(name, "all", env.reset, step, int(env.action_space.maximum) + 1)


def anchor(name: str) -> Game | None:
    """The anchor ``name`` (:data:`ANCHORS`), ``None`` when its library is not installed."""
    library, env_id = ANCHORS[name]
    if importlib.util.find_spec(library) is None:
        return None
    if library == "navix":
        return navix_game(name, env_id)
    if library == "craftax":
        from craftax.craftax_env import make_craftax_env_from_name

        env = make_craftax_env_from_name(env_id, auto_reset=True)
        return gymnax_game(name, env, env.default_params)
    return gymnax_game(name, *gymnax.make(env_id))


#: Output leaves of at most this many values a game are summed together, larger ones one by one.
SMALL_LEAF = 64


#: A byte leaf of at least this many values a game is a drawn frame, summed four bytes to a word.
FRAME_BYTES = 16_384


def _words(leaf: jax.Array) -> jax.Array:
    """``leaf``'s values as ``uint32`` words: 32-bit values reinterpreted, 64-bit ones as their two
    halves, a frame's bytes four to a word (:data:`FRAME_BYTES`), other narrower integers and
    booleans converted.

    * chosen: only a frame's bytes four to a word, because a renderer writes its frame to memory,
      while a small byte observation (PacMaze's colour indices) is computed by XLA inside its sum,
      where four bytes to a word made the code scalar (PacMaze six times slower).
    """
    if leaf.dtype.itemsize in (4, 8):
        return jax.lax.bitcast_convert_type(leaf, jnp.uint32)  # a 64-bit value: a trailing pair
    if leaf.dtype in (jnp.uint8, jnp.int8) and leaf.size % 4 == 0 and leaf.size >= FRAME_BYTES:
        # a frame's bytes four to a word: no converted copy of a large frame batch in memory
        return jax.lax.bitcast_convert_type(leaf.reshape(-1, 4), jnp.uint32)
    return leaf.astype(jnp.uint32)


def _checksum(outputs) -> tuple[jax.Array, jax.Array]:
    """Wrapping ``uint32`` sums of the words of every value of one game's ``outputs``: keeps all
    of them alive. Two sums: the 32-bit scalars', and the other values'.

    * chosen: integer sums of the values' bits, because XLA's CPU backend vectorises an integer
      reduction but adds floats one after another (rounding depends on the order): summing a
      frame as float32 took most of a grid game's step.
    * chosen: the 32-bit scalars summed apart, in plain adds, because XLA fuses the code that
      computes them (a random draw, say) into their sum, and a sum that also reads arrays
      ([games, values] slices, booleans) compiles to scalar code on CPU where plain adds of
      ``[games]`` values compile to vector code.
    * chosen: the other small leaves concatenated and summed once, because a reduction each (a
      kernel each on CPU) made consuming CartPole's telemetry cost a third of its step at 64
      games; a frame is summed alone, as it is (flattened first, Block Maze's planes summed ten
      times slower).
    """
    scalars, rest = [], []
    for leaf in jax.tree.leaves(outputs):
        (scalars if leaf.size == 1 and leaf.dtype.itemsize == 4 else rest).append(leaf)
    small = [jnp.ravel(_words(leaf)) for leaf in rest if leaf.size <= SMALL_LEAF]
    total = jnp.sum(jnp.concatenate(small)) if small else jnp.uint32(0)
    big = (jnp.sum(_words(leaf)) for leaf in rest if leaf.size > SMALL_LEAF)
    return sum(map(_words, scalars), jnp.uint32(0)).reshape(()), sum(big, total)


@dataclasses.dataclass
class Runner:
    """One row's compiled ``advance(carry, steps, keys, actions) -> carry``, which plays every game
    ``steps`` steps (a traced count: one compilation serves any), its carry (the games' states, the
    step count and the checksum), its inputs (:data:`KEYS` steps' keys and actions, used in turn)
    and the steps a call plays, sized by :meth:`calibrate`."""

    game: Game
    batch: int
    advance: Any
    carry: Any
    inputs: tuple
    steps: int = 1
    compile_s: float = 0.0

    def call(self) -> None:
        self.carry = self.advance(self.carry, jnp.int32(self.steps), *self.inputs)
        jax.block_until_ready(self.carry)

    def calibrate(self, seconds: float) -> None:
        """Doubles the steps a call plays until a call takes at least ``seconds`` (or
        :data:`MAX_STEPS` steps), so that the cost of a call is small beside its work."""
        while self.steps < MAX_STEPS:
            start = time.perf_counter()
            self.call()
            if time.perf_counter() - start >= seconds:
                break
            self.steps *= 2


def compile_runner(game: Game, batch: int) -> Runner:
    """Compiles ``game``'s row at ``batch`` games, its batch sharded over the local devices."""
    devices = jax.devices()
    n_shards = len(devices) if batch % len(devices) == 0 else 1
    mesh = jax.sharding.Mesh(devices[:n_shards], ("env",))
    by_env = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("env"))
    by_step_env = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(None, "env"))
    key = jax.random.key(batch)
    states = jax.jit(jax.vmap(game.reset), out_shardings=by_env)(
        jax.random.split(jax.random.fold_in(key, 0), batch)
    )
    step_keys = jax.random.split(jax.random.fold_in(key, 1), (KEYS, batch))
    actions = jax.random.randint(jax.random.fold_in(key, 2), (KEYS, batch), 0, game.num_actions)
    inputs = (jax.device_put(step_keys, by_step_env), jax.device_put(actions, by_step_env))

    def play(key, state, action):
        state, outputs = game.step(key, state, action)
        return state, _checksum(outputs)

    def advance(carry, steps, step_keys, actions):
        def body(_, carry):
            states, t, checksums, keys, acts = carry
            states, sums = jax.vmap(play)(keys, states, acts)
            keys, acts = (
                jax.lax.dynamic_index_in_dim(x, (t + 1) % KEYS, keepdims=False)
                for x in (step_keys, actions)
            )
            return states, t + 1, jax.tree.map(jnp.add, checksums, sums), keys, acts

        return jax.lax.fori_loop(0, steps, body, carry)

    # a game's checksums: no reduction across devices in the loop
    checksums = jax.device_put(tuple(jnp.zeros(batch, jnp.uint32) for _ in range(2)), by_env)
    carry = (states, jnp.int32(0), checksums, inputs[0][0], inputs[1][0])
    compiled = jax.jit(advance, donate_argnums=0).lower(carry, jnp.int32(1), *inputs).compile()
    return Runner(game, batch, compiled, carry, inputs)


def time_set(runners: dict, rounds: int, seconds: float) -> dict[str, list[float]]:
    """Steps/s of each runner in each of ``rounds`` rounds, timed one after another within each
    round, a call each (sized to about ``seconds``, :meth:`Runner.calibrate`). Each round starts
    one runner further on, so that no runner always follows the same one."""
    for runner in runners.values():
        runner.calibrate(seconds)
    rates = {name: [] for name in runners}
    names = list(runners)
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            runner = runners[name]
            start = time.perf_counter()
            runner.call()
            rates[name].append(runner.steps * runner.batch / (time.perf_counter() - start))
    return rates


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


def row_sets(games: list[str], anchors: list[Game], consumes: tuple[str, ...]) -> list[list[Game]]:
    """The sets timed together (module docstring): each jgtest game consuming each of ``consumes``,
    and each anchor alone (the references come first when timed, :func:`measure_batch`)."""
    sets = []
    for name in games:
        env, params = jgtest.make(name)
        sets.append([testing_game(env, params, name, c) for c in consumes])
    return sets + [[a] for a in anchors]


def paired_ratio(numerator: list[float], denominator: list[float]) -> float:
    """The median over rounds of two rows' ratio, each round's pair timed side by side (module
    docstring)."""
    return statistics.median(a / b for a, b in zip(numerator, denominator))


def measure_batch(
    sets,
    references: list[Game],
    batch: int,
    rounds: int,
    seconds: float,
    trace_ops: bool = False,
    single_rounds: int | None = None,
) -> list:
    """Rows of one batch size: the references timed as a set of their own, then every set, gymnax
    CartPole-v1 timed again beside its peer's set (:data:`GYMNAX_PEER`), all compiled first (one
    compile per core at a time); a set of one row (an anchor: no ratio to pair) is timed
    ``single_rounds`` rounds (default ``rounds``). With ``trace_ops``, each game's row with
    telemetry also gets its top ops (:func:`op_profile.op_profile`, one traced call)."""
    gymnax_ref = next(g for g in references if g.name == GYMNAX)
    sets = [references] + [
        row_set + ([gymnax_ref] if row_set[0].name == GYMNAX_PEER else []) for row_set in sets
    ]
    every = {(g.name, g.consumes): g for row_set in sets for g in row_set}

    def timed_compile(game: Game) -> Runner:
        begin = time.perf_counter()
        runner = compile_runner(game, batch)
        runner.compile_s = time.perf_counter() - begin
        return runner

    with ThreadPoolExecutor(max_workers=os.cpu_count()) as pool:
        compiled = dict(zip(every, pool.map(timed_compile, every.values())))
    rows, reference_rates = [], {}
    for row_set in sets:
        runners = {(g.name, g.consumes): compiled[(g.name, g.consumes)] for g in row_set}
        by_round = time_set(
            runners, rounds if len(runners) > 1 else single_rounds or rounds, seconds
        )
        rates = {key: statistics.median(values) for key, values in by_round.items()}
        reference_rates = reference_rates or rates
        for (name, consumes), value in rates.items():
            if (name, consumes) in reference_rates and row_set is not sets[0]:
                continue  # a reference is reported from its own set
            runner = runners[(name, consumes)]
            game = runner.game
            traced = trace_ops and consumes == "telemetry" and name != FLOOR
            ops = op_profile(runner.call, runner.advance.as_text(), 1) if traced else None
            gymnax_key = (GYMNAX, "all")
            rows.append(
                {
                    **({} if ops is None else {"ops": ops}),
                    "game": name,
                    "consumes": consumes,
                    "batch": batch,
                    "steps_per_s": value,
                    "round_steps_per_s": by_round[(name, consumes)],
                    "steps": runner.steps,
                    "compile_s": runner.compile_s,
                    "vs_gymnax": paired_ratio(by_round[(name, consumes)], by_round[gymnax_key])
                    if gymnax_key in by_round
                    else value / reference_rates[gymnax_key],
                    "harness_share": value / reference_rates[(FLOOR, "telemetry")],
                    "pixels_per_s": None
                    if game.frame_pixels is None
                    else value * game.frame_pixels,
                }
            )
        for key in runners:
            if key not in reference_rates:
                del compiled[key]  # the set's games and their states, before the next set's
        del runners
        gc.collect()
    return rows


def checks(rows: list[dict], games: list[str], batches: tuple[int, ...]) -> dict[str, dict]:
    """The targets the games are held to (module docstring): each with its figures and whether it
    holds; a target whose rows were not measured is absent."""

    by_key = {(r["game"], r["consumes"], r["batch"]): r for r in rows}

    def rate(game, consumes, batch):
        return by_key[(game, consumes, batch)]["steps_per_s"]

    low, high = 64, max(batches)
    result = {}
    if low in batches and high > low:
        figures = {g: [rate(g, "telemetry", low), rate(g, "telemetry", high)] for g in games}
        result["no_twin_slower_at_the_largest_batch"] = {
            "figures": figures,
            "holds": all(b >= a for a, b in figures.values()),
        }
    if "PacMaze-v0" in games:
        value = rate("PacMaze-v0", "telemetry", high)
        result["pacmaze_million_steps"] = {"figures": value, "holds": value >= PACMAZE_TARGET}
    if "CartPoleBugs-v0" in games:
        figures = {
            b: by_key[("CartPoleBugs-v0", "telemetry", b)]["vs_gymnax"]
            for b in batches
            if b in (low, high)
        }
        result["cartpole_telemetry_vs_gymnax"] = {
            "figures": figures,
            "holds": all(v >= 1.0 for v in figures.values()),
        }
    overhead = {
        f"{g} @ {b}": 1
        - paired_ratio(
            by_key[(g, "telemetry", b)]["round_steps_per_s"],
            by_key[(g, "bare", b)]["round_steps_per_s"],
        )
        for g in games
        for b in batches
        if b in (low, high)
    }
    result["telemetry_overhead"] = {
        "figures": overhead,
        "holds": all(v <= TELEMETRY_BUDGET for v in overhead.values()),
    }
    for game, peer in FRAME_PEER.items():
        pixels = {
            r["game"]: r["pixels_per_s"] for r in rows if r["batch"] == high and r["pixels_per_s"]
        }
        if game in games and peer in pixels:
            result[f"{game}_pixels_vs_{peer}"] = {
                "figures": pixels[game] / pixels[peer],
                "holds": pixels[game] >= pixels[peer],
            }
    return result


def profile(rows: list[dict], games: list[str], batches: tuple[int, ...]) -> dict:
    """Each game's step time shared out by subtraction, at each batch: the observation's share
    (its step against the row without observations), the auto-reset's (against a fixed reset)
    and the telemetry's (against the bare row), each of the step with telemetry."""
    time_of = {(r["game"], r["consumes"], r["batch"]): 1 / r["steps_per_s"] for r in rows}
    parts = {"observation": "no observation", "auto-reset": "fixed reset", "telemetry": "bare"}
    return {
        game: {
            batch: {
                part: 1 - time_of[(game, without, batch)] / time_of[(game, "telemetry", batch)]
                for part, without in parts.items()
            }
            for batch in batches
        }
        for game in games
    }


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="batches 64 and 4096, short rounds, anchors at 4096"
    )
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument(
        "--games", nargs="*", default=None, help="games to measure (default: all registered)"
    )
    parser.add_argument(
        "--no-anchors", action="store_true", help="only the floor and gymnax CartPole beside ours"
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="also time each game without its observations and with a fixed reset: the shares of "
        "its step (observation, auto-reset, telemetry) in the JSON's profile",
    )
    parser.add_argument(
        "--compile-cache",
        type=Path,
        default=Path.home() / ".cache" / "jgtest" / "xla",
        help="JAX's persistent compilation cache, kept between runs (default: %(default)s)",
    )
    parser.add_argument(
        "--no-compile-cache", action="store_true", help="compile every row afresh, cache nothing"
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    cache = None if args.no_compile_cache else args.compile_cache
    if cache is not None:
        jax.config.update("jax_compilation_cache_dir", str(cache))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    batches = QUICK_BATCHES if args.quick else FULL_BATCHES
    # --quick: an anchor's own set is timed 3 rounds (a Craftax row's call takes seconds at 4096)
    rounds, seconds, single_rounds = (7, 0.15, 3) if args.quick else (9, 0.25, 9)
    games = sorted(args.games or jgtest.registered_games())
    anchors = [] if args.no_anchors else [anchor(name) for name in ANCHORS]
    missing = [name for name, a in zip(ANCHORS, anchors) if a is None]
    anchors = [a for a in anchors if a is not None]
    gym_sps = gymnasium_steps_per_second(20_000 if args.quick else 100_000, 3)
    references = [
        testing_game(DoNothing(), DoNothing().default_params, FLOOR, "telemetry"),
        gymnax_game(GYMNAX, *gymnax.make("CartPole-v1")),
    ]
    print(
        f"{'game':32s} {'consumes':>14s} {'batch':>6s} {'steps/s':>13s} {'× gymnasium':>12s} "
        f"{'× gymnax':>9s} {'harness share':>14s}"
    )
    print(f"{'Gymnasium CartPole-v1 (Python loop)':32s} {'all':>14s} {1:>6d} {gym_sps:>13,.0f}")
    rows = []
    for batch in batches:
        # --quick times the anchors at its largest batch only: Craftax's compilation alone would
        # take most of its minutes.
        timed_anchors = anchors if not args.quick or batch == batches[-1] else []
        sets = row_sets(games, timed_anchors, CONSUMES if args.profile else CONSUMES[:2])
        measured = measure_batch(
            sets, references, batch, rounds, seconds, args.profile, single_rounds
        )
        for row in measured:
            print(
                f"{row['game']:32s} {row['consumes']:>14s} {batch:>6d} "
                f"{row['steps_per_s']:>13,.0f} {row['steps_per_s'] / gym_sps:>12.1f} "
                f"{row['vs_gymnax']:>9.2f} "
                f"{row['harness_share']:>14.1%}",
                flush=True,
            )
        rows += measured
    held = checks(rows, games, batches)
    shares = profile(rows, games, batches) if args.profile else {}
    for game, by_batch in shares.items():
        for batch, parts in by_batch.items():
            print(f"{game} @ {batch}: " + ", ".join(f"{k} {v:.0%}" for k, v in parts.items()))
    LOOP = "jit(advance)/while/body/"  # the harness's loop, around every op of a row
    for row in rows:
        if row.get("ops"):
            top = row["ops"][:4]
            print(
                f"{row['game']} @ {row['batch']}, top ops: "
                + "; ".join(f"{op['share']:.0%} {op['scope'].removeprefix(LOOP)}" for op in top)
            )
    print()
    for name, check in held.items():
        print(f"{'holds' if check['holds'] else 'FAILS':5s}  {name}: {check['figures']}")
    if missing:
        print(f"not installed, not measured: {', '.join(missing)}")
    result = {
        "benchmark": "env_throughput",
        "command": "python benchmarks/env_throughput.py"
        + (" --quick" if args.quick else "")
        + ("" if args.games is None else " --games " + " ".join(args.games)),
        "quick": args.quick,
        "devices": [str(d) for d in jax.devices()],
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "jax_version": jax.__version__,
        "rounds": rounds,
        "anchor_rounds": single_rounds,
        "seconds_per_round": seconds,
        "anchors_not_installed": missing,
        "compile_cache": None if cache is None else str(cache),
        "gymnasium_steps_per_s": gym_sps,
        "rows": rows,
        "checks": held,
        "profile": shares,
        "wall_s": time.perf_counter() - started,
    }
    slowest = sorted(rows, key=lambda r: -r["compile_s"])[:3]
    print(
        f"{result['wall_s']:.0f} s in all; compiling {sum(r['compile_s'] for r in rows):.0f} s "
        "(two at a time; slowest: "
        + ", ".join(f"{r['game']} @ {r['batch']} {r['compile_s']:.0f} s" for r in slowest)
        + ")"
    )
    write_json(args.json, result)
    return result


if __name__ == "__main__":
    main()
