"""The RELINE page (Tufano et al., 2022): Table 1 on the twins and on Ms. Pac-Man, low-FPS points
on the kart twin, SuperTuxKart and a Doom level."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from jgtest.report.reproductions.common import (
    Page,
    Results,
    label,
    listing,
    num,
    pct,
    provenance,
    section,
    table,
)


def _mean_median_sd(entry: dict) -> str:
    return f"{num(entry['mean'])} / {num(entry['median'])} / {num(entry['sd'])}"


def table1(columns: Sequence[tuple[str, dict]]) -> str:
    """RELINE's Table 1 (episodes of 1,000 with at least n bugs, mean / median / sd over models),
    one column per run and the paper's last."""
    first = columns[0][1]
    rows = []
    for agent, by_n in first.items():
        for n, entry in by_n.items():
            ours = [
                _mean_median_sd(t[agent][n])
                if len(t[agent][n]["counts"]) > 1
                else num(t[agent][n]["mean"])
                for _, t in columns
            ]
            rows.append([label(agent), n, *ours, _mean_median_sd(entry["paper"])])
    return table(["agent", "at least n bugs", *[title for title, _ in columns], "paper"], rows)


def leads_at(t: dict, key: Callable[[dict], float]) -> list[str]:
    """The n at which RELINE's mean is above rl-baseline's (``key`` picks ours or the paper's)."""
    return [n for n in t["reline"] if key(t["reline"][n]) > key(t["rl-baseline"][n])]


def leads_sentence(t: dict) -> str:
    """Where RELINE is ahead of rl-baseline, in ours and in the paper."""
    ours, paper = leads_at(t, lambda e: e["mean"]), leads_at(t, lambda e: e["paper"]["mean"])
    return (
        f"RELINE is above rl-baseline at n = {listing(ours) or 'none'} in ours, "
        f"at n = {listing(paper) or 'none'} in the paper."
    )


def reline_toy_sections(results: Results) -> list[str]:
    cart, pac, pac_quick = (
        results["reline_table1.json"],
        results["reline_pacmaze_table1.json"],
        results["reline_pacmaze_quick_table1.json"],
    )
    pac_package = results["reline_pacmaze_package_table1.json"]
    pac_quick = pac_quick.get(
        "table1", pac_quick
    )  # a run's table1.json: {"protocol", "table1"}; rows alone before protocols were named
    silent = [c for c in cart["table1"]["reline"]["1"]["counts"] if c == 0]
    return [
        section(
            "CartPole: Table 1 (§3.2)",
            f"Episodes of {num(cart['eval_episodes'])} in which each agent finds at "
            f"least n of the {len(cart['table1']['reline'])} injected bugs; learning agents: "
            "mean / median / sd over their models. Ours under the replication "
            "package's protocol (CEM elites at the 70th percentile of "
            "returns; the models learn through their evaluation episodes, with a "
            "fresh Adam) and, the same seeds, under the paper's text "
            "(the best 11 of 16 episodes; frozen models), the protocol of our "
            "earlier figures; both start the network from PyTorch's "
            f"initialization, as the package's does. {leads_sentence(cart['table1'])} "
            f"{len(silent)} of our {len(cart['table1']['reline']['1']['counts'])} "
            "RELINE models found no bug in any episode under the package's protocol.",
            table1(
                [("ours, package's protocol", cart["table1"])]
                + (
                    [("ours, paper's text", cart["paper_text"]["table1"])]
                    if "paper_text" in cart
                    else []
                )
            ),
            provenance("reline_table1.json", cart),
        ),
        section(
            "PacMaze: Table 1 against the paper's MsPacman (§3.2)",
            "These tables come from PacMaze-v0's earlier 21 × 21 maze. The game now plays the "
            "real first maze (42 × 41 cells, its probes beside the real game's in "
            "`benchmarks/results/pacmaze_probes.json`) and has not been rerun on it. "
            f"The same table over the {len(pac['table1']['reline'])} tunnel-gate "
            "bugs of our PacMaze-v0 at the CLI's default budget of "
            f"{num(pac_package['train_steps'])} steps a model. Under the "
            f"replication package's protocol ({pac_package['models']} models an "
            "agent) each model learns through all its episodes, one game and a "
            "gradient step a step with ε to 0.01 over 150k steps, and "
            f"Table 1 counts the last {num(pac_package['eval_episodes'])} episodes "
            "of its run, as the package counts the last 1,000 of "
            "its Ms. Pac-Man training; under the paper's text, the protocol of our "
            f"earlier figures ({pac['models']} models), the "
            f"trained models are frozen and play {num(pac['eval_episodes'])} "
            "evaluation episodes; `--quick` is the paper's text at "
            "a smaller budget. Package's protocol: "
            f"{leads_sentence(pac_package['table1'])} Its medians at n = 1 … "
            f"{len(pac_package['table1']['reline'])}: RELINE "
            f"{medians(pac_package['table1'], 'reline')}, rl-baseline "
            f"{medians(pac_package['table1'], 'rl-baseline')}. Paper's text: "
            f"{leads_sentence(pac['table1'])} At `--quick`: {leads_sentence(pac_quick)}",
            table1(
                [
                    ("ours, package's protocol", pac_package["table1"]),
                    ("ours, paper's text", pac["table1"]),
                    ("ours, paper's text, `--quick`", pac_quick),
                ]
            ),
            "Package's protocol:",
            provenance("reline_pacmaze_package_table1.json", pac_package),
            "Paper's text, default budget:",
            provenance("reline_pacmaze_table1.json", pac),
            "Paper's text, `--quick`:",
            provenance("reline_pacmaze_quick_table1.json", pac_quick),
        ),
    ]


