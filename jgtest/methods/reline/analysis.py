"""RELINE's figures from played episodes: Table 1 (episodes with at least n bugs, §3.2), the bug
records of first showings, and the kart's low-FPS points with their comparisons and plots
(§4.1.3)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import jax.numpy as jnp
import numpy as np

from jgtest.analysis import at_least_n_table, compare_groups
from jgtest.files import write_json_atomically
from jgtest.methods.reline.config import PAPER_KART, PAPER_TABLE1, RelineConfig, eval_seed
from jgtest.oracles import low_fps_points
from jgtest.records import BugRecord
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
            records.append(
                BugRecord(
                    kind=env.bug_kinds[bug],
                    game=config.game,
                    bug_id=bug,
                    step=t,
                    episode=0,
                    seed=eval_seed(config, agent, m),
                    env_index=e,
                    actions=tuple(int(a) for a in out["actions"][m, e, : t + 1]),
                    game_kwargs=options,
                    position=tuple(float(p) for p in out["telemetry"].position[m, e, t]),
                    wall_s=round(time.perf_counter() - start, 3),
                    detail=f"{agent} model {m}, evaluation episode {e}: injected bug {bug} showed",
                )
            )
    return records


def caught_records(
    config: RelineConfig, env, params, catch, agent: str, options: dict, start: float
):
    """One :class:`BugRecord` per (model, bug) caught in a learning run
    (:func:`jgtest.methods.reline.learning_run.learn_and_count`, a stacked
    :class:`jgtest.rollout.BugCatch`): the bug's first firing, episode ``e`` of the model's run
    (``env_index`` 0). Each trace is replayed on the bare game for the position of the firing
    step, and a trace that does not fire its bug there again is refused (``RuntimeError``)."""
    records = []
    for m, bug in zip(*np.nonzero(np.asarray(catch.found))):
        _, episode, t = (int(x) for x in catch.where[m, bug])
        seed = eval_seed(config, agent, int(m))
        telemetry, _, _ = replay_trace(
            env, params, seed, 0, episode, jnp.asarray(catch.actions[m, bug], jnp.int32)
        )
        if not bool(telemetry.bugs_fired[t, bug]):
            raise RuntimeError(
                f"{agent} model {m}: the trace of bug {bug} (episode {episode}, step {t}) does "
                "not replay"
            )
        records.append(
            BugRecord(
                kind=env.bug_kinds[bug],
                game=config.game,
                bug_id=int(bug),
                step=t,
                episode=episode,
                seed=seed,
                env_index=0,
                actions=tuple(int(a) for a in catch.actions[m, bug, : t + 1]),
                game_kwargs=options,
                position=tuple(float(p) for p in telemetry.position[t]),
                wall_s=round(time.perf_counter() - start, 3),
                detail=f"{agent} model {m}, learning episode {episode}: injected bug {bug} showed",
            )
        )
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


def cell_centres(env, params, cells: np.ndarray) -> dict[str, np.ndarray]:
    """``path_done`` and ``centering`` at the centre of each kart cell (RELINE's point
    coordinates)."""
    n_path, n_cent = env.map_shape
    rows, cols = np.divmod(np.asarray(cells), n_cent)
    span = 1.5 * float(params.theta)
    length = float(params.track.length)
    return {
        "path_done": (rows + 0.5) * length / n_path,
        "centering": -span + (cols + 0.5) * 2 * span / n_cent,
    }


def low_fps_analysis(
    num_cells: int,
    coordinates: Callable[[np.ndarray], dict[str, np.ndarray]],
    threshold_ms: float,
    outs: dict[str, dict],
    spots: Callable[..., list[int]] | None = None,
) -> dict:
    """Low-FPS points per agent and the comparisons of §4.1.3 (render times at the points).

    Args:
      num_cells: the game's cell count (``telemetry.cell`` range).
      coordinates: cells → their centres by named coordinate (the kart's ``path_done`` and
        ``centering``, :func:`cell_centres`; a level's ``x`` and ``y``): each point's place.
      threshold_ms: ``t``.
      outs: per agent, evaluation episodes (``telemetry``, ``valid``).
      spots: the points' coordinates (keywords) → the known heavy spots among them (the twin's
        :func:`heavy_spots_found`); a real game has none.
    """
    per_agent, visits_all, exceed_all = {}, 0, 0
    for agent, out in outs.items():
        cells, ms, valid = (
            np.asarray(x)
            for x in (out["telemetry"].cell, out["telemetry"].frame_time_ms, out["valid"])
        )
        is_low, visits, confidence = (
            np.asarray(x) for x in low_fps_points(cells, ms, threshold_ms, num_cells, valid)
        )
        points = np.flatnonzero(is_low)
        at_points = valid & is_low[cells]
        where = coordinates(points)
        per_agent[agent] = {
            "count": int(points.size),
            "visits_mean": float(visits[points].mean()) if points.size else 0.0,
            "visits_per_1000_episodes": float(visits[points].mean() * 1000 / valid[..., 0].size)
            if points.size
            else 0.0,
            "confidence": _describe(confidence[points]),
            "slow_steps_share": float(np.mean(ms[valid] > threshold_ms)) if valid.any() else 0.0,
            **({} if spots is None else {"spots_found": spots(**where)}),
            "points": [
                {
                    "cell": int(c),
                    **{name: float(v[i]) for name, v in where.items()},
                    "visits": int(visits[c]),
                    "confidence": float(confidence[c]),
                }
                for i, c in enumerate(points)
            ],
            "render_ms": ms[at_points],
        }
        visits_all = visits_all + visits
        exceed_all = exceed_all + np.bincount(
            cells[valid & (ms > threshold_ms)], minlength=num_cells
        )
    regular_cells = (visits_all > 0) & (exceed_all == 0)
    regular = np.concatenate(
        [
            np.asarray(o["telemetry"].frame_time_ms)[
                np.asarray(o["valid"]) & regular_cells[np.asarray(o["telemetry"].cell)]
            ]
            for o in outs.values()
        ]
    )
    groups = {"Regular FPS": regular, **{a: r["render_ms"] for a, r in per_agent.items()}}
    agents = list(per_agent)
    at_points = {a: per_agent[a]["render_ms"] for a in agents if len(per_agent[a]["render_ms"])}
    overlap = {
        f"{a}&{b}": len(
            {p["cell"] for p in per_agent[a]["points"]}
            & {p["cell"] for p in per_agent[b]["points"]}
        )
        for i, a in enumerate(agents)
        for b in agents[i + 1 :]
    }
    nonempty = {k: v for k, v in groups.items() if len(v)}
    return {
        "per_agent": per_agent,
        "groups": groups,
        "medians_ms": {k: float(np.median(v)) for k, v in nonempty.items()},
        "comparisons": compare_groups(at_points)
        if len(at_points) >= 2
        else [],  # the agents only, as §4.2
        "overlap": overlap,
    }


def slowest_areas(
    num_cells: int,
    coordinates: Callable[[np.ndarray], dict[str, np.ndarray]],
    threshold_ms: float,
    outs: dict[str, dict],
    count: int = 10,
    min_visits: int = 5,
) -> list[dict]:
    """The ``count`` cells with the highest median render time over every agent's visits (at least
    ``min_visits``), with their share of visits over ``t``: where a game comes closest to a low-FPS
    point, whether or not any cell is one (beyond the paper, which reports the points alone)."""
    cells = np.concatenate(
        [np.asarray(o["telemetry"].cell)[np.asarray(o["valid"])] for o in outs.values()]
    )
    ms = np.concatenate(
        [np.asarray(o["telemetry"].frame_time_ms)[np.asarray(o["valid"])] for o in outs.values()]
    )
    order = np.argsort(cells, kind="stable")
    cells, ms = cells[order], ms[order]
    starts = np.flatnonzero(np.r_[True, cells[1:] != cells[:-1]])
    groups = [
        (int(cells[a]), ms[a:b])
        for a, b in zip(starts, np.r_[starts[1:], cells.size])
        if b - a >= min_visits
    ]
    groups.sort(key=lambda g: -float(np.median(g[1])))
    top = groups[:count]
    where = coordinates(np.array([c for c, _ in top], np.int64))
    return [
        {
            "cell": c,
            **{k: float(v[i]) for k, v in where.items()},
            "visits": int(times.size),
            "median_ms": float(np.median(times)),
            "over_t": float((times > threshold_ms).mean()),
        }
        for i, (c, times) in enumerate(top)
    ]


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
    return {
        "mean": float(np.mean(values)),
        "median": float(np.median(values)),
        "min": float(np.min(values)),
        "max": float(np.max(values)),
    }


def track_points_plot(
    theta: float, road_half_width: float, path_length: float
) -> Callable[[dict, Path], Path]:
    """``write_low_fps``'s ``plot_points`` on a kart's track: the points along the lap and across
    the road (Fig. 4-(b)/(c), :func:`jgtest.report.plots.position_plot`)."""
    from jgtest.report.plots import position_plot

    def plot(points: dict[str, list[dict]], path: Path) -> Path:
        pairs = {
            a: (np.array([p["path_done"] for p in ps]), np.array([p["centering"] for p in ps]))
            for a, ps in points.items()
        }
        return position_plot(
            pairs, path, theta=theta, road_half_width=road_half_width, path_length=path_length
        )

    return plot


def write_low_fps(
    config: RelineConfig,
    analysis: dict,
    threshold: float,
    out_dir: Path,
    plot_points: Callable[[dict, Path], Path],
    paper: dict | None = PAPER_KART,
    **extra,
) -> dict:
    """Plots the low-FPS analysis (render-time violins; the points over the game's course,
    ``plot_points(points per agent, path)``) and writes ``low_fps.json`` (the points per agent,
    medians, comparisons, overlap, ``extra``, the paper's figures); returns what it wrote."""
    from jgtest.report.plots import violin_plot

    plots = {
        "violin": str(
            violin_plot(
                analysis["groups"],
                out_dir / "render_times.png",
                threshold_ms=threshold,
                title=f"{config.game}: render times at low-FPS points",
            )
        ),
        "positions": str(
            plot_points(
                {a: r["points"] for a, r in analysis["per_agent"].items()},
                out_dir / "low_fps_points.png",
            )
        ),
    }
    low_fps = {
        "threshold_ms": threshold,
        "per_agent": {
            a: {k: v for k, v in r.items() if k != "render_ms"}
            for a, r in analysis["per_agent"].items()
        },
        "medians_ms": analysis["medians_ms"],
        "comparisons": analysis["comparisons"],
        "overlap": analysis["overlap"],
        **extra,
        "plots": plots,
        "paper": paper,
    }
    write_json_atomically(out_dir / "low_fps.json", low_fps)
    return low_fps
