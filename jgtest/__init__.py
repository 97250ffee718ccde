"""jgtest: automated video-game testing with learning agents, in JAX.

Public surface::

    env, params = jgtest.make("BlockMaze-v0")
    jgtest.register("MyGame-v0", MyGame)
"""

from jgtest import coverage, oracles
from jgtest.envs import BUG_KINDS, TestingEnv, make, register, registered_games
from jgtest.types import Telemetry

__version__ = "0.1.0"

__all__ = ["BUG_KINDS", "Telemetry", "TestingEnv", "coverage", "make", "oracles", "register", "registered_games"]
