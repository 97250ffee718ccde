"""Probes of the kart twin's render field against the package's frame-time logs (RELINE §4).

The replication package logged every frame time of its SuperTuxKart agents
(``SuperTuxKart/FPS_info_*.xlsx``, read by ``benchmarks/reline_kart_package_logs.py``): among
them the share of each agent's steps slower than the package's ``t``. These probes play
KartTrack-v0 with two fixed policies and measure the same
figures, so the render field can be fitted before any learner runs on it:

* **the scripted driver** (:func:`driver_action`) stands in for the trained rl-baseline: its laps
  without load give ``t_b`` and its laps under the training load give ``δ``, RELINE's ``t``
  (:func:`jgtest.oracles.reline_threshold`, §4.1.3);
* **the random kart** plays uniform actions under the training load, as the package's random
  agent was counted.

Usage::

    table = kart_probes.probe_table(KartTrack().default_params, load_offset_ms=3.3, episodes=300)
    table["random"]["share_above_t"]      # beside the package's random kart's share
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jgtest.envs.kart import ACTIONS, EnvParams, KartTrack
from jgtest.oracles import reline_threshold

#: The env the probes step (its default track; the params passed in carry the field).
_ENV = KartTrack()
#: The quantiles of the frame times the probe table reports (the package-log script's).
QUANTILES = (5, 25, 50, 75, 95)


def driver_action(obs: jax.Array) -> jax.Array:
    """The scripted driver: throttle, steering back to the centreline and into the bend ahead.

    ``signal = centering/(2θ) - sin(heading error) + curvature 10 ahead / 2`` (observation
    entries 3, 1 and 4): throttle + left above 0.03, throttle + right below -0.03, else throttle.
    """
    signal = 0.5 * obs[3] - obs[1] + 0.5 * obs[4]
    return jnp.where(signal > 0.03, 3, jnp.where(signal < -0.03, 4, 1))


def play(params: EnvParams, key: jax.Array, episodes: int, scripted: bool) -> dict:
    """``episodes`` episodes from the start line, each to its lap or its 225 steps.

    Args:
      params: the twin's params (load included).
      key: the episodes' key.
      episodes: how many.
      scripted: the scripted driver if True, else the random kart.

    Returns:
      ``{"frame_ms", "valid"}``, ``[episodes, 225]`` NumPy arrays; a step is valid up to and
      including the one that completes the lap.
    """
    return jax.tree.map(np.asarray, _play(params, key, episodes, scripted))


@functools.partial(jax.jit, static_argnames=("episodes", "scripted"))
def _play(params, key, episodes, scripted):
    def episode(key):
        obs, state = _ENV.reset_env(key, params)

        def body(carry, k):
            obs, state, live = carry
            k_act, k_step = jax.random.split(k)
            action = (
                driver_action(obs) if scripted else jax.random.randint(k_act, (), 0, len(ACTIONS))
            )
            obs, state, _, done, info = _ENV.step_env(k_step, state, action, params)
            row = {"frame_ms": info["telemetry"].frame_time_ms, "valid": live}
            return (obs, state, live & ~done), row

        keys = jax.random.split(key, _ENV.default_params.max_steps_in_episode)
        return jax.lax.scan(body, (obs, state, jnp.bool_(True)), keys)[1]

    return jax.vmap(episode)(jax.random.split(key, episodes))


def frame_figures(frame_ms: np.ndarray, valid: np.ndarray, threshold_ms: float) -> dict:
    """The package-log script's figures of one probe: steps, mean, quantiles, the share above
    ``threshold_ms``, the mean by tenth of the episodes' steps."""
    flat = frame_ms[valid]
    along = [np.array_split(row[ok], 10) for row, ok in zip(frame_ms, valid)]
    return {
        "steps": int(flat.size),
        "steps_per_episode": round(float(valid.sum(axis=1).mean()), 1),
        "frame_ms": {
            "mean": round(float(flat.mean()), 3),
            "sd": round(float(flat.std()), 3),
            "quantiles_5_25_50_75_95": [round(float(q), 2) for q in np.percentile(flat, QUANTILES)],
        },
        "share_above_t": round(float(np.mean(flat > threshold_ms)), 4),
        "mean_by_tenth_of_episode": [
            round(float(np.mean(np.concatenate([parts[i] for parts in along]))), 3)
            for i in range(10)
        ],
    }


def probe_table(
    params: EnvParams,
    load_offset_ms: float,
    load_scale: float = 1.0,
    episodes: int = 300,
    seed: int = 0,
) -> dict:
    """The twin's probe table: ``t`` by RELINE's rule from the driver, then each probe's figures.

    The driver plays ``episodes`` laps without load (``t_b``, the package's 300 calibration
    episodes) and a third as many under the load (``δ``, its 100 warm-up episodes); then the
    driver and the random kart play ``episodes`` each under the load.

    Returns:
      ``{"t_ms", "t_b_ms", "calibration", "driver", "random"}``, the last three
      :func:`frame_figures`, the driver's and the random kart's with their share over the random
      kart's.
    """
    keys = jax.random.split(jax.random.key(seed), 4)
    loaded = params.replace(load_scale=load_scale, load_offset_ms=load_offset_ms)
    base = play(params, keys[0], episodes, scripted=True)
    warm = play(loaded, keys[1], max(episodes // 3, 2), scripted=True)
    t_b = reline_threshold(base["frame_ms"][base["valid"]])
    t = reline_threshold(base["frame_ms"][base["valid"]], warm["frame_ms"][warm["valid"]])
    table = {"t_ms": round(t, 3), "t_b_ms": round(t_b, 3)}
    table["calibration"] = frame_figures(base["frame_ms"], base["valid"], t)
    for name, scripted, key in (("driver", True, keys[2]), ("random", False, keys[3])):
        run = play(loaded, key, episodes, scripted)
        table[name] = frame_figures(run["frame_ms"], run["valid"], t)
    for name in ("driver", "random"):
        table[name]["share_over_random"] = round(
            table[name]["share_above_t"] / max(table["random"]["share_above_t"], 1e-9), 3
        )
    return table
