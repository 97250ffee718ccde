"""Host loop around an agent: seeds vmapped, one jitted period at a time, checkpoints with orbax,
``metrics.jsonl`` and curves; a run started again resumes bit-for-bit.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jgtest.agents import algorithm
from jgtest.agents.common import config_to_json
from jgtest.checkpoint import Checkpointer, config_fingerprint, strongly_typed
from jgtest.files import write_json_atomically, write_text
from jgtest.sharding import shard_batch


def _metrics_rows(metrics: dict, period: int) -> dict[str, Any]:
    """Per-period metrics of every seed, JSON-ready."""
    return {"period": period, **{k: np.asarray(v).tolist() for k, v in metrics.items()}}


def run_training(
    algo: str,
    config,
    out_dir: str | Path,
    num_seeds: int = 1,
    seed: int = 0,
    max_periods: int | None = None,
    hparams=None,
    on_period: Callable[[int, int, dict], None] | None = None,
) -> dict[str, Any]:
    """Trains ``num_seeds`` vmapped seeds of ``algo`` with checkpoints in ``out_dir``.

    Calls the agent's jitted ``vmap(period)`` once per evaluation period, appends the period's
    metrics to ``metrics.jsonl`` and saves the state with orbax
    (:class:`jgtest.checkpoint.Checkpointer`). Started again on the same directory it resumes from
    the last checkpoint; because every period is the same pure function of the state, the resumed
    run ends bit-for-bit where an uninterrupted one does. A checkpoint written under another config
    is refused.

    Args:
      algo: algorithm name (``jgtest.agents.ALGORITHMS``).
      config: its config.
      out_dir: run directory (``checkpoints/``, ``metrics.jsonl``, ``summary.json``, curves).
      num_seeds: seeds trained together under ``vmap``.
      seed: root seed; seed ``i`` uses ``split(key(seed), num_seeds)[i]``.
      max_periods: stop after this many periods in total (for interrupted runs);
        ``None`` runs all ``config.num_evals``.
      hparams: the algorithm's hyperparameters (default: its ``*Hyperparams()``).
      on_period: called with ``(period, num_periods, metrics)`` after each period.

    Returns:
      The summary written to ``summary.json`` (only once all periods are done;
      otherwise the progress so far).
    """
    if num_seeds < 1:
        raise ValueError(f"num_seeds must be at least 1, got {num_seeds}")
    module, _, hparams_cls = algorithm(algo)
    agent = module.make_agent(config)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    hparams = hparams_cls() if hparams is None else hparams
    hparams_json = {k: float(v) for k, v in dataclasses.asdict(hparams).items()}
    fingerprint = config_fingerprint(
        {
            "algo": algo,
            "config": config_to_json(config),
            "num_seeds": num_seeds,
            "seed": seed,
            "hparams": hparams_json,
        }
    )
    with Checkpointer(
        out / "checkpoints", fingerprint
    ) as checkpointer:  # open while the loop runs (jgtest.interrupts)
        init = jax.jit(jax.vmap(agent.init, in_axes=(0, None)))
        period = jax.jit(jax.vmap(agent.period, in_axes=(0, None)))
        state = strongly_typed(
            init(shard_batch(jax.random.split(jax.random.key(seed), num_seeds)), hparams)
        )  # seeds spread over every device; typed as restored
        start = 0
        if (
            checkpointer.latest_step() is not None
        ):  # the newest intact step: a damaged newer one is set aside
            start, state = checkpointer.restore_latest(state)
        metrics_path = out / "metrics.jsonl"
        rows = (
            [json.loads(line) for line in metrics_path.read_text().splitlines()]
            if metrics_path.exists()
            else []
        )
        rows = rows[:start]  # periods after the last checkpoint are played again
        write_text(metrics_path, "".join(json.dumps(r) + "\n" for r in rows))
        write_json_atomically(
            out / "config.json",
            {
                "algo": algo,
                "num_seeds": num_seeds,
                "seed": seed,
                **config_to_json(config),
                "hparams": hparams_json,
            },
        )
        end = config.num_evals if max_periods is None else min(max_periods, config.num_evals)
        wall = sum(r.get("wall_s", 0.0) for r in rows)
        for p in range(start, end):
            t0 = time.perf_counter()
            state, metrics = period(state, hparams)
            metrics = jax.device_get(metrics)
            wall += time.perf_counter() - t0
            row = {**_metrics_rows(metrics, p + 1), "wall_s": wall}
            rows.append(row)
            with metrics_path.open("a") as f:
                f.write(json.dumps(row) + "\n")
            checkpointer.save(p + 1, state)
            if on_period is not None:
                on_period(p + 1, config.num_evals, metrics)
    summary = _summary(algo, config, rows, num_seeds)
    if end == config.num_evals:
        write_json_atomically(out / "summary.json", summary)
        write_json_atomically(out / "curves.json", _curves(rows))
        plot_curves(_curves(rows), out / "curves.png", title=f"{algo} on {config.game}")
    return {**summary, "state": state}


def _summary(algo, config, rows, num_seeds) -> dict[str, Any]:
    if not rows:
        return {"algo": algo, "game": config.game, "periods_done": 0}
    last = rows[-1]
    final = np.asarray(last["eval_return_mean"], float)
    env_steps = int(np.max(last["env_steps"])) * num_seeds
    wall = float(last["wall_s"])
    return {
        "algo": algo,
        "game": config.game,
        "periods_done": len(rows),
        "num_seeds": num_seeds,
        "final_return_mean": float(final.mean()),
        "final_return_std": float(final.std()),
        "final_return_per_seed": final.tolist(),
        "env_steps": env_steps,
        "env_steps_per_seed": int(np.max(last["env_steps"])),
        "wall_s": round(wall, 3),
        "steps_per_s": round(env_steps / wall, 1) if wall > 0 else None,
    }


def _curves(rows) -> dict[str, Any]:
    return {
        "env_steps": [int(np.max(r["env_steps"])) for r in rows],
        "eval_return_mean": [r["eval_return_mean"] for r in rows],
        "train_return_mean": [r["train_return_mean"] for r in rows],
    }


def plot_curves(curves: dict[str, Any], path: Path, title: str) -> None:
    """Evaluation return (mean ± std over seeds) against env steps, as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = np.asarray(curves["env_steps"])
    ret = np.asarray(curves["eval_return_mean"], float).reshape(len(steps), -1)
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(steps, ret.mean(axis=1), label="evaluation return (mean over seeds)")
    ax.fill_between(steps, ret.min(axis=1), ret.max(axis=1), alpha=0.25, label="min-max over seeds")
    ax.set_xlabel("env steps per seed")
    ax.set_ylabel("game return")
    ax.set_title(title)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
