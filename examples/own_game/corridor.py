"""A game of your own, on device: a corridor with one injected bug, registered and tested by jgtest.

    python examples/own_game/corridor.py

The docs' guide "Testing your own game" walks through this file. The game: a corridor of
``length`` cells, the player starts at cell 0 and moves left or right; reaching the far end wins.
The injected bug: standing on ``bug_cell`` fires a ``"stuck"`` bug (the telemetry's ``bugs_fired``),
the first time per episode.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct
from gymnax.environments import environment, spaces

import jgtest
from jgtest.envs.base import TestingEnv
from jgtest.types import Telemetry


@struct.dataclass
class EnvState(environment.EnvState):
    pos: jax.Array  # int32 the player's cell
    bug_seen: jax.Array  # bool the bug fired this episode
    time: int


@struct.dataclass(kw_only=True)
class EnvParams(environment.EnvParams):
    bug_cell: int = 6  # numbers live in EnvParams, so a campaign can vmap over placements
    max_steps_in_episode: int = 40


class Corridor(TestingEnv):
    """The corridor (module docstring). ``length`` shapes the game, so it is a constructor
    option."""

    env_id = "Corridor-v0"

    def __init__(self, length: int = 10):
        super().__init__()
        if length < 2:
            raise ValueError(f"length must be at least 2, got {length}")
        self.length = length

    @property
    def default_params(self) -> EnvParams:
        return EnvParams()

    @property
    def bug_kinds(self) -> tuple[str, ...]:
        return ("stuck",)  # one oracle kind per injected bug, in bugs_fired order

    @property
    def map_shape(self) -> tuple[int, int]:
        return (1, self.length)  # the coverage cells' bird's-eye layout

    @property
    def num_actions(self) -> int:
        return 2

    def observation_space(self, params) -> spaces.Box:
        return spaces.Box(0.0, 1.0, (self.length,), jnp.float32)

    def reset_env(self, key, params: EnvParams):
        state = EnvState(pos=jnp.int32(0), bug_seen=jnp.bool_(False), time=0)
        return self.get_obs(state, params), state

    def step_env(self, key, state: EnvState, action, params: EnvParams):
        move = jnp.where(jnp.asarray(action) == 1, 1, -1)
        pos = jnp.clip(state.pos + move, 0, self.length - 1).astype(jnp.int32)
        at_bug = pos == params.bug_cell
        won = pos == self.length - 1
        reward = jnp.where(won, 1.0, -0.01)
        telemetry = Telemetry.make(
            position=jnp.stack([0, pos]),
            cell=pos,
            bugs_fired=(at_bug & ~state.bug_seen)[None],
            game_reward=reward,
        )
        state = EnvState(pos=pos, bug_seen=state.bug_seen | at_bug, time=state.time + 1)
        return (
            self.get_obs(state, params),
            state,
            reward.astype(jnp.float32),
            won,
            {"telemetry": telemetry},
        )

    def get_obs(self, state: EnvState, params=None, key=None) -> jax.Array:
        return jnp.zeros(self.length, jnp.float32).at[state.pos].set(1.0)

    def is_terminated(self, state: EnvState, params: EnvParams) -> jax.Array:
        return state.pos == self.length - 1

    def validate_params(self, params: EnvParams) -> None:
        super().validate_params(params)
        if not 0 < int(params.bug_cell) < self.length:
            raise ValueError(
                f"{self.name}: bug_cell must be inside the corridor (1..{self.length - 1}), got "
                f"{params.bug_cell}"
            )


def main() -> dict:
    """Registers the game and runs a random-testing campaign on it (what ``jgtest run random``
    does)."""
    import tempfile
    from pathlib import Path

    from jgtest.methods import random_testing

    jgtest.register("Corridor-v0", Corridor, override=True)
    env, params = jgtest.make("Corridor-v0", length=12, bug_cell=9)
    with tempfile.TemporaryDirectory() as out:
        config = random_testing.RandomCampaignConfig(
            game="Corridor-v0",
            num_envs=16,
            steps_per_env=200,
            chunk_steps=100,
            game_kwargs={"length": 12, "bug_cell": 9},
        )
        summary = random_testing.run(config, Path(out))
    print(
        f"{env.name}: {summary['bugs_found']} of {summary['bugs_total']} bugs found, "
        f"{summary['state_coverage']} cells covered"
    )
    return summary


if __name__ == "__main__":
    main()
