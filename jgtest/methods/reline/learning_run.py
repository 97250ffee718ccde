"""A DQN model's run under RELINE's replication package's protocol, on device: it learns while
it plays, and the tables count the last episodes of the run (the package's ``lines[-1000:]``).

:func:`learn_and_count` runs N models vmapped, one game and one learner update a step each, with
the episodes keyed as a campaign's (:mod:`jgtest.rollout`), so every bug found replays.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jgtest.checkpoint import Checkpointer, strongly_typed
from jgtest.rollout import BugCatch, action_key, episode_key, reset_key, step_key

#: Device calls a training period is cut into, so that a run ends within a tenth of a period of its
#: last episode's end.
CALLS_PER_PERIOD = 10


@struct.dataclass
class LearningRun:
    """One model's run (vmapped over models).

    Attributes:
      learner: the DQN's state (its ``env_state`` unused: the game is keyed here).
      env_state, obs: the game in play, as the learner sees it.
      episode: ``int32``, the episode in play (slot 0 of the model's run).
      t: ``int32``, its step.
      trace: ``int32[T]``, its actions so far.
      bits: ``bool[K]``, the bugs it showed so far.
      ret: ``float32``, its return so far (the learner's reward).
      counted: ``bool[E, K]``, the bugs of the last ``E`` finished episodes, episode ``e`` in row
        ``e % E``.
      lengths: ``int32[E]``, their lengths, in the same rows.
      kept: ``{name: [E, T]}``, the per-step values ``keep`` picks from each step's ``info``, in the
        same rows.
      catch: the first firing of each bug in the run.
      ended: ``bool``, the run reached its end (budget spent, ``E`` episodes played, episode over).
      steps: ``int32``, the steps played before its end.
      params_at_end: the learner's parameters when the run ended (``None`` unless asked for).
    """

    learner: Any
    env_state: Any
    obs: jax.Array
    episode: jax.Array
    t: jax.Array
    trace: jax.Array
    bits: jax.Array
    ret: jax.Array
    counted: jax.Array
    lengths: jax.Array
    kept: dict
    catch: BugCatch
    ended: jax.Array
    steps: jax.Array
    params_at_end: Any


def make_learning_run(
    trainer,
    game,
    params,
    hparams,
    num_counted: int,
    max_steps: int,
    num_bugs: int,
    keep=None,
    params_at_end: bool = False,
):
    """``(init(key, seed) -> LearningRun, chunk(run, seed) -> (run, metrics))``, both for one model.

    ``keep(info) -> {name: scalar}`` picks the per-step values kept for the counted episodes (e.g.
    the kart's cells and frame times, which its low-FPS analysis reads); ``None`` keeps none.
    ``params_at_end`` keeps the learner's parameters as they were when the run ended (a select of
    the parameters every step), where a caller plays the learned model afterwards.

    ``chunk`` plays ``steps_per_call`` keyed steps (the learner's period over
    :data:`CALLS_PER_PERIOD`); its metrics are the summed returns and the count of the episodes
    that ended in it (for the training curve).

    Raises:
      ValueError: the learner steps more than one game (``num_envs``): a learning run plays one.
    """
    if trainer.config.num_envs != 1:
        raise ValueError(
            "a learning run plays one game a model, as the package's; got a learner with "
            f"num_envs={trainer.config.num_envs}"
        )
    budget = trainer.config.env_steps
    keep = keep or (lambda info: {})
    steps_per_call = max(1, trainer.config.iterations_per_eval // CALLS_PER_PERIOD)

    def reset(seed, episode):
        obs, state = game.reset(reset_key(episode_key(seed, 0, episode)), params)
        return obs, jax.tree.map(
            lambda x: x.astype(x.dtype), state
        )  # strong types, as a restored checkpoint's

    def init(key, seed):
        obs, env_state = reset(seed, 0)
        _, _, _, _, _, info = jax.eval_shape(
            game.step, reset_key(episode_key(seed, 0, 0)), env_state, jnp.int32(0), params
        )
        kept = {k: jnp.zeros((num_counted, max_steps), v.dtype) for k, v in keep(info).items()}
        run = LearningRun(
            learner=trainer.init_learner(key, obs[None], hparams),
            env_state=env_state,
            obs=obs,
            episode=jnp.int32(0),
            t=jnp.int32(0),
            trace=jnp.zeros(max_steps, jnp.int32),
            bits=jnp.zeros(num_bugs, bool),
            ret=jnp.float32(0),
            counted=jnp.zeros((num_counted, num_bugs), bool),
            lengths=jnp.zeros(num_counted, jnp.int32),
            kept=kept,
            catch=BugCatch.empty(num_bugs, max_steps),
            ended=jnp.bool_(False),
            steps=jnp.int32(0),
            params_at_end=None,
        )
        if params_at_end:
            run = run.replace(params_at_end=run.learner.params)
        return run

    def step(run: LearningRun, seed):
        ep = episode_key(seed, 0, run.episode)
        key, k_sample = jax.random.split(run.learner.key)
        action = trainer.act(
            run.learner.params, run.obs[None], action_key(ep, run.t), hparams, run.learner.timesteps
        ).action[0]
        obs, env_state, reward, terminated, truncated, info = game.step(
            step_key(ep, run.t), run.env_state, action, params
        )
        done = terminated | truncated
        items = {
            "obs": run.obs[None],
            "action": action[None].astype(jnp.int32),
            "reward": reward[None],
            "terminated": terminated[None],
            "next_obs": info["final_observation"][None],
        }
        learner, _ = trainer.update(run.learner.replace(key=key), items, k_sample, hparams)
        live = ~run.ended
        fired = info["telemetry"].bugs_fired & live
        step_at = jnp.minimum(run.t, max_steps - 1)
        trace = run.trace.at[step_at].set(action)
        catch = run.catch.add(fired[None], trace[None], run.episode[None], run.t[None])
        bits, ret = run.bits | fired, run.ret + reward
        row = run.episode % num_counted
        counted = run.counted.at[row].set(jnp.where(done & live, bits, run.counted[row]))
        lengths = run.lengths.at[row].set(jnp.where(done & live, run.t + 1, run.lengths[row]))
        kept = {
            k: run.kept[k].at[row, step_at].set(jnp.where(live, v, run.kept[k][row, step_at]))
            for k, v in keep(info).items()
        }
        ended = run.ended | (
            done & (learner.timesteps >= budget) & (run.episode + 1 >= num_counted)
        )
        at_end = run.params_at_end
        if params_at_end:
            at_end = jax.tree.map(
                lambda new, old: jnp.where(live, new, old), learner.params, at_end
            )
        episode = run.episode + (done & live)
        obs_next, state_next = reset(seed, episode)
        fresh_if_done = lambda new, old: jax.tree.map(lambda a, b: jnp.where(done, a, b), new, old)
        run = LearningRun(
            learner=learner,
            env_state=fresh_if_done(state_next, env_state),
            obs=fresh_if_done(obs_next, obs),
            episode=episode,
            t=jnp.where(done, 0, run.t + 1),
            trace=jnp.where(done, 0, trace),
            bits=bits & ~done,
            ret=jnp.where(done, 0.0, ret),
            counted=counted,
            lengths=lengths,
            kept=kept,
            catch=catch,
            ended=ended,
            steps=run.steps + live,
            params_at_end=at_end,
        )
        return run, (jnp.where(done & live, ret, 0.0), done & live)

    def chunk(run: LearningRun, seed):
        run, (returns, ends) = jax.lax.scan(
            lambda r, _: step(r, seed), run, None, length=steps_per_call
        )
        return run, {"return_sum": returns.sum(), "episodes": ends.sum()}

    return init, chunk


def learn_and_count(
    trainer,
    game,
    params,
    hparams,
    keys,
    seeds,
    num_counted: int,
    max_steps: int,
    num_bugs: int,
    on_period=None,
    checkpoints: Checkpointer | None = None,
    keep=None,
    params_at_end: bool = False,
) -> dict:
    """Runs ``len(keys)`` models vmapped to their ends, as the package's scripts do (lines 289–344
    of ``msPacman_RELINE.py``; ``docs/methods/reline.md``):

    * one game a model, one ε-greedy action and one learner update
      (:func:`jgtest.agents.dqn.make_agent`'s ``update``: the replay buffer, a gradient step once
      its ``learning_starts`` are in, the target sync) a step;
    * the episodes are keyed as a campaign's (:mod:`jgtest.rollout`): episode ``e`` of the model
      with seed ``s`` resets with ``reset_key(episode_key(s, 0, e))`` and steps with
      ``step_key``, so every bug found while learning replays on the bare game (``jgtest replay``);
    * the run lasts the learner's step budget (its ``env_steps``) and at least ``num_counted``
      episodes, and stops when the episode in play then ends (the package's step-free episode
      counts are Ms. Pac-Man's, :data:`jgtest.methods.reline.learners.PACKAGE_TRAIN_EPISODES`; on
      the twins the two agents share one step budget);
    * Table 1 counts the bugs of the model's last ``num_counted`` episodes; the bug records are
      the first firing of each bug in the whole run (:class:`jgtest.rollout.BugCatch`).

    A model that has reached its end keeps stepping (vmapped models share each device call) but
    its counted episodes, catches, episode count and parameters at its end no longer change. The
    runs are checkpointed every period, so a killed run resumes and ends where an uninterrupted
    one ends.

    Args:
      trainer: the DQN agent (:func:`jgtest.agents.dqn.make_agent`) on ``game``.
      game: the game as the learner sees it (RELINE's reward, the frame stack), keyed resets and
        steps.
      params: the game's params.
      hparams: the learner's hyperparameters.
      keys: ``[N]`` learner keys (network init, replay sampling).
      seeds: ``[N]`` run seeds (the episodes' keys, the bug records' ``seed``).
      num_counted: ``E``, the last episodes Table 1 counts.
      max_steps: the game's episode cap (traces' length).
      num_bugs: ``K``.
      on_period: ``on_period(i, n)`` after each of the learner's ``num_evals`` periods (and after
        each later one until every model has ended, ``i > n``).
      checkpoints: saves the runs after every period, and resumes from the newest.
      keep: the per-step values kept for the counted episodes (:func:`make_learning_run`).
      params_at_end: also return each learner's parameters at its run's end
        (:func:`make_learning_run`).

    Returns:
      On the host: ``counted bool[N, E, K]``; the counted episodes' ``valid bool[N, E, T]`` (the
      step is inside the episode) and ``kept`` values ``{name: [N, E, T]}``; ``catch`` (a stacked
      :class:`BugCatch`); ``params``, the learners' parameters at their runs' ends (``None`` unless
      ``params_at_end``); ``episodes int[N]`` (played, counted ones included), ``steps int[N]``, and
      ``train_return_mean float[P]``, the mean return of the episodes all models ended in each of
      the ``P = num_evals`` periods (those after the step budget counted in the last).
    """
    init, chunk = make_learning_run(
        trainer, game, params, hparams, num_counted, max_steps, num_bugs, keep, params_at_end
    )
    seeds = jnp.asarray(seeds, jnp.int32)
    runs = strongly_typed(
        jax.jit(jax.vmap(init))(keys, seeds)
    )  # typed as restored runs: a resumed run reuses the compiled chunk
    call = jax.jit(jax.vmap(chunk))
    periods = trainer.config.num_evals
    sums = np.zeros(
        (2, periods), np.float64
    )  # returns and counts of the episodes ended in each period
    period = 0
    if checkpoints is not None and checkpoints.latest_step() is not None:
        period, (runs, sums) = checkpoints.restore_latest((runs, sums))
        sums = np.asarray(sums)
    ended = lambda: bool(np.all(jax.device_get(runs.ended)))
    while not ended():
        row = min(period, periods - 1)  # the periods after the budget fold into the last
        period_end = (period + 1) * trainer.config.iterations_per_eval  # the learner's own period
        while True:
            runs, metrics = call(runs, seeds)
            metrics = jax.device_get(metrics)
            sums[:, row] += np.sum(metrics["return_sum"]), np.sum(metrics["episodes"])
            if (
                ended() or np.min(jax.device_get(runs.learner.timesteps)) >= period_end
            ):  # the last one stops with its last model
                break
        period += 1
        if checkpoints is not None:
            checkpoints.save(period, (runs, sums))
        if on_period is not None:
            on_period(period, periods)
    runs = jax.device_get(runs)
    return {
        "counted": np.asarray(runs.counted),
        "valid": np.arange(max_steps) < np.asarray(runs.lengths)[..., None],
        "kept": {k: np.asarray(v) for k, v in runs.kept.items()},
        "catch": runs.catch,
        "params": runs.params_at_end,
        "episodes": np.asarray(runs.episode),
        "steps": np.asarray(runs.steps),
        "train_return_mean": sums[0] / np.maximum(sums[1], 1),
    }
