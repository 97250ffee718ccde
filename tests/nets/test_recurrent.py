"""PPGTA's recurrent imitation policy: shapes, the global memory, dropout only when training."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jgtest.nets.recurrent import ImitationPolicy


@pytest.fixture(scope="module")
def policy():
    net = ImitationPolicy(
        num_actions=9, local_hidden=8, global_hidden=16, mlp=(32, 16), cnn_dense=32
    )
    frames = jax.random.randint(jax.random.key(0), (3, 4, 64, 64, 3), 0, 256).astype(jnp.uint8)
    # compiled: eager convolutions dispatch op by op
    params = jax.jit(net.init)(jax.random.key(1), frames, net.initial_carry(3))
    return _Jitted(net), params, frames


class _Jitted:
    """The policy with its ``apply`` compiled (once per argument structure), ``initial_carry`` as it
    is."""

    def __init__(self, net):
        self.initial_carry = net.initial_carry
        self.apply = jax.jit(net.apply, static_argnames="train")


def test_shapes_and_the_concatenated_state(policy):
    net, params, frames = policy
    logits, h_c, carry = net.apply(params, frames, net.initial_carry(3))
    assert logits.shape == (3, 9) and h_c.shape == (3, 2 * 8 + 16) and carry.shape == (3, 16)
    np.testing.assert_array_equal(h_c[:, -16:], carry)  # h^c = [h^l (both directions), h^g]


def test_both_directions_of_the_local_state_read_the_whole_window(policy):
    net, params, frames = policy
    _, h_c, _ = net.apply(params, frames, net.initial_carry(3))
    _, oldest_changed, _ = net.apply(
        params, frames.at[:, 0].set(255 - frames[:, 0]), net.initial_carry(3)
    )
    forward, backward, global_ = slice(0, 8), slice(8, 16), slice(16, None)
    assert not np.allclose(h_c[:, forward], oldest_changed[:, forward]) and not np.allclose(
        h_c[:, backward], oldest_changed[:, backward]
    )
    # the global GRU reads frame t only
    np.testing.assert_array_equal(h_c[:, global_], oldest_changed[:, global_])


def test_the_global_memory_carries_the_past(policy):
    net, params, frames = policy
    _, _, carry = net.apply(params, frames, net.initial_carry(3))
    fresh, _, _ = net.apply(params, frames, net.initial_carry(3))
    remembered, _, _ = net.apply(params, frames, carry)
    # same frames, another past: another action distribution
    assert not np.allclose(fresh, remembered)


def test_dropout_acts_only_when_training(policy):
    net, params, frames = policy
    a, _, _ = net.apply(params, frames, net.initial_carry(3))
    b, _, _ = net.apply(params, frames, net.initial_carry(3))
    np.testing.assert_array_equal(a, b)
    c, _, _ = net.apply(
        params, frames, net.initial_carry(3), train=True, rngs={"dropout": jax.random.key(2)}
    )
    assert not np.allclose(a, c)


def test_bad_frames_are_refused(policy):
    net, params, frames = policy
    with pytest.raises(ValueError, match=r"frames \[B, K, H, W, C\]"):
        net.apply(params, frames[:, 0], net.initial_carry(3))
