"""PPGTA's losses, hand-checked: masked inverse dynamics, EMA teacher, consistency (Eq. 4)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jgtest.losses.ppgta import (
    consistency_loss,
    ema_update,
    imitation_loss,
    inverse_dynamics_loss,
    od_mask_one_of_pair,
)


def test_one_frame_of_each_pair_is_masked():
    red = jnp.zeros((64, 8, 8, 3), jnp.uint8).at[..., 0].set(200)
    boxes = jnp.tile(jnp.array([0, 0, 2, 2]), (64, 1))
    a, b = od_mask_one_of_pair(jax.random.key(0), red, red, boxes)
    grey = lambda f: np.asarray(f[:, 5, 5, 0] == f[:, 5, 5, 1])  # outside the box: grey iff masked
    masked_a, masked_b = grey(a), grey(b)
    assert np.all(masked_a ^ masked_b)  # exactly one of the two
    assert 16 < masked_a.sum() < 48  # a fair coin per pair
    # the box keeps its colour
    assert np.all(np.asarray(a[:, 0, 0, 0]) == 200) and np.all(np.asarray(b[:, 0, 0, 0]) == 200)


def test_inverse_dynamics_loss_is_the_cross_entropy_of_the_action():
    logits = jnp.array([[2.0, 0.0, -1.0], [0.0, 1.0, 0.0]])
    apply_fn = lambda params, f_tm1, f_t: logits * params
    frames = jnp.zeros((2, 4, 4, 3), jnp.uint8)
    loss, metrics = inverse_dynamics_loss(
        apply_fn,
        1.0,
        frames,
        frames,
        jnp.array([0, 2]),
        jnp.zeros((2, 4), jnp.int32),
        jax.random.key(0),
    )
    by_hand = -0.5 * (np.log(np.exp(2) / (np.exp(2) + 1 + np.exp(-1))) + np.log(1 / (2 + np.e)))
    np.testing.assert_allclose(float(loss), by_hand, rtol=1e-6)
    assert float(metrics["accuracy"]) == 0.5


def test_ema_update():
    teacher, student = {"w": jnp.array([1.0, 2.0])}, {"w": jnp.array([3.0, 6.0])}
    # 0.75·t + 0.25·s
    np.testing.assert_allclose(ema_update(teacher, student, 0.75)["w"], [1.5, 3.0])
    np.testing.assert_allclose(ema_update(teacher, student, 1.0)["w"], teacher["w"])
    with pytest.raises(ValueError, match="decay must be in"):
        ema_update(teacher, student, 1.5)


def test_consistency_loss_hand_checked_and_no_gradient_through_the_teacher():
    h_s, h_t = jnp.array([[0.2, -0.1, 0.0]]), jnp.array([[0.1, 0.0, -0.1]])
    loss, _ = consistency_loss(h_s, h_t, student_temp=1.0, teacher_temp=1.0)
    p_t = np.exp([0.1, 0.0, -0.1]) / np.exp([0.1, 0.0, -0.1]).sum()
    log_s = np.array([0.2, -0.1, 0.0]) - np.log(np.exp([0.2, -0.1, 0.0]).sum())
    np.testing.assert_allclose(float(loss), -(p_t * log_s).sum(), rtol=1e-6)
    grad_teacher = jax.grad(lambda t: consistency_loss(h_s, t)[0])(h_t)
    np.testing.assert_array_equal(grad_teacher, 0.0)
    # the student is pulled toward the teacher: the gradient points away from it
    grad_student = jax.grad(lambda s: consistency_loss(s, h_t, 1.0, 1.0)[0])(h_s)
    np.testing.assert_allclose(grad_student[0], np.exp(log_s) - p_t, rtol=1e-5)


def test_imitation_loss_adds_lambda_times_consistency_and_refuses_negative_lambda():
    logits, a = jnp.array([[1.0, 0.0], [0.0, 1.0]]), jnp.array([0, 0])
    h_s, h_t = jnp.ones((2, 4)), jnp.zeros((2, 4))
    loss, m = imitation_loss(logits, a, h_s, h_t, lam=0.5)
    np.testing.assert_allclose(
        float(loss), float(m["cross_entropy"] + 0.5 * m["consistency"]), rtol=1e-6
    )
    with pytest.raises(ValueError, match="λ must be non-negative"):
        imitation_loss(logits, a, h_s, h_t, lam=-0.1)
