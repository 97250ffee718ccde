"""PPGTA's preference reward, α schedule and Jensen–Shannon judge, hand-checked."""

import jax.numpy as jnp
import numpy as np
import pytest
from scipy.spatial.distance import jensenshannon

from jgtest.novelty.preference import (
    AlphaSchedule,
    action_distribution,
    adapt_alpha,
    combined_reward,
    js_divergence,
    preference_reward,
    trajectory_preference_reward,
)


def test_alpha_schedule_on_a_scripted_novelty_sequence():
    # r^e: falls fast 4 times (alpha 0.8 → 0.75 → 0.7 → 0.65 → 0.6), a small dip (unchanged), falls
    # twice more (→ 0.55 → 0.5), once more (floor 0.5), then rises twice (→ 0.6 → 0.7), flat
    # (unchanged), rises (→ 0.8), rises (cap).
    r_e = [2.0, 1.8, 1.6, 1.4, 1.2, 1.15, 1.0, 0.8, 0.6, 0.7, 0.9, 0.9, 1.0, 1.2]
    alpha, seen = AlphaSchedule().start, []
    for prev, now in zip(r_e, r_e[1:]):
        alpha = float(adapt_alpha(alpha, now, prev))
        seen.append(round(alpha, 4))
    assert seen == [0.75, 0.7, 0.65, 0.6, 0.6, 0.55, 0.5, 0.5, 0.6, 0.7, 0.7, 0.8, 0.8]


def test_alpha_bounds_are_checked():
    with pytest.raises(ValueError, match="low <= high"):
        AlphaSchedule(low=0.8, high=0.5)
    with pytest.raises(ValueError, match="must start within"):
        AlphaSchedule(start=0.9)


def test_preference_reward_is_minus_kl_and_the_mix():
    logits_e, logits_p = (
        jnp.log(jnp.array([0.5, 0.25, 0.25])),
        jnp.log(jnp.array([0.25, 0.5, 0.25])),
    )
    kl = 0.5 * np.log(2) + 0.25 * np.log(0.5)
    np.testing.assert_allclose(float(preference_reward(logits_e, logits_p)), -kl, rtol=1e-6)
    assert float(preference_reward(logits_e, logits_e)) == pytest.approx(0.0, abs=1e-7)
    assert float(combined_reward(-1.0, 3.0, 0.75)) == pytest.approx(0.0)


def test_the_trajectory_preference_reward_sums_the_counted_steps_kls():
    # two games over four steps; game 1's second step is a test's (not counted); game 0 began with
    # 0.5 already
    step_kl = jnp.array([[0.1, 0.2], [0.3, 0.4], [0.0, 0.1], [0.2, 0.0]])
    counted = jnp.array([[True, True], [True, False], [True, True], [True, True]])
    r_p, after = trajectory_preference_reward(step_kl, counted, jnp.array([0.5, 0.0]))
    np.testing.assert_allclose(
        r_p, -np.array([[0.6, 0.2], [0.9, 0.2], [0.9, 0.3], [1.1, 0.3]]), rtol=1e-6
    )
    np.testing.assert_allclose(after, [1.1, 0.3], rtol=1e-6)
    # the sum of per-step KLs is the KL of the two policies' joint action distributions (chain
    # rule): two steps, independent here
    p1, q1, p2, q2 = (
        np.array([0.7, 0.3]),
        np.array([0.4, 0.6]),
        np.array([0.2, 0.8]),
        np.array([0.5, 0.5]),
    )
    joint_kl = np.sum(np.outer(p1, p2) * np.log(np.outer(p1, p2) / np.outer(q1, q2)))
    kls = -preference_reward(jnp.log(jnp.array([p1, p2])), jnp.log(jnp.array([q1, q2])))
    r_p, _ = trajectory_preference_reward(kls, jnp.array([True, True]), jnp.float32(0.0))
    np.testing.assert_allclose(float(r_p[-1]), -joint_kl, rtol=1e-5)


@pytest.mark.parametrize("base", [2.0, np.e])
def test_js_divergence_is_scipys_jensenshannon_squared(base):
    rng = np.random.default_rng(0)
    for _ in range(5):
        p, q = rng.random(9), rng.random(9)
        p[rng.integers(9)] = 0.0  # zeros are allowed
        np.testing.assert_allclose(
            float(js_divergence(jnp.asarray(p), jnp.asarray(q), base)),
            jensenshannon(p, q, base) ** 2,
            rtol=1e-5,
        )
    assert float(js_divergence(jnp.array([1.0, 0.0]), jnp.array([0.0, 1.0]))) == pytest.approx(1.0)


def test_action_distribution():
    np.testing.assert_allclose(
        action_distribution(jnp.array([0, 2, 2, 1]), 4, jnp.array([1, 1, 1, 0])),
        [1 / 3, 0, 2 / 3, 0],
    )
