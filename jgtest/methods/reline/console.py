"""RELINE in the terminal: a header naming the run, a progress bar per phase, then Table 1 or the
kart's low-FPS points beside the paper's (what ``jgtest run reline`` and the main job show)."""

from __future__ import annotations

from pathlib import Path

from jgtest.methods.reline.campaign import run
from jgtest.methods.reline.config import (
    PAPER_KART,
    RelineConfig,
    calibrates,
    is_bridged,
    is_kart,
)
from jgtest.methods.reline.learners import (
    DQN_STEPS,
    counted_episodes,
    learner,
    package_train_episodes,
)


def run_in_console(
    config: RelineConfig, out_dir: str | Path, quiet: bool = False, resume: bool = False
) -> dict:
    """:func:`jgtest.methods.reline.run` with its header, progress bars (unless ``quiet``) and
    tables."""
    from jgtest.report.console import progress, show, stderr

    learn = learner(config)
    budget = getattr(learn.config, "total_timesteps", None)
    budget = (
        f"{budget:,} steps"
        if budget
        else f"{learn.config.num_iterations * learn.config.episodes_per_iter:,} episodes"
    )
    episodes = f"{config.eval_episodes:,} evaluation episodes per model"
    if config.game == "ale:MsPacman" and config.evaluation == "training":
        trained = " and ".join(
            f"{package_train_episodes(config, a):,} ({a})" for a in config.agents if a != "random"
        )
        budget = f"{trained} episodes" if trained else "nothing (random only)"
        episodes = (
            f"Table 1 over the last {counted_episodes(config):,} training episodes per model (the "
            "package's protocol)"
        )
    if config.game in DQN_STEPS and config.evaluation == "training":  # the DQN twins' learning runs
        budget = f"at least {budget} and {config.eval_episodes:,} episodes, learning all along"
        table = "low-FPS points" if is_kart(config.game) else "Table 1"
        episodes = (
            f"{table} over the last {config.eval_episodes:,} episodes per model (the package's "
            "protocol)"
        )
    if is_bridged(config.game) and calibrates(config.game):
        from jgtest.methods.reline.real_game import settings

        episodes = ", ".join(f"{v:,} {k.replace('_', ' ')}" for k, v in settings(config).items())
    stderr().print(
        f"RELINE on {config.game}: {', '.join(config.agents)}; {config.models} model(s) per "
        f"agent, {type(learn.config).__name__} trained for {budget} each; {episodes}"
    )
    with progress(quiet) as bars:
        tasks = {}

        def on_progress(phase, done, total):
            if phase not in tasks:
                tasks[phase] = bars.add_task(phase, total=total)
            bars.update(tasks[phase], completed=done, total=total)

        summary = run(config, out_dir, progress=on_progress, resume=resume)
    if "table1" in summary:
        show(table1_table(config, summary))
        for agent, cost in summary.get("full_table_budget", {}).items():
            print(
                f"the package's full table, {agent}: {cost['updates_per_model']:,} updates a "
                "model at this run's "
                f"{cost['seconds_per_update'] * 1e3:.1f} ms each: {cost['hours_per_model']:.1f} h "
                "a model, "
                f"{cost['hours_10_models']:.0f} h for 10"
            )
    else:
        show(low_fps_table(config, summary))
        for line in (threshold_line(summary), slowest_line(summary), replay_line(summary)):
            if line:
                print(line)
    print(
        f"wrote {out_dir}: bugs.jsonl, summary.json, "
        f"{'table1.json' if 'table1' in summary else 'low_fps.json and plots'}"
    )
    return summary


def table1_table(config: RelineConfig, summary: dict):
    """Table 1: per agent and n, the episodes with at least n bugs, ours and the paper's."""
    from rich.table import Table

    table = Table(
        title=f"RELINE Table 1, {config.game}: episodes (of {summary['eval_episodes']:,}) "
        "with at least n bugs"
    )
    for column in ("agent", "n", "mean", "median", "sd", "paper mean / median / sd"):
        table.add_column(column, justify="right")
    for agent, rows in summary["table1"].items():
        for n, row in rows.items():
            paper = row["paper"]
            ref = "—" if paper is None else f"{paper['mean']} / {paper['median']} / {paper['sd']}"
            table.add_row(
                agent, n, f"{row['mean']:.1f}", f"{row['median']:.1f}", f"{row['sd']:.1f}", ref
            )
    return table


