"""Checkpointer: round trips, retention, config guard, structure guard."""

import dataclasses
import json
import os

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jgtest.checkpoint import CONFIG_FILENAME, Checkpointer, config_fingerprint, config_from_dict


@dataclasses.dataclass(frozen=True)
class _Inner:
    sizes: tuple = (64, 64)
    activation: str = "tanh"


@dataclasses.dataclass(frozen=True)
class _Config:
    lr: float = 3e-4
    num_envs: int = 4
    inner: _Inner = _Inner()


def _state(seed=0):
    model = nn.Dense(3)
    params = model.init(jax.random.key(seed), jnp.ones((1, 4)))
    tx = optax.adam(1e-3)
    return {
        "params": params,
        "opt_state": tx.init(params),  # NamedTuples, an int32 count
        "key": jax.random.split(jax.random.key(seed + 1), 4),  # typed threefry keys
        "rbg_key": jax.random.key(seed + 2, impl="rbg"),
        "raw_key": jax.random.PRNGKey(seed + 3),  # legacy uint32 key
        "counts": jnp.arange(5, dtype=jnp.int32) + seed,
        "mask": jnp.array([True, False, True]),
        "host": {"returns": np.linspace(0.0, 1.0, 3, dtype=np.float32) + seed},
        "step": seed,
        "epsilon": 0.5 + seed,
    }


def _assert_same(a, b):
    leaves_a, tree_a = jax.tree_util.tree_flatten(a)
    leaves_b, tree_b = jax.tree_util.tree_flatten(b)
    assert tree_a == tree_b
    for x, y in zip(leaves_a, leaves_b):
        assert type(x) is type(y), (type(x), type(y))
        if jnp.issubdtype(getattr(x, "dtype", np.float32), jax.dtypes.prng_key):
            assert jax.random.key_impl(x) == jax.random.key_impl(y)
            x, y = jax.random.key_data(x), jax.random.key_data(y)
        if hasattr(x, "dtype"):
            assert x.dtype == y.dtype
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_config_fingerprint_is_stable_and_value_based():
    fp = config_fingerprint(_Config())
    assert len(fp) == 64 and fp == config_fingerprint(_Config())
    as_dict = {"inner": {"activation": "tanh", "sizes": [64, 64]}, "num_envs": 4, "lr": 3e-4}
    assert config_fingerprint(as_dict) == fp  # asdict, sorted keys, tuples as lists
    assert config_fingerprint(_Config(lr=1e-3)) != fp
    assert config_fingerprint(_Config(inner=_Inner(sizes=(64, 32)))) != fp
    with pytest.raises(TypeError, match="cannot fingerprint"):
        config_fingerprint({"fn": lambda x: x})


def test_round_trip_restores_values_types_and_keys(tmp_path):
    ckpt = Checkpointer(tmp_path / "ckpt", config_fingerprint(_Config()))
    state = _state(seed=1)
    ckpt.save(10, state)
    assert ckpt.latest_step() == 10
    restored = ckpt.restore(_state(seed=0))
    _assert_same(restored, state)
    # restored keys are usable keys of the same implementation
    assert jax.random.key_impl(restored["rbg_key"]) == "rbg"
    np.testing.assert_array_equal(
        jax.random.key_data(jax.random.split(restored["key"][0])),
        jax.random.key_data(jax.random.split(state["key"][0])),
    )
    # an abstract target (jax.eval_shape) works too and gives jax arrays and keys
    abstract = jax.eval_shape(lambda: _state(seed=0))
    restored = ckpt.restore(abstract)
    assert isinstance(restored["host"]["returns"], jax.Array) and isinstance(restored["step"], jax.Array)
    _assert_same(restored["params"], state["params"])
    _assert_same(restored["rbg_key"], state["rbg_key"])
    np.testing.assert_array_equal(restored["host"]["returns"], state["host"]["returns"])
    ckpt.close()
    # a resumed run (a fresh Checkpointer on the same directory) gets the same state
    with Checkpointer(tmp_path / "ckpt", config_fingerprint(_Config())) as fresh:
        _assert_same(fresh.restore(_state(seed=0)), state)