def reline_ale_section(results: Results) -> list[str]:
    package, cost = (
        results["reline_mspacman_package_quick_table1.json"],
        results["reline_mspacman_budget.json"],
    )
    ale = results["reline_mspacman_quick_table1.json"]
    gates = listing(
        (
            f"{label(a)} {num(runs[0]['bugs_last_10_mean'], 1)}"
            for a, runs in ale["training"].items()
        ),
        " and ",
    )
    learned = cost["budgets"]["learned_episodes"]
    per_model = listing(
        (
            f"{label(a)} {num(c['updates_per_model'] / 1e6, 2)}M updates "
            f"({num(c['hours_per_model'], 1)} h)"
            for a, c in learned["per_agent"].items()
        ),
        " and ",
    )
    return [
        section(
            "Real Ms. Pac-Man (ALE), the package's protocol, `--quick` (§3.2)",
            "Table 1 on the real game through envpool with the replication "
            "package's settings (one game, a gradient step a step, "
            "ε to 0.01 over 150k steps, no sticky actions), counting the last "
            f"{num(package['eval_episodes'])} training episodes of "
            "each model as the package counts its last 1,000 (the paper's columns "
            "are of 1,000): a run of under an hour on 2 CPU cores that shows the "
            "protocol, not the result (the agents still explore, ε ≈ 0.8–0.9). "
            f"{leads_sentence(package['table1'])}",
            table1([("ours, package's protocol, `--quick`", package["table1"])]),
            provenance("reline_mspacman_package_quick_table1.json", package),
        ),
        section(
            "What the full Ms. Pac-Man table costs (§3.1.4)",
            "One update of the Nature CNN on 32 transitions is "
            f"{num(cost['flops_per_update_xla'] / 1e9, 2)} GFLOP by XLA's count "
            f"({num(cost['flops_per_update_by_hand'] / 1e9, 2)} by hand). At the "
            f"{num(learned['steps_per_episode'])} steps a trained "
            "agent plays an episode (after the game's intro), a model is "
            f"{per_model}; 10 models an agent make "
            f"{num(learned['updates_table'] / 1e6, 1)}M updates, "
            f"{num(learned['flops_table'] / 1e15, 1)} PFLOP. This CPU takes "
            f"{num(cost['seconds_per_10k_updates'])} s per 10k updates "
            "(acting, stepping the game and learning), so the table is "
            f"{num(learned['hours_table'])} hours here; the run resumes per "
            "model, so it can be spread over several. "
            f"{cost['gpu_note'][0].upper() + cost['gpu_note'][1:]}.",
            provenance(
                "reline_mspacman_budget.json",
                cost,
                Seeds=f"seed {cost['seed']}",
                Budget=f"{num(cost['timed_updates'])} updates timed after a warm-up",
            ),
        ),
        section(
            "Real Ms. Pac-Man (ALE), the paper's text, `--quick` (§3.2)",
            "Table 1 on the real game through envpool, frozen models, with Gym "
            "MsPacman-v0's sticky actions, one model per learning agent "
            "at the small budget: the paper's ordering needs the paper's budget, "
            f"not run here. {leads_sentence(ale['table1'])} "
            f"In their last 10 training episodes the learners found {gates} gates on average.",
            table1([("ours, `--quick`", ale["table1"])]),
            provenance("reline_mspacman_quick_table1.json", ale),
        ),
    ]


