"""The host loop of a park testing campaign, shared by Inspector, random and PPGTA (§VI-A).

:func:`run_campaign` plays a campaign's jitted pieces round by round, keeps the books (coverage,
test outcomes, bug records as tests end) and checkpoints after every round.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import jax
import numpy as np

from jgtest.analysis.exploration import ooi_outcomes, ooi_tested_curve, pathway_coverage_curve
from jgtest.checkpoint import Checkpointer, config_fingerprint, strongly_typed
from jgtest.envs.park import TRACE_RADIUS, trace_cells
from jgtest.envs.park_render import OOI_TYPES, TEXTURE_BUGS
from jgtest.files import jsonable, write_json_atomically
from jgtest.oracles.texture import walk_precision_recall
from jgtest.records import BugRecord, BugRecordWriter, records_to_resume
from jgtest.run_dir import begin_campaign
from jgtest.types import Progress

#: PPGTA §VI-A–B, Fig. 7–9: pathway coverage after 45 episodes; OOIs tested after 18 and 45
#: episodes; test success rate (successful tests over all objects).
PAPER = {
    "inspector": {
        "pathway_coverage_45": 0.16,
        "ooi_tested_18": 19,
        "ooi_tested_45": 40,
        "test_success_rate": 0.16,
    },
    "random": {"ooi_tested_18": 9, "ooi_tested_45": 17},
    "ppgta": {"pathway_coverage_45": 0.80, "ooi_tested_18": 192, "test_success_rate": 0.71},
    "ooi_total": 247,
}


def oracle_outputs(oracle, next_frames: jax.Array, event: dict) -> dict:
    """Inside a rollout step: the oracle's probabilities for the object under test in each game's
    new frame (``bug_prob [N, 3]``) and whether that frame shows it well enough to count
    (``shown [N]``)."""
    return {
        "bug_prob": oracle.probabilities(next_frames, event["target_box"]),
        "shown": (event["target"] >= 0) & (event["target_pixels"] >= oracle.config.min_pixels),
    }


def check_rounds(config) -> None:
    """Checks that a campaign's ``episodes`` make whole rounds of its ``num_envs`` games and that
    its ``rollout_steps`` divide ``episode_steps``.

    Raises:
      ValueError: they do not.
    """
    if config.episodes % config.num_envs:
        raise ValueError(
            f"episodes ({config.episodes}) must be a multiple of num_envs ({config.num_envs})"
        )
    if config.episode_steps % config.rollout_steps:
        raise ValueError(
            f"rollout_steps ({config.rollout_steps}) must divide episode_steps "
            f"({config.episode_steps})"
        )


class CampaignPieces:
    """A campaign's jitted pieces as :func:`run_campaign` plays them, compiled (:meth:`compile`)
    from a subclass's ``_init(key)``, ``_start_round(carry, round_index)`` and
    ``_rollout(carry, key)``."""

    def compile(self) -> None:
        """Sets ``init``, ``start_round`` (its carry typed as a restored round's) and ``rollout``,
        each compiled: eager initialisation dispatches op by op (seconds on CPU)."""
        self.init = jax.jit(self._init)
        self.start_round = jax.jit(
            lambda carry, round_index: strongly_typed(self._start_round(carry, round_index))
        )
        self.rollout = jax.jit(self._rollout)


def _fresh_books(c, env) -> dict:
    k = env.num_oois
    return {
        "round": np.int32(0),
        "elapsed_s": np.float64(0.0),
        "visited": np.zeros((c.episodes, env.size, env.size), bool),
        "success": np.zeros(k, bool),
        "walked": np.zeros(k, bool),
        "tested_in": np.full(k, -1, np.int32),
        "bug_sum": np.zeros((k, 3), np.float32),
        "bug_count": np.zeros(k, np.int32),
        "flagged": np.zeros(k, bool),
        "js": np.full(k, np.nan, np.float32),
        "traces": np.zeros((c.rounds, c.episode_steps, c.num_envs, 2), np.float32),
    }


def run_campaign(
    campaign,
    method: str,
    out_dir: str | Path,
    oracle=None,
    progress: Progress | None = None,
    resume: bool = False,
    extra_config: dict | None = None,
) -> dict:
    """Runs ``campaign`` in ``out_dir``; returns the summary (:func:`summarise`).

    ``campaign`` (:class:`jgtest.methods.park.inspector.InspectorCampaign`,
    :class:`jgtest.methods.park.ppgta.PPGTACampaign`) gives the jitted pieces
    ``init(key) -> carry``, ``start_round(carry, round) -> carry`` and
    ``rollout(carry, key) -> (carry, out)``, ``out`` holding per step and game ``position``,
    ``executed``, the tester's events (``done``, ``success``, ``walked``, ``target``) and, with a
    texture oracle, ``bug_prob [T, N, 3]`` and ``shown [T, N]`` (:func:`oracle_outputs`). It plays
    ``episodes / num_envs`` rounds of ``episode_steps`` steps, keeping the cells each episode's
    trace covered (:func:`jgtest.envs.park.trace_cells`), each object's outcome and episode, and
    the oracle's evidence per object. A bug record (with the oracle, a record per object it flags,
    judged from the frames of its walk; without, a record per texture-bugged object whose test
    succeeded) is written the moment its test ends; an orbax checkpoint after every round. Files:
    ``config.json``, ``bugs.jsonl``, ``checkpoints/``, ``summary.json``, ``traces.png`` and
    ``tests.png`` (Fig. 7 and 9).

    Args:
      method: the agent's name in the files (``"inspector"``, ``"random"``, ``"ppgta"``).
      oracle: the campaign's texture oracle (:class:`jgtest.oracles.texture.TextureOracle`), if any.
      progress: called after each round with ``(episodes done, episodes, objects tested)``.
      resume: continue from the latest checkpoint in ``out_dir``, keeping the records already
        written and writing none twice.
    """
    c, env, params = campaign.config, campaign.env, campaign.params
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    begin_campaign(
        out_dir,
        {
            "method": method,
            "game": "ParkWorld-v0",
            **jsonable(dataclasses.asdict(c)),
            **(extra_config or {}),
        },
        config_fingerprint(c),
        resume,
    )
    carry = campaign.init(jax.random.key(c.seed))
    # what start_round reads: it is given only these, so it is traced and compiled once, not again
    # for a played round's carry
    learner_keys = tuple(carry)
    books = _fresh_books(c, env)
    bugs = np.asarray(params.ooi_bug)
    with (
        Checkpointer(out_dir / "checkpoints", config_fingerprint(c)) as ckpt,
        BugRecordWriter(out_dir / "bugs.jsonl") as writer,
    ):
        written = {
            r.bug_id for r in records_to_resume(out_dir, resume)
        }  # read once the writer has cut a torn last line
        if (
            resume and ckpt.latest_step() is not None
        ):  # a round's carry: what the learner keeps and the round's games
            carry, books = ckpt.restore((campaign.start_round(carry, 0), books))
            books = jax.tree.map(np.asarray, books)
        start = time.perf_counter() - float(books["elapsed_s"])
        for r in range(int(books["round"]), c.rounds):
            carry = campaign.start_round({key: carry[key] for key in learner_keys}, r)
            executed = []
            for k in range(c.episode_steps // c.rollout_steps):
                carry, out = campaign.rollout(
                    carry, jax.random.fold_in(jax.random.key(c.seed + 1), r * 100_003 + k)
                )
                out = jax.device_get(out)
                executed.append(out["executed"])
                span = slice(k * c.rollout_steps, (k + 1) * c.rollout_steps)
                books["traces"][r, span] = out["position"]
                rows, cols, within = trace_cells(
                    out["position"]
                )  # [T, N, M]: what each trace covers
                within &= (rows >= 0) & (rows < env.size) & (cols >= 0) & (cols < env.size)
                for i in range(c.num_envs):
                    books["visited"][
                        r * c.num_envs + i, rows[:, i][within[:, i]], cols[:, i][within[:, i]]
                    ] = True
                if oracle is not None:
                    t_idx, i_idx = np.nonzero(out["shown"])
                    np.add.at(
                        books["bug_sum"], out["target"][t_idx, i_idx], out["bug_prob"][t_idx, i_idx]
                    )
                    np.add.at(books["bug_count"], out["target"][t_idx, i_idx], 1)
                for t, i in zip(*np.nonzero(out["done"] >= 0)):
                    obj = int(out["done"][t, i])
                    if books["tested_in"][obj] >= 0:
                        # two games tested it in the same step (their memory is shared after it)
                        continue
                    books["success"][obj], books["walked"][obj], books["js"][obj] = (
                        out["success"][t, i],
                        out["walked"][t, i],
                        out["js"][t, i],
                    )
                    books["tested_in"][obj] = r * c.num_envs + i
                    found, detail = _verdict(
                        oracle, books, obj, bool(out["success"][t, i]), bugs, params
                    )
                    if found and obj not in written:
                        step = k * c.rollout_steps + int(t)
                        actions = np.concatenate(executed)[: step + 1, i]
                        writer.write(
                            BugRecord(
                                kind="texture",
                                game="ParkWorld-v0",
                                bug_id=obj,
                                step=step,
                                episode=r,
                                seed=c.seed,
                                env_index=int(i),
                                actions=tuple(int(a) for a in actions),
                                game_kwargs=c.game_kwargs,
                                position=tuple(float(v) for v in out["position"][t, i]),
                                wall_s=round(time.perf_counter() - start, 3),
                                detail=f"{method}: {detail}",
                            )
                        )
                        written.add(obj)
            books["round"], books["elapsed_s"] = (
                np.int32(r + 1),
                np.float64(time.perf_counter() - start),
            )
            ckpt.save(r + 1, (carry, books))
            if progress is not None:
                progress((r + 1) * c.num_envs, c.episodes, int((books["tested_in"] >= 0).sum()))
    summary = summarise(
        method, c, env, params, books, oracle is not None, time.perf_counter() - start
    )
    write_json_atomically(out_dir / "summary.json", summary)
    from jgtest.report.park_maps import tests_map, traces_map

    traces_map(
        env.map,
        books["traces"].reshape(-1, c.num_envs, 2),
        out_dir / "traces.png",
        f"{method}: {c.episodes} episodes",
    )
    tests_map(
        env.map,
        np.asarray(params.ooi_pos),
        summary["outcomes"],
        env.ooi_reachable(params),
        out_dir / "tests.png",
        f"{method}: OOI tests",
    )
    return summary


def restore_carry(campaign, out_dir: str | Path) -> dict:
    """The carry (what the learner learned: ``carry["ppo"]``, ``carry["rnd"]``, …) of ``campaign``'s
    run in ``out_dir`` at its last checkpoint; ``campaign`` is built from that run's ``config.json``
    (a different config is refused by the checkpoint's fingerprint).

    Raises:
      ValueError: if ``out_dir`` holds no checkpoint, or one of another config."""
    c, where = campaign.config, Path(out_dir) / "checkpoints"
    if not where.is_dir():
        raise ValueError(f"{out_dir}: no checkpoints/ (not a campaign's run directory)")
    like = jax.eval_shape(lambda: campaign.start_round(campaign.init(jax.random.key(c.seed)), 0))
    with Checkpointer(where, config_fingerprint(c), loop=False) as ckpt:
        if ckpt.latest_step() is None:
            raise ValueError(
                f"{out_dir}: no checkpoint of a finished round to take the trained agent from"
            )
        carry, _ = ckpt.restore((like, _fresh_books(c, campaign.env)))
    return carry


def _verdict(oracle, books, obj: int, success: bool, bugs, params) -> tuple[bool, str]:
    """Whether the object's finished test is a bug record, and the record's text."""
    kind = OOI_TYPES[int(params.ooi_type[obj])]
    outcome = "succeeded" if success else "failed"
    if oracle is None:
        return (
            success and bugs[obj] > 0,
            f"{TEXTURE_BUGS[bugs[obj]].replace('_', '-')} texture on object {obj} ({kind}), 360° "
            "test completed",
        )
    count = int(books["bug_count"][obj])
    probs = books["bug_sum"][obj] / max(count, 1)
    flagged, bug, score = oracle.judge(probs[None], np.array([count > 0]))
    books["flagged"][obj] = flagged
    return flagged, (
        f"texture oracle flags a {TEXTURE_BUGS[bug].replace('_', '-')} texture on object {obj} "
        f"({kind}): "
        f"P(bug) {score:.2f} over {count} frames of its test, which {outcome}"
    )


def summarise(method: str, c, env, params, books: dict, with_oracle: bool, wall_s: float) -> dict:
    """``summary.json``: coverage, tests, success rate, texture bugs, curves, per-object outcomes,
    the paper's numbers, and the share of all steps (tests' too) the player stood on a pathway
    (``steps_on_pathway``: how well an explorer keeps to the preferred area, beyond the paper)."""
    path = env.map.path
    visited, success, tested_in = books["visited"], books["success"], books["tested_in"]
    tested = tested_in >= 0
    reachable = env.ooi_reachable(params)
    coverage = pathway_coverage_curve(visited, path)
    coverage_reachable = pathway_coverage_curve(visited, path & env.map.main)
    tested_by = ooi_tested_curve(tested_in, c.episodes)
    outcomes = ooi_outcomes(success, tested, reachable)
    bugged = np.asarray(params.ooi_bug) > 0
    at = lambda curve, n: curve[min(n, c.episodes) - 1]
    cells = np.clip(
        np.floor(books["traces"]).astype(np.int64), 0, env.size - 1
    )  # [rounds, T, N, (x, y)]
    summary = {
        "method": method,
        "game": "ParkWorld-v0",
        "episodes": c.episodes,
        "episode_steps": c.episode_steps,
        "pathway_coverage": float(coverage[-1]),
        "pathway_coverage_of_reachable": float(coverage_reachable[-1]),
        "trace_radius": TRACE_RADIUS,
        "steps_on_pathway": float(path[cells[..., 1], cells[..., 0]].mean()),
        "ooi_tested": int(tested.sum()),
        "ooi_success": outcomes["success"],
        "ooi_failed": outcomes["failed"],
        "ooi_walked_around": int(books["walked"].sum()),
        "ooi_total": env.num_oois,
        "ooi_unreachable": outcomes["unreachable"],
        "ooi_missed_unreachable": outcomes["missed_unreachable"],
        "test_success_rate": outcomes["success"] / env.num_oois,
        "texture_bugs_total": int(bugged.sum()),
        "texture_bugs_tested": int((tested & bugged).sum()),
        "curves": {
            "episode": list(range(1, c.episodes + 1)),
            "pathway_coverage": coverage.tolist(),
            "pathway_coverage_of_reachable": coverage_reachable.tolist(),
            "ooi_tested": tested_by.tolist(),
        },
        "at_paper_episodes": {
            "ooi_tested_18": int(at(tested_by, 18)),
            "ooi_tested_45": int(at(tested_by, 45)),
            "pathway_coverage_45": float(at(coverage, 45)),
            "pathway_coverage_of_reachable_45": float(at(coverage_reachable, 45)),
        },
        "paper": PAPER,
        "outcomes": outcomes["outcome"].tolist(),
        "reachable": reachable.tolist(),
        "wall_s": round(wall_s, 2),
    }
    if np.isfinite(
        books["js"]
    ).any():  # learned tests: each tested object's JS divergence, to judge under any threshold
        summary["test_js"] = [float(v) if np.isfinite(v) else None for v in books["js"]]
    if with_oracle:
        summary["texture_bugs_found"] = int((books["flagged"] & tested & bugged).sum())
        summary["texture_oracle"] = walk_precision_recall(books["flagged"][tested], bugged[tested])
    else:
        summary["texture_bugs_found"] = int((success & bugged).sum())
    return summary
