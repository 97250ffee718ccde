"""The cross-entropy method, RELINE's CartPole agent (Tufano et al., 2022, §3.1.2; Lapan, 2018).

Each iteration the policy network (one hidden layer of 128) plays
``episodes_per_iter`` (n = 16) episodes to their end, sampling its actions;
the episodes whose return reaches the ``percentile``-th percentile are the
elites, and the network is fitted to their actions by cross-entropy
(:func:`jgtest.losses.cem_loss`, Adam, lr 0.01 as in Lapan's CartPole agent).
All on device; ``num_iterations`` iterations in ``num_evals`` periods. The
defaults are RELINE's CartPole agent: 16 episodes an iteration, the best 70%
kept, 200 iterations = 3,200 training episodes (§3.1.4), episodes capped at
1,000 steps (§3.1.2: "the maximum length of an episode (that we set to 1,000
steps)", CartPoleBugs-v0's default cap).
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from flax import struct

from jgtest.agents.common import batched, check_positive, make_game, run_periods, scan_then_evaluate
from jgtest.losses import cem_elite_mask, cem_loss, cem_top_m_mask
from jgtest.nets import PolicyNetwork


@struct.dataclass
class CEMHyperparams:
    learning_rate: float = 0.01
    percentile: float = 30.0  # keep the best 70% of the episodes (the issue; RELINE §3.1.2)


@dataclasses.dataclass(frozen=True)
class CEMConfig:
    game: str = "CartPoleBugs-v0"
    game_kwargs: tuple[tuple[str, Any], ...] = ()
    episodes_per_iter: int = 16
    num_iterations: int = 200
    gradient_steps: int = 1
    elite_episodes: int | None = None  # keep exactly this many by rank (RELINE's m = 11) instead of the percentile cut
    hidden_sizes: tuple[int, ...] = (128,)
    activation: str = "relu"
    num_evals: int = 10
    eval_episodes: int = 16

    def __post_init__(self):
        check_positive(self, "episodes_per_iter", "num_iterations", "gradient_steps", "num_evals", "eval_episodes")
        if self.elite_episodes is not None and not 1 <= self.elite_episodes <= self.episodes_per_iter:
            raise ValueError(f"elite_episodes={self.elite_episodes} must be in [1, episodes_per_iter={self.episodes_per_iter}]")
        if self.num_iterations % self.num_evals:
            raise ValueError(f"num_evals={self.num_evals} does not divide num_iterations={self.num_iterations}")

    @property
    def iterations_per_eval(self) -> int:
        return self.num_iterations // self.num_evals


@struct.dataclass
class CEMState:
    params: Any
    opt_state: Any
    key: jax.Array
    env_steps: jax.Array  # int32, steps played inside episodes


class CEMAgent(NamedTuple):
    config: CEMConfig
    network: PolicyNetwork
    init: Any
    period: Any
    train: Any
    play: Any  # (params, key) -> (obs [E, T, ...], actions [E, T], valid [E, T], returns [E])
    update: Any  # (params, opt_state, obs, actions, valid, returns, hparams) -> (params, opt_state, metrics)


def make_agent(config: CEMConfig, game=None) -> CEMAgent:
    """The CEM agent of ``config`` on its game, or on ``game = (env, env_params)`` (see :func:`make_game`)."""
    env, env_params, max_steps = make_game(config, game)
    num_actions = env.action_space(env_params).n
    obs_ndim = len(env.observation_space(env_params).shape)
    network = PolicyNetwork(num_actions, hidden_sizes=config.hidden_sizes, activation=config.activation, obs_ndim=obs_ndim)
    reset, step = batched(env, env_params)
    n = config.episodes_per_iter

    def play(params, key):
        """Plays ``n`` whole episodes (padded to the episode cap) with sampled actions."""
        k_reset, k_run = jax.random.split(key)
        obs, state = reset(jax.random.split(k_reset, n))

        def body(carry, k):
            obs, state, running = carry
            k_act, k_step = jax.random.split(k)
            action = jax.random.categorical(k_act, network.apply(params, obs))
            next_obs, state, reward, term, trunc, _ = step(jax.random.split(k_step, n), state, action)
            out = (obs, action, running, reward * running)
            return (next_obs, state, running * (1.0 - (term | trunc))), out

        _, (obs_t, actions, valid, rewards) = jax.lax.scan(body, (obs, state, jnp.ones(n)), jax.random.split(k_run, max_steps))
        swap = lambda x: jnp.swapaxes(x, 0, 1)
        return swap(obs_t), swap(actions), swap(valid), rewards.sum(axis=0)

    def update(params, opt_state, obs, actions, valid, returns, hparams: CEMHyperparams):
        if config.elite_episodes is None:
            elite = cem_elite_mask(returns, hparams.percentile)
        else:
            elite = cem_top_m_mask(returns, config.elite_episodes)
        weight = (valid * elite[:, None]).reshape(-1)
        flat_obs = obs.reshape(-1, *obs.shape[2:])
        tx = optax.adam(hparams.learning_rate)

        def loss_fn(p):
            return cem_loss(network.apply(p, flat_obs), actions.reshape(-1), weight)

        def grad_step(carry, _):
            p, o = carry
            (loss, metrics), grads = jax.value_and_grad(loss_fn, has_aux=True)(p)
            updates, o = tx.update(grads, o, p)
            return (optax.apply_updates(p, updates), o), {"loss": loss, **metrics}

        (params, opt_state), metrics = jax.lax.scan(grad_step, (params, opt_state), None, length=config.gradient_steps)
        return params, opt_state, jax.tree.map(jnp.mean, metrics)

    def init(key, hparams=None):
        hparams = CEMHyperparams() if hparams is None else hparams
        k_net, k_obs, k_run = jax.random.split(key, 3)
        obs, _ = reset(jax.random.split(k_obs, 1))
        params = network.init(k_net, obs[0])
        return CEMState(params=params, opt_state=optax.adam(hparams.learning_rate).init(params), key=k_run, env_steps=jnp.int32(0))

    def iteration(state: CEMState, hparams):
        key, k_play = jax.random.split(state.key)
        obs, actions, valid, returns = play(state.params, k_play)
        params, opt_state, metrics = update(state.params, state.opt_state, obs, actions, valid, returns, hparams)
        steps = state.env_steps + valid.sum().astype(jnp.int32)
        return CEMState(params=params, opt_state=opt_state, key=key, env_steps=steps), {**metrics, "return": returns.mean()}

    def period(state: CEMState, hparams=None):
        hparams = CEMHyperparams() if hparams is None else hparams
        greedy = lambda params: lambda obs, k: jnp.argmax(network.apply(params, obs), axis=-1)
        state, m, eval_mean, eval_std = scan_then_evaluate(
            state, lambda s: iteration(s, hparams), config.iterations_per_eval, greedy, env, env_params, config.eval_episodes, max_steps
        )
        metrics = {
            "env_steps": state.env_steps,
            "eval_return_mean": eval_mean,
            "eval_return_std": eval_std,
            "train_return_mean": m["return"].mean(),
            "loss": m["loss"].mean(),
        }
        return state, metrics

    def train(key, hparams=None):
        return run_periods(lambda s: period(s, hparams), init(key, hparams), config.num_evals)

    return CEMAgent(config, network, init, period, train, jax.jit(play), jax.jit(update))


def make_train(config: CEMConfig, game=None):
    """``train(key, hparams=None) -> (final CEMState, metrics per evaluation)``; jit- and vmap-able."""
    return make_agent(config, game).train
