"""RELINE's figures from played episodes: Table 1 (episodes with at least n bugs, §3.2), the bug
records of first showings, and the kart's low-FPS points with their comparisons and plots (§4.1.3)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import jax.numpy as jnp
import numpy as np

from jgtest.analysis import at_least_n_table, compare_groups
from jgtest.methods.reline.config import PAPER_KART, PAPER_TABLE1, RelineConfig, eval_seed
from jgtest.oracles import low_fps_points
from jgtest.report.records import BugRecord, jsonable
from jgtest.rollout import replay_trace


def bugs_found(out) -> np.ndarray:
    """``bool[N, E, k]``: which injected bugs showed in each evaluation episode."""
    return (out["telemetry"].bugs_fired & out["valid"][..., None]).any(axis=2)


def first_records(config: RelineConfig, env, out, agent: str, options: dict, start: float):
    """One :class:`BugRecord` per (model, bug): the first evaluation episode in which it showed."""
    fired = out["telemetry"].bugs_fired & out["valid"][..., None]  # [N, E, T, k]
    records = []
    for m in range(fired.shape[0]):
        for bug in range(fired.shape[3]):
            episodes = np.flatnonzero(fired[m, :, :, bug].any(axis=1))
            if not episodes.size:
                continue
            e = int(episodes[0])
            t = int(np.argmax(fired[m, e, :, bug]))
            records.append(BugRecord(
                kind=env.bug_kinds[bug], game=config.game, bug_id=bug, step=t, episode=0,
                seed=eval_seed(config, agent, m), env_index=e,
                actions=tuple(int(a) for a in out["actions"][m, e, : t + 1]), game_kwargs=options,
                position=tuple(float(p) for p in out["telemetry"].position[m, e, t]),
                wall_s=round(time.perf_counter() - start, 3),
                detail=f"{agent} model {m}, evaluation episode {e}: injected bug {bug} showed",
            ))  # fmt: skip
    return records


def caught_records(config: RelineConfig, env, params, catch, agent: str, options: dict, start: float):
    """One :class:`BugRecord` per (model, bug) caught in a learning run
    (:func:`jgtest.methods.reline.learning_run.learn_and_count`, a stacked
    :class:`jgtest.rollout.BugCatch`): the bug's first firing, episode ``e`` of the model's run
    (``env_index`` 0). Each trace is replayed on the bare game for the position of the firing
    step, and a trace that does not fire its bug there again is refused (``RuntimeError``)."""
    records = []
    for m, bug in zip(*np.nonzero(np.asarray(catch.found))):
        _, episode, t = (int(x) for x in catch.where[m, bug])
        seed = eval_seed(config, agent, int(m))
        telemetry, _, _ = replay_trace(env, params, seed, 0, episode, jnp.asarray(catch.actions[m, bug], jnp.int32))
        if not bool(telemetry.bugs_fired[t, bug]):
            raise RuntimeError(f"{agent} model {m}: the trace of bug {bug} (episode {episode}, step {t}) does not replay")
        records.append(BugRecord(
            kind=env.bug_kinds[bug], game=config.game, bug_id=int(bug), step=t, episode=episode, seed=seed, env_index=0,
            actions=tuple(int(a) for a in catch.actions[m, bug, : t + 1]), game_kwargs=options,
            position=tuple(float(p) for p in telemetry.position[t]), wall_s=round(time.perf_counter() - start, 3),
            detail=f"{agent} model {m}, learning episode {episode}: injected bug {bug} showed",
        ))  # fmt: skip
    return records


def table1(config: RelineConfig, found: dict[str, np.ndarray]) -> dict:
    """Table 1 rows per agent (:func:`jgtest.analysis.at_least_n_table`) with the paper's values."""
    paper = PAPER_TABLE1.get(config.game, {})
    rows = {}
    for agent, bugs in found.items():
        k = bugs.shape[-1]
        table = at_least_n_table(bugs.sum(axis=-1), k)
        for n, row in table.items():
            ref = paper.get(agent, {}).get(n)
            row["paper"] = None if ref is None else dict(zip(("mean", "median", "sd"), ref))
        rows[agent] = {str(n): row for n, row in table.items()}
    return rows


