"""The cross-entropy method, RELINE's CartPole agent (Tufano et al., 2022, §3.1.2; Lapan, 2018): a
one-hidden-layer policy plays ``episodes_per_iter`` episodes, and is fitted to the elite ones'
actions by cross-entropy (:func:`jgtest.losses.cem_loss`), all on device.

* chosen: RELINE's defaults: 16 episodes an iteration, 200 iterations (§3.1.4), Adam at 0.01
  (Lapan's), episodes capped at 1,000 steps (§3.1.2).
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from flax import struct

from jgtest.agents import base
from jgtest.agents.base import ActOutput, Agent
from jgtest.agents.common import (
    GameSettings,
    batched,
    check_positive,
    game_spaces,
    initializers,
    make_game,
    sample_action,
)
from jgtest.losses import cem_elite_mask, cem_loss, cem_top_m_mask
from jgtest.losses.cem import ELITE_PERCENTILE
from jgtest.nets import PolicyNetwork


@struct.dataclass
class CEMHyperparams:
    learning_rate: float = 0.01
    percentile: float = ELITE_PERCENTILE  # the percentile of returns an elite episode reaches


@dataclasses.dataclass(frozen=True)
class CEMConfig(GameSettings):
    game_kwargs: tuple[tuple[str, Any], ...] = ()
    episodes_per_iter: int = 16
    num_iterations: int = 200
    gradient_steps: int = 1
    # keep exactly this many by rank (RELINE's m = 11) instead of the percentile cut
    elite_episodes: int | None = None
    hidden_sizes: tuple[int, ...] = (128,)
    activation: str = "relu"
    # PyTorch's nn.Linear initialization (RELINE's package is PyTorch code)
    torch_init: bool = False
    num_evals: int = 10
    eval_episodes: int = 16

    def __post_init__(self):
        check_positive(
            self,
            "episodes_per_iter",
            "num_iterations",
            "gradient_steps",
            "num_evals",
            "eval_episodes",
        )
        if (
            self.elite_episodes is not None
            and not 1 <= self.elite_episodes <= self.episodes_per_iter
        ):
            raise ValueError(
                f"elite_episodes={self.elite_episodes} must be in [1, "
                f"episodes_per_iter={self.episodes_per_iter}]"
            )
        if self.num_iterations % self.num_evals:
            raise ValueError(
                f"num_evals={self.num_evals} does not divide num_iterations={self.num_iterations}"
            )

    @property
    def iterations_per_eval(self) -> int:
        return self.num_iterations // self.num_evals


@struct.dataclass
class CEMState:
    params: Any
    opt_state: Any
    key: jax.Array
    env_steps: jax.Array  # int32, steps played inside episodes


class Episodes(NamedTuple):
    """``episodes_per_iter`` whole episodes, padded to the episode cap: CEM's batch."""

    obs: jax.Array  # [E, T, ...]
    actions: jax.Array  # [E, T]
    valid: jax.Array  # [E, T], 1 while the episode runs
    returns: jax.Array  # [E]


