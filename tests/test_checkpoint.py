"""Checkpointer: round trips, retention, config guard, structure guard."""

import dataclasses
import json
import os
import warnings
from pathlib import Path

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jgtest.checkpoint import (
    CONFIG_FILENAME,
    Checkpointer,
    check_fingerprint,
    config_fingerprint,
    config_from_dict,
    strongly_typed,
)
from jgtest.errors import BadFile, ResumeRefused


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


def test_a_restored_state_calls_a_jitted_step_as_the_fresh_one_did(tmp_path):
    """Restored leaves are placed (uncommitted) and typed as a strongly typed fresh state: a resumed
    run reuses the compiled step."""
    fresh = strongly_typed(
        {
            "time": jnp.zeros(3, jnp.int32) + 0 * jnp.asarray(0),
            "count": jnp.asarray(0),
            "key": jax.random.key(0),
        }
    )
    assert not fresh["count"].weak_type and not fresh["count"].committed
    step = jax.jit(lambda s: {**s, "time": s["time"] + 1, "count": s["count"] + 1})
    step(fresh)
    ckpt = Checkpointer(tmp_path / "ckpt", config_fingerprint(_Config()))
    ckpt.save(1, fresh)
    restored = ckpt.restore(fresh)
    assert not any(x.committed for x in jax.tree.leaves(restored))
    step(restored)
    assert step._cache_size() == 1  # not compiled again


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
    assert isinstance(restored["host"]["returns"], jax.Array) and isinstance(
        restored["step"], jax.Array
    )
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
    with pytest.raises(
        ValueError, match=f"checkpoint at {tmp_path} was written for a different config"
    ):
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
    with pytest.raises(
        ValueError, match=r"a: shape \(2, 3\) in the checkpoint, \(3, 2\) in state_like"
    ):
        ckpt.restore({"a": jnp.zeros((3, 2)), "b": {"c": jnp.zeros(4)}, "k": jax.random.key(0)})
    with pytest.raises(ValueError, match="k: a PRNG key .threefry2x32. in the checkpoint"):
        ckpt.restore(
            {
                "a": jnp.zeros((2, 3)),
                "b": {"c": jnp.zeros(4)},
                "k": jax.random.key_data(jax.random.key(0)),
            }
        )
    # a different dtype in state_like is a cast, not an error
    restored = ckpt.restore(
        {"a": jnp.zeros((2, 3), jnp.int32), "b": {"c": jnp.zeros(4)}, "k": jax.random.key(1)}
    )
    assert restored["a"].dtype == jnp.int32
    with pytest.raises(TypeError, match="not an array"):
        ckpt.save(4, {"name": "text"})
    ckpt.close()


def test_a_config_comes_back_from_its_json_with_the_same_fingerprint():
    from jgtest.files import jsonable
    from jgtest.methods.park.inspector import InspectorConfig
    from jgtest.methods.park.models import PPGTAModelsConfig
    from jgtest.methods.park.ppgta import PPGTAConfig

    for config in (
        InspectorConfig(episodes=10, seed=3),
        PPGTAConfig(detector="learned", models=PPGTAModelsConfig.quick(size=64)),
    ):
        # a run's config.json
        saved = json.loads(json.dumps({"method": "x", **jsonable(dataclasses.asdict(config))}))
        back = config_from_dict(type(config), saved)
        assert back == config and config_fingerprint(back) == config_fingerprint(config)
        assert isinstance(back.hparams, type(config.hparams)) and isinstance(
            back.rnd.channels, tuple
        )
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        config_from_dict(InspectorConfig, {"rnd": {"colour": 3}})


def _snapshot(root):
    """Every path under ``root`` with its kind, mtime and (for files) bytes."""
    root = Path(root)
    out = {}
    for path in sorted([root, *root.rglob("*")]):
        st = path.lstat()
        out[str(path.relative_to(root))] = (
            st.st_mode,
            st.st_mtime_ns,
            path.read_bytes() if path.is_file() else None,
        )
    return out


