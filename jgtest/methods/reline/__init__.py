"""RELINE: reinforcement learning for load testing games (Tufano et al., 2022, ICSE).

RELINE trains an agent on ``r = r_g + r_p`` (:mod:`jgtest.rewards`), a game
reward and a reward for slow frames, and compares it with **rl-baseline** (the
same learner on the game reward only) and a **random** agent:

* CartPoleBugs-v0 (§3): CEM (:mod:`jgtest.agents.cem`: 16 episodes an
  iteration, 3,200 training episodes of at most 1,000 steps). The elites are
  the replication package's, the episodes at or above the batch's 70th
  percentile of returns (``elites="percentile"``, default), or the paper's
  sentence, "the m = 11 (70%) episodes having the highest score", by rank
  (``elites="rank"``, :func:`jgtest.losses.cem_top_m_mask`).
* PacMaze-v0 (§3): DQN on 4 stacked grayscale frames with a 10k replay, one
  gradient step per environment step from 10k steps on, Lapan's (2018)
  defaults (:func:`jgtest.agents.dqn.lapan_config`). Frames are the 21×21
  maze at one pixel a cell; the network a small CNN (two 3×3 stride-2
  convolutions of 16 and 32 filters, 128 features; :data:`PACMAZE_NETWORK`)
  computed as patches × kernel, which CPUs run ~6× faster than XLA's
  convolution (the paper: 84×84 Atari frames and the Nature CNN, 1,000
  episodes). ``quick`` trains fewer steps; an MLP over the frames, tried as
  the cheaper quick network, learned neither tunnel. Under the package's
  protocol (default) each model learns through the episodes Table 1 counts,
  the last ``eval_episodes`` of its run (:mod:`jgtest.methods.reline.learning_run`).
* KartTrack-v0 (§4): the same DQN on 4 stacked observation vectors (the twin
  exposes the game's internals and the heavy spot in view, where the paper's
  agent saw four 200x150 screenshots; the SuperTuxKart bridge gives pixels),
  2,300 training episodes in the paper. Under the package's protocol (default)
  the learners' low-FPS points come from the last ``eval_episodes`` episodes of
  their learning runs, as the package counts the last 1,000 of 3,300.
* The real games, through the host loop: Ms. Pac-Man (ALE, :mod:`jgtest.methods.reline.host`,
  Table 1) and SuperTuxKart (pystk2, :mod:`jgtest.methods.reline.stk`: the kart
  experiment with real render times, the warm-up inside RELINE's training as the
  paper, and the replay check by track section).

The experiment (:func:`run`): N models per learning agent trained **vmapped**
(one compiled program for all), each evaluated on ``eval_episodes`` episodes
(the paper: 10 models, 1,000 episodes each; §3.1.4), still learning (the
package's protocol, ``evaluation="training"``) or frozen (the paper's text). Toy games: **Table 1**,
per agent and n = 1…k the number of episodes in which at least n of the k
injected bugs showed, mean / median / sd over the models, next to the paper's.
Kart (§4.1.3): the threshold ``t = t_b + δ`` (``t_b`` = mean + 5·sd of the
render times of the trained rl-baseline in ``threshold_episodes`` episodes,
each stopped when the kart gets stuck, footnote 2; ``δ`` from
``warmup_episodes`` driven by the rl-baseline under training load), RELINE
trained against ``t``, then each agent's low-FPS points (cells above ``t`` in
more than 50% of their visits) with visits and confidence, Mann-Whitney U
with Holm's correction and Cliff's delta between the render times at the
agents' points, the constant-action replay reliability check (pairwise
Spearman, Holm) and the violin and position plots.

Choices where the paper is silent or unclear: the evaluation episodes of the
kart are played under training load, as the paper's (it "train[s] both
agents for additional 1,000 episodes" and judges them with ``t``, which
includes δ); under ``evaluation="frozen"`` with the weights fixed (the same
sentence says "as also done in our preliminary study", whose agents were
"run" for 1,000 episodes, §3.1.4);
the warm-up episodes that measure δ are rollouts of the trained rl-baseline
under the training load outside RELINE's training loop (the paper plays them
at the start of RELINE's training, its network learning from them; here the
load is a game parameter, so δ does not depend on where they run); the DQN
agents play ε-greedily, as in training (the package's final ε = 0.01 under
its protocol, Lapan's 0.02 frozen), and CEM samples its policy; ``sd`` is the sample sd (ddof = 1).

The package: :mod:`~jgtest.methods.reline.config` (the games, agents, the paper's figures,
:class:`RelineConfig`), :mod:`~jgtest.methods.reline.learners` (each game's learner),
:mod:`~jgtest.methods.reline.analysis` (Table 1, low-FPS points), :mod:`~jgtest.methods.reline.device`
(the on-device run), :mod:`~jgtest.methods.reline.learning_run` (a DQN learning through the episodes
Table 1 counts), :mod:`~jgtest.methods.reline.host` and :mod:`~jgtest.methods.reline.stk` (the
bridged runs), :mod:`~jgtest.methods.reline.console` (the console tables) and :func:`run`, the one entry.
"""

from jgtest.methods.reline.analysis import bugs_found, caught_records, cell_centres, first_records, heavy_spots_found, low_fps_analysis, table1, write_low_fps
from jgtest.methods.reline.campaign import run
from jgtest.methods.reline.config import AGENTS, GAMES, HOST_GAMES, KART_GAMES, PAPER_KART, PAPER_TABLE1, RelineConfig, eval_seed, game_options
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
