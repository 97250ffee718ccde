"""Learned navigation for the plan agent (the article's "RL agent ... trained to navigate towards a
target location"): PPO on ``DungeonNav-v0``, measured on held-out levels beside the scripted one.
"""

from __future__ import annotations

import dataclasses
import shlex
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from flax import serialization

from jgtest.envs.dungeon_nav import navigator_input
from jgtest.files import write_atomically, write_json_atomically

#: Held-out levels: plan runs draw their random levels from keys at or past this seed.
HELD_OUT_SEED = 100_000

#: The held-out suite's plans: the article's three steps, alone and with its "attack any enemy"
#: rule.
_THREE_STEPS = [
    {"actor": "switch", "action": "interact"},
    {"actor": "lava", "action": "jump"},
    {"actor": "shrine", "action": "interact"},
]
SUITE = (
    {"game": "Dungeon-v0", "name": "complete the level", "nodes": _THREE_STEPS},
    {
        "game": "Dungeon-v0",
        "name": "complete the level, attacking enemies",
        "nodes": _THREE_STEPS,
        "rules": [
            {
                "preconditions": [{"actor_near": "enemy", "distance": 3}],
                "priority": 1,
                "action": "attack",
            }
        ],
    },
)


@dataclasses.dataclass(frozen=True)
class NavigatorConfig:
    """PPO on ``DungeonNav-v0`` (PureJaxRL's defaults otherwise: lr 2.5e-4, 4 epochs × 4
    minibatches).

    Attributes:
      total_timesteps: environment steps (5.7 M: 92.5% of the held-out suite, its moves drawn from
        the policy; 2.9 M: 88%).
      num_envs, num_steps: the rollout (games × steps per update).
      hidden_sizes: the actor-critic MLP.
      num_evals: evaluations (and metric rows) over the training.
      seed: PPO's key.
    """

    total_timesteps: int = 5_734_400
    num_envs: int = 64
    num_steps: int = 64
    hidden_sizes: tuple[int, ...] = (256, 256)
    num_evals: int = 10
    seed: int = 0

    def ppo_config(self):
        from jgtest.agents import ppo

        return ppo.PPOConfig(
            game="DungeonNav-v0",
            game_kwargs=(),
            num_envs=self.num_envs,
            num_steps=self.num_steps,
            total_timesteps=self.total_timesteps,
            hidden_sizes=self.hidden_sizes,
            num_evals=self.num_evals,
            eval_episodes=64,
            track_coverage=False,
        )


def train_navigator(config: NavigatorConfig = NavigatorConfig(), out_dir: str | Path | None = None):
    """``(network, params, metrics)``: PPO's navigator; saved to ``out_dir`` (``navigator.msgpack``,
    ``navigator.json``) when given."""
    from jgtest.agents import ppo

    agent = ppo.make_agent(config.ppo_config())
    state, metrics = jax.jit(agent.train)(jax.random.key(config.seed))
    metrics = {k: np.asarray(v).tolist() for k, v in jax.device_get(metrics).items()}
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        write_atomically(
            out / "navigator.msgpack", serialization.to_bytes(jax.device_get(state.params))
        )
        write_json_atomically(
            out / "navigator.json", {"config": dataclasses.asdict(config), "metrics": metrics}
        )
    return agent.network, state.params, metrics


def load_navigator(out_dir: str | Path):
    """``(network, params)`` saved by :func:`train_navigator` in ``out_dir``.

    Raises:
      BadFile: no trained navigator there, or its files cannot be read or are not a navigator's.
    """
    from jgtest.agents import ppo
    from jgtest.errors import BadFile
    from jgtest.files import read_bytes, read_json

    out = Path(out_dir)
    if not (out / "navigator.msgpack").is_file():
        raise BadFile(
            f"{out}: no trained navigator (train one: "
            f"`{shlex.join(['jgtest', 'plan', 'train-navigator', '--out', str(out)])}`)"
        )
    saved = read_json(out / "navigator.json")
    try:
        config = NavigatorConfig(
            **{**saved["config"], "hidden_sizes": tuple(saved["config"]["hidden_sizes"])}
        )
    except (KeyError, TypeError):
        raise BadFile(
            f"{out / 'navigator.json'}: not a saved navigator (its config is missing or has other "
            "fields)"
        ) from None
    agent = ppo.make_agent(config.ppo_config())
    like = agent.network.init(jax.random.key(0), jnp.zeros(_obs_shape()))
    try:
        return agent.network, serialization.from_bytes(like, read_bytes(out / "navigator.msgpack"))
    except ValueError as error:  # msgpack's decoding errors, or parameters of another shape
        raise BadFile(
            f"{out / 'navigator.msgpack'}: not the parameters of the navigator in navigator.json "
            f"({error})"
        ) from None


def _obs_shape() -> tuple[int, ...]:
    import jgtest

    env, params = jgtest.make("DungeonNav-v0")
    return env.observation_space(params).shape


def learned_navigator(network, params, greedy: bool = False):
    """The plan agent's ``navigator``: the policy's move from the grid sensor, the target's plane
    and its direction, drawn from the policy (as PPO trained it; a greedy policy can pace between
    two cells for ever where its two best moves point at each other), or its most likely move with
    ``greedy``."""

    def navigate(passable, pos, target, observation, key):
        del passable
        logits, _ = network.apply(params, navigator_input(observation, pos, target))
        move = jnp.argmax(logits) if greedy else jax.random.categorical(key, logits)
        return move.astype(jnp.int32)

    return navigate


def plan_completion(
    navigator, plans=None, seeds: int = 100, variant: str = "random_layout"
) -> dict:
    """The share of ``plans`` (default :data:`SUITE`) × ``seeds`` held-out random levels the
    ``navigator`` completes (every validation passed), and the scripted navigator's on the same
    runs."""
    import jgtest
    from jgtest.plans import dungeon as game
    from jgtest.plans.agent import run_plans, scripted_navigator
    from jgtest.plans.compiled import stack_plans
    from jgtest.plans.model import parse_plan

    env, params = jgtest.make("Dungeon-v0", variant=variant)
    plans = [parse_plan(p) for p in SUITE] if plans is None else list(plans)
    compiled = stack_plans(plans, env)
    keys = jax.vmap(jax.random.key)(HELD_OUT_SEED + np.arange(seeds))
    share = lambda nav: float(
        (
            np.asarray(run_plans(env, game, params, compiled, keys, navigator=nav)[0].outcome) == 1
        ).mean()
    )
    return {
        "runs": len(plans) * seeds,
        "learned": share(navigator),
        "scripted": share(scripted_navigator),
    }
