"""Losses (SPEC §2): pure, jittable functions on one stream, batched by ``jax.vmap``.

* :func:`gae` — generalised advantage estimation, terminated ≠ truncated;
* :func:`ppo_loss` — PPO-Clip with value clipping and entropy bonus;
* :func:`a2c_loss` — advantage actor-critic (Wuji's fine-tuning);
* :func:`dqn_loss` — DQN / double DQN with Huber loss; :func:`polyak_update`,
  :func:`periodic_update` for the target network (RELINE's Pac-Man and kart agents);
* :func:`cem_elite_mask`, :func:`cem_top_m_mask`, :func:`cem_loss` — cross-entropy method (RELINE's CartPole agent);
* :func:`bc_loss` — behaviour cloning;
* :func:`inverse_dynamics_loss`, :func:`ema_update`, :func:`consistency_loss`, :func:`imitation_loss` —
  PPGTA's masked inverse dynamics (Eq. 3) and EMA-teacher imitation (Eq. 4).

Names follow rlax: ``_tm1`` / ``_t`` / ``_tp1`` mark time. Each returns
``(loss, metrics)`` (except :func:`gae`, :func:`cem_elite_mask` and the target
updates), ready for ``jax.value_and_grad(..., has_aux=True)``.
"""

from jgtest.losses.a2c import a2c_loss
from jgtest.losses.cem import cem_elite_mask, cem_loss, cem_top_m_mask
from jgtest.losses.dqn import dqn_loss, periodic_update, polyak_update
from jgtest.losses.gae import gae
from jgtest.losses.imitation import bc_loss
from jgtest.losses.ppgta import consistency_loss, ema_update, imitation_loss, inverse_dynamics_loss, od_mask_one_of_pair
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
