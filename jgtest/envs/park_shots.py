"""Labelled shots of ``ParkWorld-v0``'s objects, the detector's data (PPGTA §V-B).

PPGTA fine-tunes its detector on "a small-sized and balanced dataset of 2000 shots" (§V-B):
:func:`shots` renders them with the renderer's labels.

* chosen: shots from 1.5 to 6 cells, turned and tilted, because objects must also show off
  centre and partly out of frame.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jgtest.envs.park import ParkWorld
from jgtest.envs.park_experts import start_near
from jgtest.envs.park_render import OOI_TYPES


def shots(
    env: ParkWorld,
    params,
    key: jax.Array,
    num: int,
    max_distance: float = 6.0,
    yaw_jitter: float = 0.4,
) -> dict:
    """``num`` labelled frames, each aimed at a reachable object of type ``i mod 4`` (so the
    types are balanced).

    Each is seen from 1.5 to ``max_distance`` cells at a walkable bearing, the camera turned up
    to ``yaw_jitter`` off the object and looking level or one step up or down. Labels are the
    renderer's ground truth (``info["objects"]``: ids, types, texture bugs, boxes, visible
    pixels); other objects in view are labelled too.

    Args:
      env: the park.
      params: its params (the objects).
      key: the shots' key.
      num: frames.
      max_distance: the farthest a shot is taken from its object (cells).
      yaw_jitter: how far the camera turns off the object (radians).

    Returns:
      dict: ``frames uint8[num, H, W, 3]``; ``objects`` (``info["objects"]``'s arrays,
      ``[num, max_visible, ...]``); ``aimed_type int32[num]`` (the type each shot was aimed at,
      for a stratified split); ``aimed int32[num]``.
    """
    if num < 1:
        raise ValueError(f"num must be at least 1, got {num}")
    types = np.asarray(params.ooi_type)
    reachable = env.ooi_reachable(params)
    rng = np.random.default_rng(int(jax.random.randint(key, (), 0, 2**31 - 1)))
    aimed_type = np.arange(num) % len(OOI_TYPES)
    aimed = np.array([rng.choice(np.flatnonzero((types == t) & reachable)) for t in aimed_type])

    @jax.jit
    def render(key, target):
        k_start, k_dist, k_yaw, k_pitch = jax.random.split(key, 4)
        distance = jax.random.uniform(k_dist, (), minval=1.5, maxval=max_distance)
        state = start_near(env, params, target, k_start, distance=distance)
        yaw = state.yaw + jax.random.uniform(k_yaw, (), minval=-yaw_jitter, maxval=yaw_jitter)
        state = state.replace(yaw=yaw, pitch=jax.random.randint(k_pitch, (), -1, 2))
        frame, info = env.observe(state, params)
        return frame, info["objects"]

    frames, objects = jax.vmap(render)(jax.random.split(key, num), jnp.asarray(aimed, jnp.int32))
    return {
        "frames": frames,
        "objects": objects,
        "aimed_type": jnp.asarray(aimed_type, jnp.int32),
        "aimed": jnp.asarray(aimed, jnp.int32),
    }