def test_check_fingerprint_refuses_without_touching_the_directory(tmp_path):
    fp, other = config_fingerprint(_Config()), config_fingerprint(_Config(lr=1.0))
    check_fingerprint(tmp_path / "missing", fp)  # nothing to check; nothing created
    assert not (tmp_path / "missing").exists()
    (tmp_path / "empty").mkdir()
    check_fingerprint(tmp_path / "empty", fp)
    assert list((tmp_path / "empty").iterdir()) == []
    ckpt_dir = tmp_path / "ckpt"
    with Checkpointer(ckpt_dir, fp) as ckpt:
        ckpt.save(1, {"x": jnp.ones(3)})
        ckpt.save(2, {"x": jnp.ones(3)})
    check_fingerprint(ckpt_dir, fp)  # the same config: no error
    before = _snapshot(ckpt_dir)
    with pytest.raises(ResumeRefused, match="was written for a different config") as info:
        check_fingerprint(ckpt_dir, other)
    assert (
        isinstance(info.value, ValueError)
        and "\n" not in str(info.value)
        and "use another directory" in str(info.value)
    )
    assert _snapshot(ckpt_dir) == before
    # the Checkpointer refuses before writing, too
    with pytest.raises(ResumeRefused, match="different config"):
        Checkpointer(ckpt_dir, other)
    assert _snapshot(ckpt_dir) == before
    # an unreadable fingerprint file, one of another format, steps and no fingerprint file
    config = ckpt_dir / CONFIG_FILENAME
    for text, message in [
        ("{not json", "cannot read"),
        ("[1, 2]", "cannot read"),
        (json.dumps({"config_fingerprint": fp, "format": 1}), "has format 1"),
    ]:
        config.write_text(text)
        before = _snapshot(ckpt_dir)
        with pytest.raises(ResumeRefused, match=message) as info:
            check_fingerprint(ckpt_dir, fp)
        assert "\n" not in str(info.value)
        with pytest.raises(ResumeRefused, match=message):
            Checkpointer(ckpt_dir, fp)
        assert _snapshot(ckpt_dir) == before
    config.unlink()
    before = _snapshot(ckpt_dir)
    with pytest.raises(
        ResumeRefused, match=rf"holds checkpoints \(steps \[1, 2\]\) but no {CONFIG_FILENAME}"
    ):
        check_fingerprint(ckpt_dir, fp)
    assert _snapshot(ckpt_dir) == before


def _three_steps(directory):
    """Steps 1, 2, 3 of a small state (``m``: an array large enough for a data file of its own)."""
    ckpt = Checkpointer(directory, "fp", max_to_keep=3)
    for step in (1, 2, 3):
        ckpt.save(step, _small(step))
    return ckpt


def _small(step):
    return {
        "x": jnp.full(4, float(step)),
        "m": jnp.arange(1000.0) + step,
        "key": jax.random.key(step),
        "step": step,
    }


def _data_file(step_dir):
    """The largest of the step's tensorstore data files: the one holding ``m``'s chunk."""
    files = [p for p in Path(step_dir).rglob("*") if p.is_file() and p.parent.name == "d"]
    assert files, sorted(Path(step_dir).rglob("*"))
    return max(files, key=lambda p: p.stat().st_size)