def _points_row(agent: str, runs: Sequence[dict], paper: dict) -> list[str]:
    spots = [
        f"{len(r['per_agent'][agent]['spots_found'])} of {len(r['heavy_spots'])}" for r in runs
    ]
    confidence = [pct(r["per_agent"][agent]["confidence"]["median"], 0) for r in runs]
    return [
        label(agent),
        listing((str(r["per_agent"][agent]["count"]) for r in runs), " / "),
        str(paper["points"][agent]),
        listing(spots, " / "),
        listing(confidence, " / "),
        pct(paper["confidence_median"][agent], 0),
    ]


#: The kart twin's runs on the reproduction page, in the table's order: (results file, what it is).
KART_RUNS = (
    ("reline_kart_package_low_fps.json", "the package's protocol, seed 0"),
    ("reline_kart_package_low_fps_seed1.json", "the package's protocol, seed 1"),
    ("reline_kart_low_fps.json", "the paper's text, seed 0"),
    ("reline_kart_low_fps_seed1.json", "the paper's text, seed 1"),
)


def reline_kart_section(results: Results) -> str:
    runs = [results[name] for name, _ in KART_RUNS]
    package = runs[0]
    paper = results["reline_stk_quick.json"]["paper"]  # the paper's SuperTuxKart figures (§4.2)
    replay = [r["replay_reliability"] for r in runs]
    most = [max(r["per_agent"], key=lambda a: r["per_agent"][a]["count"]) for r in runs]
    paper_most = max(paper["points"], key=paper["points"].get)
    sources = [
        item
        for i, (name, what) in enumerate(KART_RUNS)
        for item in (f"Run {i + 1}, {what}:", provenance(name, runs[i]))
    ]
    return section(
        "Kart twin: low-FPS points (§4.2)",
        "Low-FPS points found by each agent on KartTrack-v0, whose frame times "
        "come from a hidden render-cost field with "
        f"{len(runs[0]['heavy_spots'])} heavy spots, against the paper's on "
        "SuperTuxKart; one model per learning agent. Four runs; "
        "each cell reads them in order. Runs 1 and 2, the replication "
        "package's protocol: each learner's points come from the last "
        f"{num(package['eval_episodes'])} episodes of its run at the default "
        "budget, learning all along (the package counts the last "
        "1,000 of 3,300 training episodes), ε to 0.01 over 150k steps. Runs 3 "
        "and 4, the paper's text, the protocol of our earlier "
        "figures: trained, then 1,000 episodes with the weights fixed. The "
        "agent with the most points: "
        f"{listing((label(m) for m in most), ' / ')} in ours, {label(paper_most)} in the paper.",
        table(
            [
                "agent",
                "low-FPS points, ours",
                "paper",
                "heavy spots covered, ours",
                "median confidence, ours",
                "paper",
            ],
            [_points_row(a, runs, paper) for a in runs[0]["per_agent"]],
        ),
        _slow_steps_line(runs[:2]),
        _kart_probes_line(results["kart_probes.json"]),
        provenance("kart_probes.json", results["kart_probes.json"]),
        f"Threshold t: {listing((num(r['threshold_ms'], 2) + ' ms' for r in runs), ' / ')} "
        f"on the twin's simulated frame times (paper {num(paper['threshold_ms'], 2)} ms). "
        f"A constant-action episode replayed {replay[0]['replays']} times: Spearman ρ min "
        f"{listing((num(r['rho_min'], 2) for r in replay), ' / ')}, "
        f"median {listing((num(r['rho_median'], 2) for r in replay), ' / ')} "
        f"(paper: min {num(paper['replay']['rho_min'], 2)}, median "
        f"{num(paper['replay']['rho_median'], 2)}).",
        *sources,
    )


def _slow_steps_line(runs: Sequence[dict]) -> str:
    """Each agent's share of steps above ``t`` in the package-protocol runs, and its ratio to the
    random kart's, beside the package's logs."""
    package = runs[0]["paper"]["slow_steps_share"]
    cells = []
    for agent in runs[0]["low_fps"]:
        shares = [r["low_fps"][agent]["slow_steps_share"] for r in runs]
        ratios = [
            r["low_fps"][agent]["slow_steps_share"] / r["low_fps"]["random"]["slow_steps_share"]
            for r in runs
        ]
        cells.append(
            f"{label(agent)} {listing((pct(x, 1) for x in shares), ' / ')} "
            f"({listing((num(x, 2) for x in ratios), ' / ')} of random's; package "
            f"{pct(package[agent], 1)}, {num(package[agent] / package['random'], 2)})"
        )
    return (
        "Steps slower than t in the counted episodes, runs 1 and 2, beside the package's "
        f"`FPS_info_*.xlsx` logs: {'; '.join(cells)}."
    )


