"""A2C as Wuji configures it (Zheng et al., 2019, §IV-D, §V-A4), for a population of policies
fine-tuned at once under ``jax.vmap``: Adam, an entropy term, a floor on every action's
probability, three batch-normalised layers.

Two settings: the authors' (:data:`AUTHORS_A2C`, :data:`AUTHORS_A2C_HPARAMS`, the default: their
A2C of commit 6661943 of ``NeteaseFuxiRL/wuji``, one game per learner, whole-episode returns, a
fixed number of steps per child) and ours (:data:`OURS_A2C`, :data:`OURS_A2C_HPARAMS`: n-step
returns in 8 games, an early stop after rounds without improvement).

* chosen: the numbers the paper lost, where neither the paper nor the authors' code gives them
  (the layer width, batch-norm momentum), of the usual PyTorch shapes.
* chosen: a round in which no episode finished counts neither way, because it measured nothing.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import optax
from flax import struct

from jgtest.agents.common import check_positive
from jgtest.agents.on_policy import advantages
from jgtest.coverage import BitSet, CellSetState, ObservationStates
from jgtest.envs.base import step_with_reset
from jgtest.losses import a2c_loss
from jgtest.nets import BatchNormActorCritic, floored_log_probs
from jgtest.rollout import BugCatch, action_key, episode_key, reset_key, step_key
from jgtest.types import Transition

#: How a rollout's returns are formed: ``"episode"``, whole-episode Monte Carlo returns (an update
#: plays each game's episodes to their end once ``num_steps`` steps are played, every end a
#: terminal, as the authors' A2C: ``ac/__init__.py:36-44,115-117`` and ``pg/wrap/problem.py:55-63``
#: at commit 6661943), or ``"n_step"``, ``num_steps``-step returns bootstrapped from the value.
RETURNS = ("episode", "n_step")


@dataclasses.dataclass(frozen=True)
class WujiA2CConfig:
    """Static shape of the learner. This copy of the paper lost every number of §V-A4 (learning
    rate "[?]e-3", entropy weight, ε, layer width, the rounds and minutes of the early stop).

    Attributes:
      hidden_sizes: the torso's widths (ours: three layers of 64).
      num_envs: games per learner.
      num_steps: steps per game before an update (``"episode"`` returns: at least, then to the
        episode's end).
      updates_per_round: updates between two checks of the stop (and of the campaign's budget).
      max_rounds: rounds at most.
      patience: rounds without a better mean training return before the early stop (used when
        ``steps_per_child`` is ``None``).
      bn_momentum: batch-norm running averages as PyTorch's ``BatchNorm1d`` keeps them by default
        (momentum 0.1 there, 0.9 in Flax's terms: the paper's network is PyTorch's).
      returns: one of :data:`RETURNS`.
      steps_per_child: train each child this many game steps (its update that crosses it ends
        training), or ``None`` for the early stop.
    """

    hidden_sizes: tuple[int, ...] = (64, 64, 64)
    num_envs: int = 8
    num_steps: int = 5
    updates_per_round: int = 25
    max_rounds: int = 8
    patience: int = 2
    bn_momentum: float = 0.9
    returns: str = "n_step"
    steps_per_child: int | None = None

    def __post_init__(self):
        check_positive(self, "num_envs", "num_steps", "updates_per_round", "max_rounds", "patience")
        if len(self.hidden_sizes) < 1 or min(self.hidden_sizes) < 1:
            raise ValueError(f"hidden_sizes must be positive widths, got {self.hidden_sizes}")
        if self.returns not in RETURNS:
            raise ValueError(f"returns must be one of {RETURNS}, got {self.returns!r}")
        if self.steps_per_child is not None and self.steps_per_child < 1:
            raise ValueError(f"steps_per_child must be at least 1, got {self.steps_per_child}")

    @property
    def steps_per_round(self) -> int:
        """Game steps one learner plays a round (``"n_step"`` returns; with ``"episode"`` returns,
        the fewest)."""
        return self.updates_per_round * self.num_steps * self.num_envs


@struct.dataclass
class WujiA2CHyperparams:
    """Traced numbers of the learner (ours by default: Adam at 1e-3, the lost value's order of
    magnitude, entropy weight 0.01, A3C's); ε = 0.01 per action (§V-A4, and the authors'
    ``prob_min``, ``pg/agent/__init__.py:67-70`` at commit 6661943)."""

    learning_rate: float = 1e-3
    gamma: float = 0.99
    gae_lambda: float = 1.0  # n-step returns (A2C)
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    min_action_prob: float = 0.01


#: The authors' A2C (``NeteaseFuxiRL/wuji`` at commit 6661943, ``config.ini:110-138``): one game
#: per learner, episodes played whole until an update has at least 128 steps
#: (``pg/wrap/problem.py:55-63``), a child trained 10,000 steps (``config.ini:40,60``, the stopper
#: ``cost.relative``); 10 updates a round between the campaign's budget checks (ours).
AUTHORS_A2C = WujiA2CConfig(
    num_envs=1,
    num_steps=128,
    updates_per_round=10,
    max_rounds=20,
    returns="episode",
    steps_per_child=10_000,
)
#: The authors' numbers: Adam at 2.5e-4 (``rl/pth/wrap/__init__.py:204-213``), entropy weight 1e-4,
#: policy and critic weights 1 (``config.ini:110-138``), γ 0.99.
AUTHORS_A2C_HPARAMS = WujiA2CHyperparams(learning_rate=2.5e-4, ent_coef=1e-4, vf_coef=1.0)
#: Ours where the paper is silent: n-step returns of 5 steps in 8 games (A2C's usual shape), a
#: round of 25 updates, at most 8 rounds, stop after 2 rounds without a better mean return.
OURS_A2C = WujiA2CConfig()
OURS_A2C_HPARAMS = WujiA2CHyperparams()


@struct.dataclass
class Slots:
    """One learner's games: observations, states, each slot's episode, step and actions so far."""

    obs: jax.Array
    state: object
    episode: jax.Array  # int32[B]
    t: jax.Array  # int32[B]
    traces: jax.Array  # int32[B, T]
    ret: jax.Array  # float32[B] return of the running episode


@struct.dataclass
class Covered:
    """What a round's games covered.

    Attributes:
      cells: the game's coverage cells (``telemetry.cell``), a :attr:`WujiA2C.cells` set.
      states: ``uint32[updates, T, num_envs, 2]``: Wuji's state (the bucketed observation
        after each step, :class:`jgtest.coverage.ObservationStates`) of every row, as hashes.
      live: ``bool[updates, T, num_envs]``: the rows that are steps played (``"episode"``
        returns: a game whose update is done waits, frozen, for the others).
    """

    cells: CellSetState
    states: jax.Array
    live: jax.Array  # bool[updates, T, num_envs]: the steps played (the others a frozen game's)


@struct.dataclass
class Learner:
    """One policy in training: weights and batch statistics, Adam's state, the early stop."""

    variables: dict
    opt_state: optax.OptState
    best: jax.Array  # float32, best mean training return of a round so far
    stale: jax.Array  # int32, rounds with finished episodes since it improved
    active: jax.Array  # bool, still training
    rounds: jax.Array  # int32
    steps: jax.Array  # int32, game steps trained


class WujiA2C:
    """The learner of :mod:`jgtest.agents.wuji_a2c` on one game.

    Everything is one individual's, pure and jittable; ``jax.vmap`` trains a population (an
    inactive learner, stopped early, keeps its weights while the others go on). Rollouts are
    **keyed** as a campaign's (:mod:`jgtest.rollout`): slot ``b`` of a learner with seed ``s``
    plays episode ``e`` with ``episode_key(s, b, e)``, so every bug that fires during training is
    caught with its episode's actions (:class:`jgtest.rollout.BugCatch`) and replays on the bare
    game.

    Args:
      env: a jgtest game (``step_env``/``reset_env``; ``num_actions``, ``num_bugs``).
      config: the static settings.
      max_steps: the game's episode cap (the length of an action trace).
      num_buckets: intervals per state feature of the states a round reports (Wuji's ``m``).
    """

    def __init__(self, env, config: WujiA2CConfig, max_steps: int, num_buckets: int = 10):
        self.env, self.config, self.max_steps = env, config, int(max_steps)
        obs_shape = env.observation_space(env.default_params).shape
        self.network = BatchNormActorCritic(
            env.num_actions, config.hidden_sizes, len(obs_shape), config.bn_momentum
        )
        self._obs_shape = obs_shape
        self._adam = optax.scale_by_adam()
        #: The cells a round's rollouts cover (returned by :meth:`round` and :meth:`random_round`).
        self.cells = BitSet(env.num_cells)
        #: The states a round's rollouts visit (returned by :meth:`round` and :meth:`random_round`
        #: as hashes).
        self.states = ObservationStates(env, env.default_params, num_buckets)

    # ----- policy -----------------------------------------------------------------------
    def init_variables(self, key: jax.Array) -> dict:
        """A fresh policy's ``{"params", "batch_stats"}``."""
        return self.network.init(key, jnp.zeros((2, *self._obs_shape)))

    def log_probs(self, variables, obs, hparams: WujiA2CHyperparams) -> jax.Array:
        """``log π'(·|obs)`` with the floor on every action (running batch statistics)."""
        logits, _ = self.network.apply(variables, obs)
        return floored_log_probs(logits, hparams.min_action_prob)

    def policy(
        self, variables, obs, key, hparams: WujiA2CHyperparams = WujiA2CHyperparams()
    ) -> jax.Array:
        """An action for one observation, sampled from the floored policy."""
        return jax.random.categorical(key, self.log_probs(variables, obs[None], hparams)[0])

    def greedy_policy(self, variables, obs, key) -> jax.Array:
        """The action of highest probability for one observation (``key`` unused): how the authors
        evaluate a policy (``NeteaseFuxiRL/wuji`` ``wuji/rl/pth/dqn/agent.py:33-34``)."""
        del key
        logits, _ = self.network.apply(variables, obs[None])
        return jnp.argmax(logits[0])

    # ----- state ------------------------------------------------------------------------
    def init_slots(self, env_params, seed) -> Slots:
        """The learner's ``num_envs`` games at episode 0 of run ``seed`` (keyed resets)."""
        slots = jnp.arange(self.config.num_envs)
        obs, state = jax.vmap(
            lambda b: self.env.reset_env(reset_key(episode_key(seed, b, 0)), env_params)
        )(slots)
        # strongly typed leaves (a game's ``time=0`` is a weak int): slots restored from a
        # checkpoint, which are strong, then match the compiled round
        state = jax.tree.map(lambda x: x.astype(x.dtype), state)
        zeros = jnp.zeros(self.config.num_envs, jnp.int32)
        traces = jnp.zeros((self.config.num_envs, self.max_steps), jnp.int32)
        return Slots(obs, state, zeros, zeros, traces, jnp.zeros(self.config.num_envs, jnp.float32))

    def init_learner(self, variables) -> Learner:
        return Learner(
            variables,
            self._adam.init(variables["params"]),
            jnp.float32(-jnp.inf),
            jnp.int32(0),
            jnp.bool_(True),
            jnp.int32(0),
            jnp.int32(0),
        )

    # ----- training ---------------------------------------------------------------------
    def _play_step(
        self, log_p, slots: Slots, catch: BugCatch, cover, env_params, seed, clock, live=None
    ):
        """One keyed step of every ``live`` slot (``bool[B]``, default all; the others stay as they
        are and their step counts nowhere), the ``clock``-th of its stretch (a round), its action
        drawn from ``log_p [B, A]``:
        ``(slots, catch, cover, action, reward, terminated, truncated, info, return of each episode
        that ended (0 else), state hashes [B, 2])``."""
        live = jnp.ones(self.config.num_envs, bool) if live is None else live
        b_ids = jnp.arange(self.config.num_envs)
        ep_keys = jax.vmap(lambda b, e: episode_key(seed, b, e))(b_ids, slots.episode)
        action = jax.vmap(lambda k, t, lp: jax.random.categorical(action_key(k, t), lp))(
            ep_keys, slots.t, log_p
        )
        next_reset = jax.vmap(lambda b, e: reset_key(episode_key(seed, b, e + 1)))(
            b_ids, slots.episode
        )
        obs, state, reward, term, trunc, info = jax.vmap(
            lambda s, a, k, t, kr: step_with_reset(self.env, env_params, s, a, step_key(k, t), kr)
        )(slots.state, action, ep_keys, slots.t, next_reset)
        traces = slots.traces.at[b_ids, jnp.minimum(slots.t, self.max_steps - 1)].set(action)
        fired = info["telemetry"].bugs_fired & live[:, None]
        catch = catch.add(fired, traces, slots.episode, slots.t, clock)
        cover, _ = self.cells.add(cover, info["telemetry"].cell, live)
        done = (term | trunc) & live
        ret = slots.ret + reward
        stepped = Slots(
            obs,
            state,
            slots.episode + done,
            jnp.where(done, 0, slots.t + 1),
            traces,
            jnp.where(done, 0.0, ret),
        )
        slots = jax.tree.map(
            lambda new, old: jnp.where(live.reshape(-1, *(1,) * (new.ndim - 1)), new, old),
            stepped,
            slots,
        )
        states = self.states.hashes(info["final_observation"])
        return (
            slots,
            catch,
            cover,
            action,
            reward,
            term,
            trunc,
            info,
            jnp.where(done, ret, 0.0),
            states,
        )

    @property
    def rollout_length(self) -> int:
        """Rows of an update's rollout ``T``: ``num_steps``, or with ``"episode"`` returns enough
        for the episode running at step ``num_steps`` to end (``num_steps + max_steps - 1``)."""
        extra = self.max_steps - 1 if self.config.returns == "episode" else 0
        return self.config.num_steps + extra

    def _collect(
        self,
        variables,
        slots: Slots,
        catch: BugCatch,
        cover,
        env_params,
        seed,
        hparams,
        first_clock,
        playing,
    ):
        """An update's rollout of :attr:`rollout_length` rows, the round's from ``first_clock`` on:
        ``(slots, catch, cover, Transition [T, B], state hashes [T, B, 2], live [T, B], finished
        sum, count)``. With ``"episode"`` returns a game plays while ``playing`` (the learner
        trains) until its first episode end at or after ``num_steps`` steps, every end a
        terminal; with ``"n_step"`` returns every game plays every row."""
        episodes = self.config.returns == "episode"

        def step(carry, k):
            slots, catch, cover, ret_sum, ret_count, played, frozen = carry
            live = ~frozen & playing if episodes else jnp.ones_like(frozen)
            logits, value = self.network.apply(variables, slots.obs)
            log_p = floored_log_probs(logits, hparams.min_action_prob)
            obs = slots.obs
            slots, catch, cover, action, reward, term, trunc, info, ended, states = self._play_step(
                log_p, slots, catch, cover, env_params, seed, first_clock + k, live
            )
            done = (term | trunc) & live
            transition = Transition(
                obs,
                action,
                reward,
                (term | trunc) if episodes else term,
                trunc,
                info["final_observation"],
                value,
                jnp.take_along_axis(log_p, action[:, None], axis=-1)[:, 0],
            )
            played = played + live
            frozen = frozen | (done & (played >= self.config.num_steps))
            carry = (
                slots,
                catch,
                cover,
                ret_sum + jnp.sum(ended),
                ret_count + jnp.sum(done),
                played,
                frozen,
            )
            return carry, (transition, states, live)

        none = jnp.zeros(self.config.num_envs, bool)
        (slots, catch, cover, ret_sum, ret_count, _, _), (traj, states, live) = jax.lax.scan(
            step,
            (slots, catch, cover, jnp.float32(0), jnp.int32(0), none.astype(jnp.int32), none),
            jnp.arange(self.rollout_length),
        )
        return slots, catch, cover, traj, states, live, ret_sum, ret_count

    def random_round(self, slots: Slots, env_params, seed) -> tuple[Slots, BugCatch, Covered]:
        """As many keyed steps of every slot as a training round plays (``updates_per_round *
        num_steps``), each action uniform over the game's actions (Wuji's ``random`` strategy):
        ``(slots, catch, cover)``. The slots' episodes go on across rounds, as a learner's do, so
        no step is spent on a finished episode."""
        uniform = jnp.zeros((self.config.num_envs, self.env.num_actions), jnp.float32)

        def step(carry, clock):
            slots, catch, cover = carry
            slots, catch, cover, *_, states = self._play_step(
                uniform, slots, catch, cover, env_params, seed, clock
            )
            return (slots, catch, cover), states

        steps = self.config.updates_per_round * self.config.num_steps
        (slots, catch, cells), states = jax.lax.scan(
            step,
            (slots, BugCatch.empty(self.env.num_bugs, self.max_steps), self.cells.init()),
            jnp.arange(steps),
        )
        return (
            slots,
            catch,
            Covered(
                cells,
                states.reshape(
                    self.config.updates_per_round, self.config.num_steps, *states.shape[1:]
                ),
                jnp.ones(
                    (self.config.updates_per_round, self.config.num_steps, self.config.num_envs),
                    bool,
                ),
            ),
        )

    def update(self, learner: Learner, traj: Transition, hparams, valid: jax.Array | None = None):
        """One Adam step on the A2C loss (MSE value loss, entropy bonus) of a rollout ``[T, B]``.

        ``valid`` (``bool[T, B]``): the rows that are transitions, the only ones in the loss's
        means and the batch statistics: a bridged game's step after an episode's end only resets
        it (:mod:`envs_bridge.protocol`), and with ``"episode"`` returns a game whose update is
        done waits, frozen."""
        advantage, returns = advantages(self.network, learner.variables, traj, hparams)
        if valid is not None:
            advantage, returns = (
                jnp.where(valid, advantage, 0.0),
                jnp.where(valid, returns, traj.value),
            )
        flat = jax.tree.map(
            lambda x: x.reshape(-1, *x.shape[2:]), (traj.obs, traj.action, advantage, returns)
        )
        rows = None if valid is None else valid.reshape(-1)
        batch_stats = learner.variables["batch_stats"]

        def loss_fn(params):
            (logits, value), updates = self.network.apply(
                {"params": params, "batch_stats": batch_stats},
                flat[0],
                train=True,
                mask=rows,
                mutable=["batch_stats"],
            )
            log_p = floored_log_probs(logits, hparams.min_action_prob)
            loss, _ = a2c_loss(
                log_p,
                value,
                flat[1],
                flat[2],
                flat[3],
                vf_coef=hparams.vf_coef,
                ent_coef=hparams.ent_coef,
                mask_t=rows,
            )
            return loss, updates["batch_stats"]

        (_, new_stats), grads = jax.value_and_grad(loss_fn, has_aux=True)(
            learner.variables["params"]
        )
        updates, opt_state = self._adam.update(grads, learner.opt_state)
        params = optax.apply_updates(
            learner.variables["params"], jax.tree.map(lambda u: -hparams.learning_rate * u, updates)
        )
        trained = learner.replace(
            variables={"params": params, "batch_stats": new_stats}, opt_state=opt_state
        )
        return jax.tree.map(lambda new, old: jnp.where(learner.active, new, old), trained, learner)

    def round(
        self,
        learner: Learner,
        slots: Slots,
        env_params,
        seed,
        hparams: WujiA2CHyperparams = WujiA2CHyperparams(),
    ):
        """One training round: ``updates_per_round`` rollouts and updates, then the stop.

        Returns ``(learner, slots, catch, cover, mean return of the episodes finished in the round
        (NaN if none))``: ``catch`` the first firing of each bug (:class:`jgtest.rollout.BugCatch`),
        ``cover`` the cells and states the round's games visited (:class:`Covered`). The learner
        stops (``active`` false) once it has trained ``steps_per_child`` steps (it updates no more
        after the update that crosses them), else after ``patience`` rounds without a better mean
        (a round in which no episode finished does not count); after ``max_rounds`` rounds either
        way.
        """
        catch = BugCatch.empty(self.env.num_bugs, self.max_steps)
        episodes = self.config.returns == "episode"

        def one(carry, u):
            learner, slots, catch, cover, ret_sum, ret_count = carry
            playing = self.trains(learner)
            slots, catch, cover, traj, states, live, s, c = self._collect(
                learner.variables,
                slots,
                catch,
                cover,
                env_params,
                seed,
                hparams,
                u * self.rollout_length,
                playing,
            )
            learner = self.learn(learner, traj, hparams, live if episodes else None)
            return (learner, slots, catch, cover, ret_sum + s, ret_count + c), (states, live)

        (trained, slots, catch, cells, ret_sum, ret_count), (states, live) = jax.lax.scan(
            one,
            (learner, slots, catch, self.cells.init(), jnp.float32(0), jnp.int32(0)),
            jnp.arange(self.config.updates_per_round),
        )
        trained, mean = self.end_round(learner, trained, ret_sum, ret_count)
        return trained, slots, catch, Covered(cells, states, live), mean

    def learn(self, learner: Learner, traj: Transition, hparams, valid=None) -> Learner:
        """:meth:`update` on a rollout ``[T, B]`` (its ``valid`` rows) if ``learner`` still
        :meth:`trains`, counting the steps it trained on."""
        updated = self.update(learner, traj, hparams, valid)
        played = traj.reward.size if valid is None else jnp.sum(valid, dtype=jnp.int32)
        updated = updated.replace(steps=learner.steps + played)
        return jax.tree.map(lambda n, o: jnp.where(self.trains(learner), n, o), updated, learner)

    def trains(self, learner: Learner) -> jax.Array:
        """Whether ``learner`` still trains: active and, with ``steps_per_child``, short of it."""
        if self.config.steps_per_child is None:
            return learner.active
        return learner.active & (learner.steps < self.config.steps_per_child)

    def end_round(
        self, learner: Learner, trained: Learner, ret_sum, ret_count
    ) -> tuple[Learner, jax.Array]:
        """The early stop after a round that took ``learner`` to ``trained``, whose finished
        episodes returned ``ret_sum`` over ``ret_count`` of them:
        ``(trained with its stop updated, the round's mean return, NaN if no episode finished)``
        (:meth:`round`)."""
        mean = jnp.where(ret_count > 0, ret_sum / jnp.maximum(ret_count, 1), jnp.nan)
        improved = learner.active & (ret_count > 0) & (mean > learner.best)
        stale = jnp.where(improved, 0, learner.stale + (ret_count > 0))
        rounds = learner.rounds + learner.active
        trained = trained.replace(
            best=jnp.where(improved, mean, learner.best),
            stale=jnp.where(learner.active, stale, learner.stale),
            rounds=rounds,
        )
        if self.config.steps_per_child is None:
            goes_on = stale < self.config.patience
        else:
            goes_on = trained.steps < self.config.steps_per_child
        active = learner.active & goes_on & (rounds < self.config.max_rounds)
        return trained.replace(active=active), mean
