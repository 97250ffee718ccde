"""Losses (SPEC §2): pure, jittable functions on one stream, batched by ``jax.vmap``. Names follow
rlax (``_tm1``, ``_t``, ``_tp1`` mark time); each loss returns ``(loss, metrics)``.
"""

from jgtest.losses.a2c import a2c_loss
from jgtest.losses.cem import cem_elite_mask, cem_loss, cem_top_m_mask
from jgtest.losses.dqn import dqn_loss, periodic_update, polyak_update
from jgtest.losses.gae import gae
from jgtest.losses.imitation import bc_loss
from jgtest.losses.ppgta import (
    consistency_loss,
    ema_update,
    imitation_loss,
    inverse_dynamics_loss,
    od_mask_one_of_pair,
)
from jgtest.losses.ppo import ppo_loss

__all__ = [
    "a2c_loss",
    "consistency_loss",
    "ema_update",
    "imitation_loss",
    "inverse_dynamics_loss",
    "od_mask_one_of_pair",
    "bc_loss",
    "cem_elite_mask",
    "cem_loss",
    "cem_top_m_mask",
    "dqn_loss",
    "gae",
    "periodic_update",
    "polyak_update",
    "ppo_loss",
]