def low_fps_table(config: RelineConfig, summary: dict):
    """The low-FPS points per agent (and the kart twin's heavy spots among them), the paper's kart
    beside the karts'."""
    from rich.table import Table

    table = Table(
        title=f"RELINE low-FPS points, {config.game} (t = "
        f"{summary.get('threshold', {}).get('t_ms', float('nan')):.2f} ms)"
    )
    twin = all(
        "spots_found" in row for row in summary["low_fps"].values()
    )  # the real game hides no known spots
    kart = is_kart(config.game)
    paper = " (paper)" if kart else ""
    slow = all("slow_steps_share" in row for row in summary["low_fps"].values())
    for column in (
        "agent",
        f"points{paper}",
        *(("heavy spots among them",) if twin else ()),
        f"visits / 1,000 episodes{paper}",
        *((f"slow steps{' (package)' if kart else ''}",) if slow else ()),
        "median confidence",
    ):
        table.add_column(column, justify="right")
    for agent, row in summary["low_fps"].items():
        median = row.get("confidence_median")
        table.add_row(
            agent,
            f"{row['count']}" + (f" ({PAPER_KART['points'][agent]})" if kart else ""),
            *((str(row["spots_found"]),) if twin else ()),
            f"{row['visits_per_1000_episodes']:.0f}"
            + (f" ({PAPER_KART['visits_per_point'][agent]})" if kart else ""),
            *(
                (
                    f"{row['slow_steps_share']:.1%}"
                    + (f" ({PAPER_KART['slow_steps_share'][agent]:.1%})" if kart else ""),
                )
                if slow
                else ()
            ),
            "—" if median is None else f"{median:.0%}",
        )
    return table


def threshold_line(summary: dict) -> str | None:
    """How ``t`` was calibrated (§4.1.3): ``t_b`` from rl-baseline's render times, ``δ`` from the
    warm-up."""
    t = summary.get("threshold") or {}
    if t.get("t_b_ms") is None or t.get("baseline_render_times") is None:
        return None
    cut = (
        "all their steps: rl-baseline was stuck from the first"
        if t.get("stuck_cut_skipped")
        else "each episode cut where it got stuck"
    )
    warm = (
        f"; δ = {t['delta_ms']:.2f} ms from {t['warmup_render_times']:,} warm-up render times "
        "under training load"
        if t.get("warmup_render_times")
        else ""
    )
    return (
        f"threshold: t_b = mean + 5 sd = {t['t_b_ms']:.2f} ms over {t['baseline_render_times']:,} "
        f"render times of rl-baseline ({cut}){warm}; t = {t['t_ms']:.2f} ms"
    )


def slowest_line(summary: dict) -> str | None:
    """The slowest areas, where the game came closest to a low-FPS point (real games)."""
    areas = summary.get("slowest_areas")
    if not areas:
        return None
    where = lambda a: ", ".join(
        f"{k} {v:.0f}" for k, v in a.items() if k not in ("cell", "visits", "median_ms", "over_t")
    )
    return "slowest areas: " + "; ".join(
        f"{where(a)}: median {a['median_ms']:.2f} ms, {a['over_t']:.0%} of {a['visits']} visits "
        "over t"
        for a in areas
    )


def replay_line(summary: dict) -> str | None:
    """The real game's replay check, by step and by section, beside the paper's (``None``
    elsewhere)."""
    replay = summary.get("replay_reliability") or {}
    if "per_section" not in replay:
        return None
    by = {k: replay[k] for k in ("per_step", "per_section") if replay[k]}
    paper = PAPER_KART["replay"]
    return (
        f"replayed {replay['per_step']['replays']} times ({replay['replayed_steps']} steps, "
        "course completed: "
        f"{replay['lap_completed']}): Spearman rho "
        + "; ".join(
            f"{k.replace('_', ' ')} min {v['rho_min']:.2f} median {v['rho_median']:.2f}"
            for k, v in by.items()
        )
        + f" (paper, per step over 300: min {paper['rho_min']}, median {paper['rho_median']})"
    )