def _kart_probes_line(probes: dict) -> str:
    """The render field's probe table (``benchmarks/kart_probes.py``) in one sentence."""
    twin, package = probes["twin"], probes["package"]
    quantiles = lambda side: listing(
        (num(q, 2) for q in side["calibration"]["frame_ms"]["quantiles_5_25_50_75_95"]), "/"
    )
    return (
        "The render field was fitted before any learner ran, with a scripted driver and a random "
        f"kart ({num(probes['probe_episodes'])} episodes each): t by RELINE's rule "
        f"{num(twin['t_ms'], 2)} ms (package {num(package['t_ms'], 2)}), calibration laps "
        f"{quantiles(twin)} ms at the 5/25/50/75/95th percentiles (package {quantiles(package)}), "
        f"the random kart slow in {pct(twin['random']['share_above_t'], 1)} of its steps "
        f"(package {pct(package['random']['share_above_package_t'], 1)}), the driver in "
        f"{pct(twin['driver']['share_above_t'], 1)} (rl-baseline "
        f"{pct(package['driver']['share_above_package_t'], 1)}); what was tried and not kept "
        "is in the file."
    )


def reline_stk_section(results: Results) -> str:
    stk = results["reline_stk_quick.json"]
    paper, low_fps, replay = stk["paper"], stk["low_fps"], stk["replay_reliability"]
    threshold = stk["threshold"]
    rows = [
        [
            label(a),
            str(low_fps[a]["count"]),
            str(paper["points"][a]),
            pct(low_fps[a]["confidence_median"], 0),
            pct(paper["confidence_median"][a], 0),
        ]
        for a in low_fps
    ]
    lap = "finished" if replay["lap_completed"] else "had not finished"
    return section(
        "Real SuperTuxKart, `--quick` (§4.1-4.2)",
        "RELINE's case study on the real game through pystk2, with measured "
        "render times, at a budget far below the paper's "
        "(the paper trained each agent for 2,300 episodes, §4.1.3). Threshold "
        f"t = t_b + δ = {num(threshold['t_b_ms'], 2)} + "
        f"{num(threshold['delta_ms'], 2)} = {num(threshold['t_ms'], 2)} ms from "
        f"{num(threshold['baseline_render_times'])} render times "
        f"(paper t = {num(paper['threshold_ms'], 2)} ms from "
        f"{num(paper['baseline_render_times'])}).",
        table(["agent", "low-FPS points, ours", "paper", "median confidence, ours", "paper"], rows),
        f"Replays of one episode ({replay['per_step']['replays']} replays; the "
        f"episode {lap} the lap): per-step Spearman ρ median "
        f"{num(replay['per_step']['rho_median'], 2)}, min "
        f"{num(replay['per_step']['rho_min'], 2)}; per section "
        f"({replay['per_section']['steps']} sections) "
        f"median {num(replay['per_section']['rho_median'], 2)} (paper, per step "
        f"over {replay['paper']['replays']} replays: "
        f"min {num(replay['paper']['rho_min'], 2)}, median "
        f"{num(replay['paper']['rho_median'], 2)}).",
        provenance("reline_stk_quick.json", stk),
    )


def reline_level_section(results: Results) -> str:
    doom = results["reline_vizdoom_quick.json"]
    low_fps, replay, threshold, kart = (
        doom["low_fps"],
        doom["replay_reliability"],
        doom["threshold"],
        results["reline_stk_quick.json"]["paper"],
    )
    rows = [
        [label(a), str(low_fps[a]["count"]), pct(low_fps[a]["confidence_median"], 0)]
        for a in low_fps
    ]
    slowest = listing(
        f"({num(a['x'])}, {num(a['y'])}): {num(a['median_ms'], 2)} ms over {a['visits']} visits"
        for a in doom["slowest_areas"][:3]
    )
    return section(
        "Real Doom level (ViZDoom), `--quick`",
        "RELINE beyond the paper's games: Freedoom 2's MAP01 on the real Doom "
        "engine at a player's 640 × 480, with the level's terms "
        "(first visits to cells as the game reward, 10 a frame over t, the "
        "finish bonus at the exit; `jgtest.methods.reline.level`). "
        f"Threshold t = t_b + δ = {num(threshold['t_b_ms'], 2)} + "
        f"{num(threshold['delta_ms'], 2)} = {num(threshold['t_ms'], 2)} ms from "
        f"{num(threshold['baseline_render_times'])} render times (the paper's "
        f"kart: {num(kart['threshold_ms'], 2)} ms). The paper has no figures for this game.",
        table(["agent", "low-FPS points", "median confidence"], rows),
        "No area of the level exceeded t in most of its visits: the engine's "
        "software renderer costs about the same everywhere the agents went (median render time "
        f"{num(doom['medians_ms']['Regular FPS'], 2)} ms; the slowest areas {slowest}). "
        f"Replays of one episode ({replay['per_step']['replays']} replays): "
        f"per-step Spearman ρ median {num(replay['per_step']['rho_median'], 2)}, "
        f"min {num(replay['per_step']['rho_min'], 2)}; per area "
        f"({replay['per_section']['steps']} areas) median "
        f"{num(replay['per_section']['rho_median'], 2)}. {doom['note']}",
        provenance("reline_vizdoom_quick.json", doom),
    )