def cell_centres(env, params, cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(path_done, centering) at the centre of each kart cell (RELINE's point coordinates)."""
    n_path, n_cent = env.map_shape
    rows, cols = np.divmod(np.asarray(cells), n_cent)
    span = 1.5 * float(params.theta)
    length = float(params.track.length)
    return (rows + 0.5) * length / n_path, -span + (cols + 0.5) * 2 * span / n_cent


def low_fps_analysis(
    num_cells: int, centres: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]], threshold_ms: float,
    outs: dict[str, dict], spots: Callable[[np.ndarray, np.ndarray], list[int]] | None = None,
) -> dict:  # fmt: skip
    """Low-FPS points per agent and the comparisons of §4.1.3 (render times at the points).

    Args:
      num_cells: the game's cell count (``telemetry.cell`` range).
      centres: cells → ``(path_done, centering)`` of their centres (the twin's
        :func:`cell_centres`, the real game's bucket centres).
      threshold_ms: ``t``.
      outs: per agent, evaluation episodes (``telemetry``, ``valid``).
      spots: ``(path_done, centering)`` of the points → the known heavy spots
        among them (the twin's :func:`heavy_spots_found`); a real game has none.
    """
    per_agent, visits_all, exceed_all = {}, 0, 0
    for agent, out in outs.items():
        cells, ms, valid = (np.asarray(x) for x in (out["telemetry"].cell, out["telemetry"].frame_time_ms, out["valid"]))
        is_low, visits, confidence = (np.asarray(x) for x in low_fps_points(cells, ms, threshold_ms, num_cells, valid))
        points = np.flatnonzero(is_low)
        at_points = valid & is_low[cells]
        path_done, centering = centres(points)
        per_agent[agent] = {
            "count": int(points.size),
            "visits_mean": float(visits[points].mean()) if points.size else 0.0,
            "visits_per_1000_episodes": float(visits[points].mean() * 1000 / valid[..., 0].size) if points.size else 0.0,
            "confidence": _describe(confidence[points]),
            **({} if spots is None else {"spots_found": spots(path_done, centering)}),
            "points": [{"cell": int(c), "path_done": float(p), "centering": float(x), "visits": int(visits[c]),
                        "confidence": float(confidence[c])} for c, p, x in zip(points, path_done, centering)],
            "render_ms": ms[at_points],
        }  # fmt: skip
        visits_all = visits_all + visits
        exceed_all = exceed_all + np.bincount(cells[valid & (ms > threshold_ms)], minlength=num_cells)
    regular_cells = (visits_all > 0) & (exceed_all == 0)
    regular = np.concatenate([
        np.asarray(o["telemetry"].frame_time_ms)[np.asarray(o["valid"]) & regular_cells[np.asarray(o["telemetry"].cell)]]
        for o in outs.values()
    ])  # fmt: skip
    groups = {"Regular FPS": regular, **{a: r["render_ms"] for a, r in per_agent.items()}}
    agents = list(per_agent)
    at_points = {a: per_agent[a]["render_ms"] for a in agents if len(per_agent[a]["render_ms"])}
    overlap = {f"{a}&{b}": len({p["cell"] for p in per_agent[a]["points"]} & {p["cell"] for p in per_agent[b]["points"]})
               for i, a in enumerate(agents) for b in agents[i + 1:]}  # fmt: skip
    nonempty = {k: v for k, v in groups.items() if len(v)}
    return {
        "per_agent": per_agent,
        "groups": groups,
        "medians_ms": {k: float(np.median(v)) for k, v in nonempty.items()},
        "comparisons": compare_groups(at_points) if len(at_points) >= 2 else [],  # the agents only, as §4.2
        "overlap": overlap,
    }


def heavy_spots_found(params, path_done: np.ndarray, centering: np.ndarray) -> list[int]:
    """Indices of the heavy spots with a low-FPS point within their radius."""
    pos, radius = np.asarray(params.heavy_pos), np.asarray(params.heavy_radius)
    length = float(params.track.length)
    found = []
    for k in range(len(radius)):
        ds = (path_done - pos[k, 0] + length / 2) % length - length / 2
        if np.any(np.hypot(ds, centering - pos[k, 1]) <= radius[k]):
            found.append(k)
    return found


def _describe(values: np.ndarray) -> dict:
    if not len(values):
        return {"mean": None, "median": None, "min": None, "max": None}
    return {"mean": float(np.mean(values)), "median": float(np.median(values)), "min": float(np.min(values)), "max": float(np.max(values))}


def write_low_fps(config: RelineConfig, analysis: dict, threshold: float, out_dir: Path, road_half_width: float,
                  path_length: float, **extra) -> dict:  # fmt: skip
    """Plots the low-FPS analysis (render-time violins, the points on the track) and writes
    ``low_fps.json`` (the points per agent, medians, comparisons, overlap, ``extra``, the paper's
    figures); returns what it wrote."""
    from jgtest.report.plots import position_plot, violin_plot

    points = {a: (np.array([p["path_done"] for p in r["points"]]), np.array([p["centering"] for p in r["points"]]))
              for a, r in analysis["per_agent"].items()}  # fmt: skip
    plots = {
        "violin": str(violin_plot(analysis["groups"], out_dir / "render_times.png", threshold_ms=threshold,
                                  title=f"{config.game}: render times at low-FPS points")),
        "positions": str(position_plot(points, out_dir / "low_fps_points.png", theta=config.theta,
                                       road_half_width=road_half_width, path_length=path_length)),
    }  # fmt: skip
    low_fps = {
        "threshold_ms": threshold,
        "per_agent": {a: {k: v for k, v in r.items() if k != "render_ms"} for a, r in analysis["per_agent"].items()},
        "medians_ms": analysis["medians_ms"], "comparisons": analysis["comparisons"], "overlap": analysis["overlap"],
        **extra, "plots": plots, "paper": PAPER_KART,
    }  # fmt: skip
    (out_dir / "low_fps.json").write_text(json.dumps(jsonable(low_fps), indent=2))
    return low_fps