def test_latest_step_and_retention(tmp_path):
    ckpt = Checkpointer(tmp_path, "fp", max_to_keep=2)
    assert ckpt.latest_step() is None
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        ckpt.restore({"x": jnp.zeros(2)})
    for step in (1, 2, 5, 7):
        ckpt.save(step, {"x": jnp.full(2, float(step))})
    assert ckpt.latest_step() == 7
    assert ckpt.all_steps() == [5, 7]
    np.testing.assert_array_equal(ckpt.restore({"x": jnp.zeros(2)})["x"], [7.0, 7.0])
    np.testing.assert_array_equal(ckpt.restore({"x": jnp.zeros(2)}, step=5)["x"], [5.0, 5.0])
    with pytest.raises(FileNotFoundError, match="step 1"):
        ckpt.restore({"x": jnp.zeros(2)}, step=1)
    with pytest.raises(ValueError, match="not after the latest"):
        ckpt.save(7, {"x": jnp.zeros(2)})
    ckpt.close()
    # a new Checkpointer (a resumed run) sees the same steps and restores them
    again = Checkpointer(tmp_path, "fp", max_to_keep=2)
    assert again.latest_step() == 7
    np.testing.assert_array_equal(again.restore({"x": jnp.zeros(2)})["x"], [7.0, 7.0])
    with pytest.raises(ValueError, match="does not match state_like"):
        again.restore({"y": jnp.zeros(2)})
    again.save(8, {"x": jnp.full(2, 8.0)})
    assert again.all_steps() == [7, 8]
    again.close()


def test_different_config_is_refused(tmp_path):
    with Checkpointer(tmp_path, config_fingerprint(_Config())) as ckpt:
        ckpt.save(1, {"x": jnp.ones(3)})
    stored = json.loads((tmp_path / CONFIG_FILENAME).read_text())
    assert stored["config_fingerprint"] == config_fingerprint(_Config())
    other = config_fingerprint(_Config(lr=1.0))
    with pytest.raises(ValueError, match=f"checkpoint at {tmp_path} was written for a different config"):
        Checkpointer(tmp_path, other)
    # the file is checked again at restore time
    ckpt = Checkpointer(tmp_path, config_fingerprint(_Config()))
    (tmp_path / CONFIG_FILENAME).write_text(json.dumps({"config_fingerprint": other}))
    with pytest.raises(ValueError, match="different config"):
        ckpt.restore({"x": jnp.zeros(3)})
    ckpt.close()


def test_checkpoints_without_fingerprint_file_are_refused(tmp_path):
    with Checkpointer(tmp_path, "fp") as ckpt:
        ckpt.save(1, {"x": jnp.ones(3)})
    os.remove(tmp_path / CONFIG_FILENAME)
    with pytest.raises(ValueError, match=f"no {CONFIG_FILENAME}"):
        Checkpointer(tmp_path, "fp")


def test_mismatched_structure_is_a_clear_error(tmp_path):
    ckpt = Checkpointer(tmp_path, "fp")
    ckpt.save(3, {"a": jnp.zeros((2, 3)), "b": {"c": jnp.zeros(4)}, "k": jax.random.key(0)})
    with pytest.raises(ValueError, match=r"not in the checkpoint: b\.d") as info:
        ckpt.restore({"a": jnp.zeros((2, 3)), "b": {"d": jnp.zeros(4)}, "k": jax.random.key(0)})
    assert "in the checkpoint but not in state_like: b.c" in str(info.value)
    with pytest.raises(ValueError, match=r"a: shape \(2, 3\) in the checkpoint, \(3, 2\) in state_like"):
        ckpt.restore({"a": jnp.zeros((3, 2)), "b": {"c": jnp.zeros(4)}, "k": jax.random.key(0)})
    with pytest.raises(ValueError, match="k: a PRNG key .threefry2x32. in the checkpoint"):
        ckpt.restore({"a": jnp.zeros((2, 3)), "b": {"c": jnp.zeros(4)}, "k": jax.random.key_data(jax.random.key(0))})
    # a different dtype in state_like is a cast, not an error
    restored = ckpt.restore({"a": jnp.zeros((2, 3), jnp.int32), "b": {"c": jnp.zeros(4)}, "k": jax.random.key(1)})
    assert restored["a"].dtype == jnp.int32
    with pytest.raises(TypeError, match="not an array"):
        ckpt.save(4, {"name": "text"})
    ckpt.close()


def test_a_config_comes_back_from_its_json_with_the_same_fingerprint():
    from jgtest.methods.park.inspector import InspectorConfig
    from jgtest.methods.park.models import PPGTAModelsConfig
    from jgtest.methods.park.ppgta import PPGTAConfig
    from jgtest.report.records import jsonable

    for config in (InspectorConfig(episodes=10, seed=3), PPGTAConfig(detector="learned", models=PPGTAModelsConfig.quick(size=64))):
        saved = json.loads(json.dumps({"method": "x", **jsonable(dataclasses.asdict(config))}))  # a run's config.json
        back = config_from_dict(type(config), saved)
        assert back == config and config_fingerprint(back) == config_fingerprint(config)
        assert isinstance(back.hparams, type(config.hparams)) and isinstance(back.rnd.channels, tuple)
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        config_from_dict(InspectorConfig, {"rnd": {"colour": 3}})
