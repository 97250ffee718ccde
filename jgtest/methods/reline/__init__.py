"""RELINE: reinforcement learning for load testing games (Tufano et al., ICSE 2022).

RELINE trains an agent on ``r = r_g + r_p``, the game's reward plus a reward for bugs (§3.1.3)
or slow frames (§4.1.2), beside rl-baseline (``r_g`` alone) and a random agent: Table 1 on the
toy games and Ms. Pac-Man (§3.2), low-FPS points over ``t = t_b + δ`` on the karts and levels
(§4.1.3). Games, protocols and choices: ``docs/methods/reline.md``.

Modules: ``config``; ``learners``, ``device`` and ``learning_run`` (games on device); ``host``,
``real_game``, ``stk`` and ``level`` (bridged games); ``analysis``; ``console``. The one entry
is :func:`run`::

    from jgtest.methods import reline

    reline.run(reline.RelineConfig(game="CartPoleBugs-v0"), "runs/reline")
"""

from jgtest.methods.reline.analysis import (
    bugs_found,
    caught_records,
    cell_centres,
    first_records,
    heavy_spots_found,
    low_fps_analysis,
    table1,
    write_low_fps,
)
from jgtest.methods.reline.campaign import run
from jgtest.methods.reline.config import (
    AGENTS,
    GAMES,
    HOST_GAMES,
    KART_GAMES,
    PAPER_KART,
    PAPER_TABLE1,
    RelineConfig,
    eval_seed,
    game_options,
)
from jgtest.methods.reline.device import evaluate_models, train_models
from jgtest.methods.reline.learners import DQN_STEPS, Learner, learner

__all__ = [
    "AGENTS",
    "DQN_STEPS",
    "GAMES",
    "HOST_GAMES",
    "KART_GAMES",
    "PAPER_KART",
    "PAPER_TABLE1",
    "Learner",
    "RelineConfig",
    "bugs_found",
    "caught_records",
    "cell_centres",
    "eval_seed",
    "evaluate_models",
    "first_records",
    "game_options",
    "heavy_spots_found",
    "learner",
    "low_fps_analysis",
    "run",
    "table1",
    "train_models",
    "write_low_fps",
]
