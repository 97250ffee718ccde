"""Training runs from the command line: the CLI writes its summary and curves. (A resumed run equals
an uninterrupted one, and a checkpoint of another config is refused: tests/test_checkpoint.py,
resuming past a damaged step.)"""

import json

import pytest

from jgtest.cli import main


def test_train_cli_writes_summary_and_curves(tmp_path, capsys):
    out = tmp_path / "run"
    args = [
        "train",
        "ppo",
        "--game",
        "CartPoleBugs-v0",
        "--steps",
        "128",
        "--seeds",
        "2",
        "--out",
        str(out),
        "--quiet",
        "--set",
        "num_envs=2",
        "--set",
        "num_steps=16",
        "--set",
        "num_evals=4",
        "--set",
        "eval_episodes=2",
        "--set",
        "num_minibatches=2",
        "--set",
        "update_epochs=1",
        "--hp",
        "learning_rate=0.001",
        "--hp",
        "gamma=0.9",
        "--tensorboard",
        str(tmp_path / "tb"),
    ]
    assert main(args) == 0
    hparams = json.loads((out / "config.json").read_text())["hparams"]
    assert (
        hparams["learning_rate"] == pytest.approx(0.001)
        and hparams["gamma"] == pytest.approx(0.9)
        and hparams["clip_eps"] == pytest.approx(0.2)
    )
    summary = json.loads((out / "summary.json").read_text())
    for key in ("final_return_mean", "final_return_std", "env_steps", "wall_s", "steps_per_s"):
        assert key in summary
    assert summary["env_steps"] == 2 * 128 and summary["num_seeds"] == 2
    curves = json.loads((out / "curves.json").read_text())
    assert len(curves["env_steps"]) == 4 and (out / "curves.png").stat().st_size > 1000
    assert "final return" in capsys.readouterr().out
    # the curves as TensorBoard event files, read by TensorBoard's own reader
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(tmp_path / "tb"))
    events.Reload()
    returns = events.Scalars("eval_return_mean")
    assert [e.step for e in returns] == [1, 2, 3, 4]
    assert returns[-1].value == pytest.approx(summary["final_return_mean"], rel=1e-5)