def medians(t: dict, agent: str) -> str:
    """An agent's Table 1 medians for n = 1 … k, as "a / b / c / d"."""
    return listing((num(e["median"]) for e in t[agent].values()), " / ")


def by_n(t: dict, agent: str) -> str:
    """An agent's Table 1 means for n = 1 … k, as "a / b / c / d"."""
    return listing((num(e["mean"]) for e in t[agent].values()), " / ")


def reline_page(results: Results) -> Page:
    cart, pac = (
        results["reline_table1.json"]["table1"],
        results["reline_pacmaze_package_table1.json"]["table1"],
    )
    runs = results["reline_mspacman_quick_table1.json"]["deterministic_game_runs"]
    intro = (
        "RELINE (Tufano et al., 2022) load-tests games with reinforcement "
        "learning: an agent rewarded for playing and for "
        "slow frames. The paper measured it against an agent trained only to "
        "play (rl-baseline) and a random agent: in its "
        "preliminary study (§3) by the episodes of 1,000 in which each finds "
        "the performance bugs injected into CartPole and "
        "MsPacman (Table 1), and in its case study (§4) by the low-FPS points "
        "each finds in SuperTuxKart. Our twins are "
        "CartPoleBugs-v0 (Gymnasium's CartPole, bit for bit), PacMaze-v0 (a "
        "Ms. Pac-Man-like maze with bugs at its tunnel gates) "
        "and KartTrack-v0 (a kart track whose frame times come from a hidden "
        "render-cost field); the real Ms. Pac-Man and "
        "SuperTuxKart run through the host bridges, at small budgets."
    )
    variants = [
        (
            "Ms. Pac-Man without sticky actions (a deterministic game: each "
            "trained model's evaluation episodes were one trajectory), "
            f"episodes with at least n = 1 … {len(runs['table1']['reline'])} gates: "
            f"RELINE {by_n(runs['table1'], 'reline')} (a second model, seed 1: "
            f"{by_n({'reline': runs['reline_seed1']['table1']}, 'reline')}), "
            f"rl-baseline {by_n(runs['table1'], 'rl-baseline')}, "
            f"random {by_n(runs['table1'], 'random')}; the file's `deterministic_game_runs`",
            "reline_mspacman_quick_table1.json",
        ),
    ]
    sections = [
        *reline_toy_sections(results),
        *reline_ale_section(results),
        reline_kart_section(results),
        reline_stk_section(results),
        reline_level_section(results),
    ]
    body = "\n\n".join([intro, *sections])
    summary = (
        f"Table 1, episodes of {num(results['reline_table1.json']['eval_episodes'])} with at least "
        f"one bug: CartPole RELINE {num(cart['reline']['1']['mean'])} "
        f"(paper {num(cart['reline']['1']['paper']['mean'])}), rl-baseline "
        f"{num(cart['rl-baseline']['1']['mean'])} "
        f"({num(cart['rl-baseline']['1']['paper']['mean'])}); PacMaze, at least "
        f"1 … {len(pac['reline'])} bugs, RELINE {by_n(pac, 'reline')} (paper "
        f"{listing((num(e['paper']['mean']) for e in pac['reline'].values()), ' / ')}), "
        f"rl-baseline {by_n(pac, 'rl-baseline')} (paper "
        f"{listing((num(e['paper']['mean']) for e in pac['rl-baseline'].values()), ' / ')}); "
        "both under the replication package's protocol."
    )
    return Page(
        "reline", "RELINE: load testing with reinforcement learning", summary, body, tuple(variants)
    )