def _damage(path):
    path.write_bytes(bytes(range(7, 256)) * (path.stat().st_size // 249 + 1))


@pytest.mark.parametrize("what", ["data", "metadata", "truncated metadata"])
def test_a_damaged_latest_step_falls_back_to_the_previous_one(tmp_path, what):
    ckpt = _three_steps(tmp_path)
    if what == "data":
        _damage(_data_file(tmp_path / "3"))
    else:
        metadata = tmp_path / "3" / "default" / "_METADATA"
        assert metadata.is_file()
        if what == "metadata":
            _damage(metadata)
        else:
            metadata.write_bytes(metadata.read_bytes()[:20])
    with pytest.warns(UserWarning) as record:
        step, restored = ckpt.restore_latest(_small(0))
    assert step == 2
    _assert_same(restored, _small(2))
    (warning,) = [w for w in record if "cannot be restored" in str(w.message)]
    message = str(warning.message)
    assert (
        "step 3 cannot be restored" in message
        and str(tmp_path) in message
        and "restored step 2" in message
    )
    assert f"moved it aside to {tmp_path / 'damaged-3'}" in message and "\n" not in message
    # the damaged step is kept for inspection, no longer a step: the run saves step 3 again
    assert (tmp_path / "damaged-3").is_dir() and not (tmp_path / "3").exists()
    assert ckpt.all_steps() == [1, 2]
    ckpt.save(3, _small(33))
    assert ckpt.all_steps() == [1, 2, 3]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _assert_same(ckpt.restore(_small(0)), _small(33))
    ckpt.close()
    with Checkpointer(tmp_path, "fp", max_to_keep=3) as again:  # a fresh manager ignores damaged-3
        assert again.all_steps() == [1, 2, 3]
        assert again.restore_latest(_small(0))[0] == 3


def test_restore_without_a_step_falls_back_too(tmp_path):
    ckpt = _three_steps(tmp_path)
    _damage(_data_file(tmp_path / "3"))
    _damage(tmp_path / "2" / "default" / "_METADATA")
    with pytest.warns(UserWarning) as record:
        _assert_same(ckpt.restore(_small(0)), _small(1))
    messages = [str(w.message) for w in record]
    assert any("step 3 cannot be restored" in m for m in messages) and any(
        "step 2 cannot be restored" in m for m in messages
    )
    # the caller's line
    assert all(w.filename == __file__ for w in record if "cannot be restored" in str(w.message))
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("damaged")) == [
        "damaged-2",
        "damaged-3",
    ]
    ckpt.save(2, _small(2))
    assert ckpt.all_steps() == [1, 2]
    ckpt.close()


def test_a_mismatched_structure_is_raised_not_skipped(tmp_path):
    ckpt = _three_steps(tmp_path)
    before = _snapshot(tmp_path)
    with pytest.raises(ValueError, match="step 3, does not match state_like"):
        ckpt.restore_latest({**_small(0), "extra": jnp.zeros(2)})
    assert _snapshot(tmp_path) == before
    ckpt.close()


def test_every_step_damaged_is_a_clear_error(tmp_path):
    ckpt = _three_steps(tmp_path)
    _damage(_data_file(tmp_path / "3"))
    _damage(tmp_path / "2" / "default" / "_METADATA")
    (tmp_path / "1" / "default" / "_METADATA").write_bytes(b"")
    before = _snapshot(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(
            BadFile, match=r"no kept step can be restored \(tried steps \[3, 2, 1\]"
        ) as info:
            ckpt.restore_latest(_small(0))
    assert str(tmp_path) in str(info.value) and "\n" not in str(info.value)
    assert _snapshot(tmp_path) == before  # nothing moved when nothing could be restored
    # an explicit damaged step is a BadFile as well, with no fallback
    with pytest.raises(BadFile, match="cannot restore step 2"):
        ckpt.restore(_small(0), step=2)
    ckpt.close()


def test_a_training_run_resumes_from_the_step_before_a_damaged_one_to_the_uninterrupted_result(
    tmp_path,
):
    """:func:`jgtest.agents.runner.run_training` continues from the step actually restored, and a
    resumed run ends as an uninterrupted one (its state, curves and metrics: one resume test for
    both); the run's directory refuses a run of another config."""
    from jgtest.agents.ppo import PPOConfig
    from jgtest.agents.runner import run_training

    # 2 games × 16 steps × 4 periods on CartPoleBugs-v0, 2 seeds
    tiny, seeds = (
        PPOConfig(
            num_envs=2,
            num_steps=16,
            total_timesteps=2 * 16 * 4,
            num_evals=4,
            eval_episodes=2,
            num_minibatches=2,
            update_epochs=1,
        ),
        2,
    )

    whole = run_training("ppo", tiny, tmp_path / "whole", num_seeds=seeds)
    # "killed" after 3 periods: steps 2 and 3 kept
    first = run_training("ppo", tiny, tmp_path / "cut", num_seeds=seeds, max_periods=3)
    assert first["periods_done"] == 3 and not (tmp_path / "cut" / "summary.json").exists()
    _damage(_data_file(tmp_path / "cut" / "checkpoints" / "3"))
    with pytest.warns(UserWarning, match="step 3 cannot be restored"):
        resumed = run_training("ppo", tiny, tmp_path / "cut", num_seeds=seeds)
    for a, b in zip(jax.tree.leaves(whole["state"]), jax.tree.leaves(resumed["state"])):
        if jax.dtypes.issubdtype(a.dtype, jax.dtypes.prng_key):
            a, b = jax.random.key_data(a), jax.random.key_data(b)
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    curves = [
        json.loads((tmp_path / run / "curves.json").read_text())["eval_return_mean"]
        for run in ("whole", "cut")
    ]
    assert curves[0] == curves[1]
    assert [
        json.loads(line)["period"]
        for line in (tmp_path / "cut" / "metrics.jsonl").read_text().splitlines()
    ] == [1, 2, 3, 4]
    assert (tmp_path / "cut" / "checkpoints" / "damaged-3").is_dir()
    other = dataclasses.replace(tiny, update_epochs=2)
    with pytest.raises(ResumeRefused, match="different config"):  # refused before anything compiles
        run_training("ppo", other, tmp_path / "cut", num_seeds=seeds)


def test_a_full_disk_is_one_line_naming_the_bytes_and_keeps_the_steps_before(tmp_path, monkeypatch):
    state = {"w": np.zeros((256,), np.float32), "key": jax.random.key(0)}
    with Checkpointer(tmp_path, "f" * 64) as ckpt:
        ckpt.save(1, state)

        def full(*args, **kwargs):
            # as orbax wraps tensorstore
            raise ValueError("orbax: writing failed") from OSError(28, "No space left on device")

        monkeypatch.setattr(ckpt._manager, "save", full)
        with pytest.raises(
            BadFile,
            match=r"cannot save step 2, the disk is full \(the state needs about 1,032 bytes\); "
            r"free some space and continue with --resume",
        ):
            ckpt.save(2, state)
        monkeypatch.undo()
        assert ckpt.all_steps() == [1]
