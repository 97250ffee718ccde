"""PPGTA's losses (Abdelfattah, Brown & Zhang, §IV-A, §IV-B): masked inverse dynamics (Eq. 3), the
EMA teacher (after DINO), and Eq. 4: ``CE(a_t, f^s(h^c_t)) − λ·ĥ^c_t·log h^c_t``, no gradient
through the teacher.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp

from jgtest.frames import od_mask
from jgtest.losses.imitation import bc_loss


def od_mask_one_of_pair(
    key: jax.Array, frames_tm1: jax.Array, frames_t: jax.Array, boxes: jax.Array, masked=None
):
    """``(frames_tm1, frames_t)`` ``[B, ...]`` with, in each pair, one of the two frames (a fair
    coin per pair) OD-masked around its pair's box ``boxes [B, 4]`` (:func:`jgtest.frames.od_mask`):
    "we randomly augment one of the two adjacent frames ... using our OD mask" (§IV-A).

    ``masked``: both frames already masked, ``(masked_tm1, masked_t)``, or what a frozen encoder
    makes of them, with ``frames_tm1`` and ``frames_t`` its features of the unmasked frames (the
    coin picks among the four the same way).
    """
    first = jax.random.bernoulli(key, 0.5, (frames_tm1.shape[0],))
    if masked is None:
        masked = jax.vmap(od_mask)(frames_tm1, boxes), jax.vmap(od_mask)(frames_t, boxes)
    masked_tm1, masked_t = masked
    pick = lambda cond, a, b: jnp.where(cond.reshape(-1, *[1] * (a.ndim - 1)), a, b)
    return pick(first, masked_tm1, frames_tm1), pick(first, frames_t, masked_t)


def inverse_dynamics_loss(
    apply_fn: Callable, params, frames_tm1, frames_t, a_t, boxes, key, mask_t=None, masked=None
):
    """Eq. 3: cross-entropy of ``a_t`` under ``apply_fn(params, s_{t−1}, s_t) -> logits [B, A]``,
    one frame of each pair OD-masked at random (:func:`od_mask_one_of_pair`, ``masked`` as there).

    Returns:
      ``(loss, {"accuracy"})`` (:func:`jgtest.losses.bc_loss` on the encoder's logits).
    """
    f_tm1, f_t = od_mask_one_of_pair(key, frames_tm1, frames_t, boxes, masked)
    return bc_loss(apply_fn(params, f_tm1, f_t), a_t, mask_t)


def ema_update(teacher, student, decay: float):
    """``decay · teacher + (1 − decay) · student``, leaf by leaf (DINO's teacher momentum, e.g.
    0.996).

    Raises:
      ValueError: ``decay`` outside ``[0, 1]`` (a concrete value).
    """
    if not isinstance(decay, jax.core.Tracer) and not 0.0 <= float(decay) <= 1.0:
        raise ValueError(f"the EMA decay must be in [0, 1], got {decay}")
    return jax.tree.map(lambda t, s: decay * t + (1.0 - decay) * s, teacher, student)


def consistency_loss(
    h_student: jax.Array,
    h_teacher: jax.Array,
    student_temp: float = 0.1,
    teacher_temp: float = 0.04,
):
    """``−Σ_k ĥ_k · log h_k``, averaged over the leading dims: the teacher's state
    ``h_teacher [..., D]`` as a distribution ``ĥ = softmax(h_teacher / teacher_temp)`` (no
    gradient), the student's as log-probabilities ``log h = log_softmax(h_student / student_temp)``
    — Eq. 4's second term, with DINO's temperatures (0.1 student, 0.04 teacher; DINO's centring is
    left out).

    Returns:
      ``(loss, {"teacher_entropy"})``.
    """
    target = jax.lax.stop_gradient(jax.nn.softmax(h_teacher / teacher_temp, axis=-1))
    log_student = jax.nn.log_softmax(h_student / student_temp, axis=-1)
    loss = -jnp.mean(jnp.sum(target * log_student, axis=-1))
    entropy = -jnp.mean(jnp.sum(target * jnp.log(jnp.clip(target, 1e-12)), axis=-1))
    return loss, {"teacher_entropy": entropy}


def imitation_loss(
    logits_t,
    a_t,
    h_student,
    h_teacher,
    lam: float,
    mask_t=None,
    student_temp=0.1,
    teacher_temp=0.04,
):
    """Eq. 4: ``CE(a_t, logits_t) + λ · consistency_loss(h_student, h_teacher)`` (the paper's
    ``−λ·ĥ·log h`` term), per step ``logits_t [T, A]``, states ``[T, D]``.

    Raises:
      ValueError: ``λ < 0`` (a concrete value).
    """
    if not isinstance(lam, jax.core.Tracer) and float(lam) < 0:
        raise ValueError(f"the consistency weight λ must be non-negative, got {lam}")
    ce, metrics = bc_loss(logits_t, a_t, mask_t)
    consistency, extra = consistency_loss(h_student, h_teacher, student_temp, teacher_temp)
    return ce + lam * consistency, {
        **metrics,
        **extra,
        "cross_entropy": ce,
        "consistency": consistency,
    }
