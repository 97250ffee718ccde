"""The one interface every agent has (:class:`Agent`, pure functions like optax's
``GradientTransformation``), and :func:`build`, the one builder of its periods.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

import jax

from jgtest.agents.common import run_periods, scan_then_evaluate

AgentState = Any
Metrics = dict[str, jax.Array]


class ActOutput(NamedTuple):
    """What ``act`` returns for a batch of observations."""

    action: jax.Array  # int32[...]
    log_prob: jax.Array  # log-probability of ``action`` under the acting policy
    value: jax.Array  # the agent's value estimate of the observation (0 for agents without one)


class InitFn(Protocol):
    def __call__(self, key: jax.Array, hparams: Any = None) -> AgentState: ...


class InitLearnerFn(Protocol):
    def __call__(self, key: jax.Array, obs: jax.Array, hparams: Any = None) -> AgentState: ...


class ActFn(Protocol):
    def __call__(
        self, params: Any, obs: jax.Array, key: jax.Array, hparams: Any = None, timesteps: Any = 0
    ) -> ActOutput: ...


class UpdateFn(Protocol):
    def __call__(
        self, state: AgentState, batch: Any, key: jax.Array, hparams: Any = None
    ) -> tuple[AgentState, Metrics]: ...


class PeriodFn(Protocol):
    def __call__(self, state: AgentState, hparams: Any = None) -> tuple[AgentState, Metrics]: ...


class TrainFn(Protocol):
    def __call__(self, key: jax.Array, hparams: Any = None) -> tuple[AgentState, Metrics]: ...


class StepFn(Protocol):
    """One collect-and-update step of training: ``(state, hparams) -> (state, step metrics)``."""

    def __call__(self, state: AgentState, hparams: Any) -> tuple[AgentState, Any]: ...


class SummarizeFn(Protocol):
    """A period's training metrics from the state after it and its stacked step metrics."""

    def __call__(self, state: AgentState, step_metrics: Any) -> Metrics: ...


class Agent(NamedTuple):
    """The pieces of an agent; ``network`` is its flax module (``None`` for random play).

    * ``init(key, hparams=None) -> state``: a fresh learner with its batch of games reset;
    * ``init_learner(key, obs, hparams=None) -> state``: a fresh learner for games stepped
      elsewhere (a host loop over a bridged game): ``obs`` is the batch of first observations and
      the state holds no game state;
    * ``act(params, obs, key, hparams=None, timesteps=0) -> ActOutput``: the training policy's
      action for each observation (sampled, or ε-greedy at the ε of ``timesteps`` env steps), with
      its log-probability and value estimate;
    * ``update(state, batch, key, hparams=None) -> (state, metrics)``: one learning step from the
      agent's kind of batch (a :class:`jgtest.types.Transition` rollout ``[T, N]`` for on-policy
      agents, a dict of transitions for DQN, whole episodes for CEM);
    * ``period(state, hparams=None) -> (state, metrics)``: a fixed number of collect-and-update
      steps, then the greedy policy's evaluation;
    * ``train(key, hparams=None) -> (state, metrics per period)``: ``init`` then every period under
      ``lax.scan``.

    ``hparams`` is the algorithm's traced ``*Hyperparams`` pytree, ``None`` meaning its defaults.
    """

    config: Any
    network: Any
    init: InitFn
    init_learner: InitLearnerFn
    act: ActFn
    update: UpdateFn
    period: PeriodFn
    train: TrainFn


def or_default(hparams, default):
    """``hparams``, or ``default`` where ``None`` is passed (every agent function's fallback)."""
    return default if hparams is None else hparams


def build(
    config,
    network,
    game,
    default_hparams,
    *,
    init: InitFn,
    init_learner: InitLearnerFn,
    act: ActFn,
    update: UpdateFn,
    step: StepFn,
    steps_per_period: int,
    greedy,
    summarize: SummarizeFn,
) -> Agent:
    """The :class:`Agent` whose periods scan ``step`` ``steps_per_period`` times and evaluate
    ``greedy``.

    Args:
      config: the agent's frozen config (``num_evals``, ``eval_episodes``).
      network: its flax module, or ``None``.
      game: ``(env, env_params, max_steps)`` the evaluation plays
        (:func:`jgtest.agents.common.make_game`).
      default_hparams: the hyperparameters used where ``None`` is passed.
      init: the agent's ``init``.
      init_learner: its ``init_learner``.
      act: its ``act`` (jitted here).
      update: its ``update`` (jitted here).
      step: ``(state, hparams) -> (state, step metrics)``, one collect-and-update step.
      steps_per_period: steps between two evaluations.
      greedy: ``params -> policy(obs, key) -> action``, the evaluated policy.
      summarize: the period's training metrics (``env_steps``, ``train_return_mean``, losses, ...).

    Returns:
      The agent; each period's metrics are ``eval_return_mean``, ``eval_return_std`` and
      ``summarize``'s.
    """
    env, env_params, max_steps = game

    def period(state, hparams=None):
        hparams = or_default(hparams, default_hparams)
        state, step_metrics, eval_mean, eval_std = scan_then_evaluate(
            state,
            lambda s: step(s, hparams),
            steps_per_period,
            greedy,
            env,
            env_params,
            config.eval_episodes,
            max_steps,
        )
        return state, {
            "eval_return_mean": eval_mean,
            "eval_return_std": eval_std,
            **summarize(state, step_metrics),
        }

    def train(key, hparams=None):
        return run_periods(
            lambda s: period(s, hparams),
            init(key, or_default(hparams, default_hparams)),
            config.num_evals,
        )

    return Agent(config, network, init, init_learner, jax.jit(act), jax.jit(update), period, train)