def make_agent(config: CEMConfig, game=None) -> Agent:
    """The CEM :class:`jgtest.agents.base.Agent` of ``config`` on its game, or on
    ``game = (env, env_params)`` (see :func:`make_game`). ``act`` samples the policy (``value`` 0:
    CEM has no critic); ``update(state, episodes, key, hparams)`` fits the policy to the elites of
    :class:`Episodes`."""
    env, env_params, max_steps = make_game(config, game)
    num_actions, obs_ndim = game_spaces(env, env_params)
    network = PolicyNetwork(
        num_actions,
        hidden_sizes=config.hidden_sizes,
        activation=config.activation,
        obs_ndim=obs_ndim,
        torch_init=config.torch_init,
    )
    reset, step = batched(env, env_params)
    n = config.episodes_per_iter

    def act(params, obs, key, hparams=None, timesteps=0):
        action, log_prob = sample_action(key, network.apply(params, obs))
        return ActOutput(action, log_prob, jnp.zeros(action.shape))

    def play(params, key) -> Episodes:
        """Plays ``n`` whole episodes (padded to the episode cap) with sampled actions."""
        k_reset, k_run = jax.random.split(key)
        obs, state = reset(jax.random.split(k_reset, n))

        def body(carry, k):
            obs, state, running = carry
            k_act, k_step = jax.random.split(k)
            action = act(params, obs, k_act).action
            next_obs, state, reward, term, trunc, _ = step(
                jax.random.split(k_step, n), state, action
            )
            out = (obs, action, running, reward * running)
            return (next_obs, state, running * (1.0 - (term | trunc))), out

        _, (obs_t, actions, valid, rewards) = jax.lax.scan(
            body, (obs, state, jnp.ones(n)), jax.random.split(k_run, max_steps)
        )
        swap = lambda x: jnp.swapaxes(x, 0, 1)
        return Episodes(swap(obs_t), swap(actions), swap(valid), rewards.sum(axis=0))

    def update(state: CEMState, episodes: Episodes, key, hparams=None):
        del key  # the fit is deterministic
        hparams = base.or_default(hparams, CEMHyperparams())
        if config.elite_episodes is None:
            elite = cem_elite_mask(episodes.returns, hparams.percentile)
        else:
            elite = cem_top_m_mask(episodes.returns, config.elite_episodes)
        weight = (episodes.valid * elite[:, None]).reshape(-1)
        flat_obs = episodes.obs.reshape(-1, *episodes.obs.shape[2:])
        tx = optax.adam(hparams.learning_rate)

        def loss_fn(p):
            return cem_loss(network.apply(p, flat_obs), episodes.actions.reshape(-1), weight)

        def grad_step(carry, _):
            p, o = carry
            (loss, metrics), grads = jax.value_and_grad(loss_fn, has_aux=True)(p)
            updates, o = tx.update(grads, o, p)
            return (optax.apply_updates(p, updates), o), {"loss": loss, **metrics}

        (params, opt_state), metrics = jax.lax.scan(
            grad_step, (state.params, state.opt_state), None, length=config.gradient_steps
        )
        steps = state.env_steps + episodes.valid.sum().astype(jnp.int32)
        return state.replace(params=params, opt_state=opt_state, env_steps=steps), jax.tree.map(
            jnp.mean, metrics
        )

    def initial_state(k_net, k_run, obs, env_state, hparams):
        del env_state  # each iteration plays from fresh resets
        params = network.init(k_net, obs[0])
        opt_state = optax.adam(base.or_default(hparams, CEMHyperparams()).learning_rate).init(
            params
        )
        return CEMState(params=params, opt_state=opt_state, key=k_run, env_steps=jnp.int32(0))

    # one game reset gives the observation the network is initialised on
    init, init_learner = initializers(initial_state, reset, 1)

    def iteration(state: CEMState, hparams):
        key, k_play = jax.random.split(state.key)
        episodes = play(state.params, k_play)
        state, metrics = update(state, episodes, k_play, hparams)
        return state.replace(key=key), {**metrics, "return": episodes.returns.mean()}

    def summarize(state: CEMState, step_metrics):
        return {
            "env_steps": state.env_steps,
            "train_return_mean": step_metrics["return"].mean(),
            "loss": step_metrics["loss"].mean(),
        }

    return base.build(
        config,
        network,
        (env, env_params, max_steps),
        CEMHyperparams(),
        init=init,
        init_learner=init_learner,
        act=act,
        update=update,
        step=iteration,
        steps_per_period=config.iterations_per_eval,
        greedy=lambda params: lambda obs, k: jnp.argmax(network.apply(params, obs), axis=-1),
        summarize=summarize,
    )


def make_train(config: CEMConfig, game=None):
    """``train(key, hparams=None) -> (final CEMState, metrics per evaluation)``; jit- and
    vmap-able."""
    return make_agent(config, game).train
