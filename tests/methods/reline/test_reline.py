"""RELINE: config checks, the pure analysis pieces, and tiny end-to-end runs on CartPole and the
kart."""

import json

import jax
import numpy as np
import pytest

import jgtest
import jgtest.analysis
from jgtest.errors import BadInput
from jgtest.methods import reline
from jgtest.oracles.kart_stuck import until_stuck
from jgtest.records import read_bug_records
from jgtest.report.replay import replay

TINY_CEM = (
    ("num_iterations", 2),
    ("num_evals", 1),
    ("episodes_per_iter", 4),
    ("elite_episodes", 3),
    ("eval_episodes", 1),
)
TINY_DQN = (
    ("total_timesteps", 160),
    ("learning_starts", 40),
    ("num_evals", 2),
    ("eval_episodes", 1),
    ("buffer_size", 64),
)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"game": "Pong-v0"}, "RELINE runs on"),
        ({"game": "PacMaze-v0", "agents": ("reline", "greedy")}, "unknown RELINE agent"),
        ({"game": "KartTrack-v0", "theta": -1.0}, "theta"),
        ({"game": "KartTrack-v0", "progress_cap": -10.0}, "progress_cap"),
        ({"game": "CartPoleBugs-v0", "models": 0}, "models"),
        ({"game": "KartTrack-v0", "agents": ("reline", "random")}, "needs rl-baseline"),
        ({"game": "CartPoleBugs-v0", "replays": 1}, "replays"),
        ({"game": "ale:MsPacman", "ray_address": "auto"}, "set actors too"),
        ({"game": "PacMaze-v0", "actors": 2}, "for bridged games"),
    ],
)
def test_bad_config_is_refused_before_anything_compiles(kwargs, match):
    with pytest.raises(ValueError, match=match):
        reline.RelineConfig(**kwargs)


# the command line's: tests/cli/test_bad_invocations.py
def test_bad_input_errors_name_the_problem():
    with pytest.raises(ValueError, match="no field"):
        reline.learner(
            reline.RelineConfig(game="CartPoleBugs-v0", learner_overrides=(("bogus", 1),))
        )
    with pytest.raises(ValueError, match="more bugs than the game has"):  # n > k
        jgtest.analysis.at_least_n_table([[3, 0]], num_bugs=2)
    with pytest.raises(ValueError, match="at least two"):
        jgtest.oracles.reline_threshold([18.0])


def _bugs(counts, k):
    """``bool[N, E, k]`` with the first ``counts[m][e]`` bugs found."""
    counts = np.asarray(counts)
    out = np.zeros(counts.shape + (k,), bool)
    for idx in np.ndindex(counts.shape):
        out[idx][: counts[idx]] = True
    return out


def test_table1_counts_episodes_with_at_least_n_bugs_next_to_the_paper():
    config = reline.RelineConfig(game="CartPoleBugs-v0")
    found = {"reline": _bugs([[2, 1, 0, 2], [1, 1, 1, 0], [2, 2, 2, 2]], k=2)}
    rows = reline.table1(config, found)["reline"]
    assert rows["1"]["counts"] == [3, 3, 4] and rows["2"]["counts"] == [2, 0, 4]
    assert (
        rows["2"]["mean"] == pytest.approx(2.0)
        and rows["2"]["median"] == 2.0
        and rows["2"]["sd"] == pytest.approx(2.0)
    )
    assert (
        rows["1"]["paper"] == {"mean": 965, "median": 984, "sd": 47}
        and rows["2"]["paper"]["mean"] == 102
    )


def test_until_stuck_cuts_an_episode_when_the_kart_stops_advancing():
    delta = np.array([[5.0] * 12 + [0.05] * 12 + [5.0] * 6])
    valid = np.ones_like(delta, bool)
    valid[0, -2:] = False
    kept = until_stuck(delta, valid)
    # Steps 12..21 advance 0.5 units in all: the first stuck window; the episode ends before it.
    assert kept[0, :12].all() and not kept[0, 12:].any()
    # A slow patch shorter than the window, or at the very start, long enough: also handled.
    short = np.array([[5.0] * 5 + [0.05] * 9 + [5.0] * 10])
    assert until_stuck(short, np.ones_like(short, bool)).all()
    start = np.array([[0.0] * 10 + [5.0] * 5])
    assert not until_stuck(start, np.ones_like(start, bool)).any()


def test_cell_centres_and_heavy_spots_found():
    env, params = jgtest.make("KartTrack-v0")
    pos = np.asarray(params.heavy_pos)
    cells = np.asarray([int(env.cell_of(params, p, c)) for p, c in pos])
    where = reline.cell_centres(env, params, cells)
    path_done, centering = where["path_done"], where["centering"]
    assert np.all(np.abs(path_done - pos[:, 0]) <= env.track_length / env.map_shape[0] / 2 + 1e-3)
    assert np.all(np.abs(centering - pos[:, 1]) <= 60.0 / env.map_shape[1] / 2 + 1e-3)
    assert reline.heavy_spots_found(params, path_done[[0, 3]], centering[[0, 3]]) == [0, 3]
    assert reline.heavy_spots_found(params, np.array([900.0]), np.array([-25.0])) == []


@pytest.fixture(scope="module")
def cartpole_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("reline_cartpole")
    config = reline.RelineConfig(
        game="CartPoleBugs-v0",
        models=2,
        eval_episodes=16,
        learner_overrides=TINY_CEM,
        game_kwargs=(("max_steps_in_episode", 80),),
    )
    return config, reline.run(config, out), out


def test_cartpole_run_writes_table1_summary_and_replayable_records(cartpole_run):
    config, summary, out = cartpole_run
    written = json.loads((out / "table1.json").read_text())
    assert (
        written["protocol"]
        == summary["protocol"]
        == {"elites": "percentile", "elite_percentile": 70.0, "evaluation": "training"}
    )
    table = written["table1"]
    assert set(table) == {"reline", "rl-baseline", "random"} and set(table["random"]) == {"1", "2"}
    for rows in table.values():
        assert len(rows["1"]["counts"]) == 2 and all(0 <= c <= 16 for c in rows["1"]["counts"])
        assert rows["2"]["mean"] <= rows["1"]["mean"]
    assert table["random"]["1"]["paper"]["mean"] == 12
    assert set(summary["phases_s"]) >= {
        "train reline",
        "evaluate reline (learning)",
        "evaluate random",
    }
    records = read_bug_records(out / "bugs.jsonl")
    # One record per (agent, model, bug) found; each replays on the bare game.
    found = sum(int(np.sign(np.sum(r["counts"]))) for rows in table.values() for r in [rows["1"]])
    assert len(records) >= found
    for record in records[:4]:
        assert record.game_kwargs == {"max_steps_in_episode": 80}
        assert replay(record).reproduced


class _Killed(Exception):
    pass


def test_a_run_stopped_mid_training_resumes_to_the_uninterrupted_result(tmp_path):
    """Training is checkpointed every period; a resumed run ends with the same table, curves and
    records."""
    learner = tuple(dict(TINY_CEM, num_evals=2).items())
    config = reline.RelineConfig(
        game="CartPoleBugs-v0",
        models=2,
        eval_episodes=8,
        agents=("reline", "random"),
        learner_overrides=learner,
        game_kwargs=(("max_steps_in_episode", 60),),
    )
    for run_dir in ("whole", "killed"):
        (tmp_path / run_dir).mkdir()
    whole = reline.run(config, tmp_path / "whole")

    def stop_after_one_period(phase, done, total):
        if phase == "train reline" and done == 1:
            raise _Killed

    with pytest.raises(_Killed):
        reline.run(config, tmp_path / "killed", progress=stop_after_one_period)
    assert (tmp_path / "killed" / "checkpoints" / "train-reline").is_dir() and not (
        tmp_path / "killed" / "summary.json"
    ).exists()
    resumed = reline.run(config, tmp_path / "killed", resume=True)
    assert (
        resumed["table1"] == whole["table1"]
        and resumed["training_curves"] == whole["training_curves"]
    )
    strip = lambda records: [r.__class__(**{**r.__dict__, "wall_s": 0.0}) for r in records]
    assert strip(read_bug_records(tmp_path / "killed" / "bugs.jsonl")) == strip(
        read_bug_records(tmp_path / "whole" / "bugs.jsonl")
    )


def test_the_package_protocol_learns_through_evaluation_and_the_papers_freezes(
    cartpole_run, tmp_path
):
    """Under ``evaluation="training"`` the models keep fitting their elites between batches of 16
    evaluation episodes (the replication package), so their evaluation differs from the frozen
    models'; each protocol's records replay, and the rank rule (the paper's m = 11) is the
    option."""
    config, summary, _ = cartpole_run
    from dataclasses import replace

    frozen = reline.run(
        replace(config, evaluation="frozen", elites="rank", agents=("rl-baseline",)), tmp_path
    )
    assert frozen["protocol"] == {
        "elites": "rank",
        "elite_percentile": 70.0,
        "evaluation": "frozen",
    }
    assert "evaluate rl-baseline" in frozen["phases_s"]
    for record in read_bug_records(tmp_path / "bugs.jsonl")[:2]:
        assert replay(record).reproduced


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("elites", "top", "elites must be one of percentile, rank"),
        ("elite_percentile", 100, "elite_percentile must be in \\(0, 100\\)"),
        ("elite_percentile", 0.0, "elite_percentile must be in \\(0, 100\\)"),
        ("evaluation", "online", "evaluation must be one of training, frozen"),
    ],
)
def test_an_unknown_protocol_is_refused_by_name(field, value, message):
    with pytest.raises(BadInput, match=message):
        reline.RelineConfig(game="CartPoleBugs-v0", **{field: value})
    # the real kart learns as it is evaluated
    assert reline.RelineConfig(game="supertuxkart:lighthouse").evaluation == "training"
    with pytest.raises(BadInput, match="evaluates while it trains"):
        reline.RelineConfig(game="supertuxkart:lighthouse", evaluation="frozen")


TINY_PACMAZE_DQN = (
    ("total_timesteps", 800),
    ("learning_starts", 40),
    ("num_evals", 2),
    ("buffer_size", 64),
)


@pytest.fixture(scope="module")
def pacmaze_learning_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("reline_pacmaze")
    config = reline.RelineConfig(
        game="PacMaze-v0",
        models=2,
        eval_episodes=4,
        agents=("reline", "random"),
        learner_overrides=TINY_PACMAZE_DQN,
        game_kwargs=(("max_steps_in_episode", 120),),
    )
    return config, reline.run(config, out), out


@pytest.mark.slow
def test_pacmaze_learns_through_the_episodes_table1_counts(pacmaze_learning_run):
    """The package's protocol on PacMaze: no separate evaluation; each model plays its step budget
    and at least E episodes, stopping at an episode's end; its bugs replay from the learning
    episodes."""
    config, summary, out = pacmaze_learning_run
    assert summary["protocol"] == {"evaluation": "training"}
    assert set(summary["phases_s"]) == {
        "learn reline, counting its last 4 episodes",
        "evaluate random",
    }
    runs = summary["learning_runs"]["reline"]
    assert all(s >= 800 for s in runs["steps"]) and all(e >= 4 for e in runs["episodes"])
    assert len(summary["training_curves"]["reline"]["train_return_mean"]) == 2
    learned = [r for r in read_bug_records(out / "bugs.jsonl") if r.detail.startswith("reline")]
    assert all(
        "learning episode" in r.detail and r.env_index == 0 and replay(r).reproduced
        for r in learned
    )
    table = summary["table1"]["reline"]
    assert (
        all(0 <= c <= 4 for c in table["1"]["counts"]) and table["4"]["mean"] <= table["1"]["mean"]
    )


#: A corridor between two gates that a life starts running along (PacMaze's lives start heading
#: left).
GATE_CORRIDOR = "#########\nT...P...T\n#.#####G#\n#.......#\n#########"


@pytest.mark.slow
def test_a_learning_run_counts_exactly_its_last_episodes():
    """With more counted episodes than the budget plays, a run lasts exactly E episodes, so every
    bug it caught is in the counted window and none it did not catch is; the window is a ring of the
    last E. Each catch is a bug record of its learning episode that replays on the bare game."""
    from jgtest.methods.reline.device import training_game
    from jgtest.methods.reline.learning_run import learn_and_count

    config = reline.RelineConfig(
        game="PacMaze-v0",
        learner_overrides=(
            ("total_timesteps", 200),
            ("learning_starts", 40),
            ("num_evals", 2),
            ("buffer_size", 64),
        ),
        game_kwargs=(("layout", GATE_CORRIDOR), ("max_steps_in_episode", 30)),
    )
    learn = reline.learner(config)
    env, params = jgtest.make(config.game, **reline.game_options(config))
    game = training_game(learn, env, "rl-baseline")
    trainer = learn.module.make_agent(learn.config, (game, params))
    seeds = [reline.eval_seed(config, "rl-baseline", m) for m in range(3)]
    run = learn_and_count(
        trainer,
        game,
        params,
        learn.hparams,
        jax.random.split(jax.random.key(0), 3),
        seeds,
        12,
        30,
        env.num_bugs,
    )
    assert run["episodes"].tolist() == [12, 12, 12] and (run["steps"] > 200).all()
    np.testing.assert_array_equal(run["counted"].any(axis=1), run["catch"].found)
    records = reline.caught_records(
        config, env, params, run["catch"], "rl-baseline", reline.game_options(config), 0.0
    )
    assert len(records) == run["catch"].found.sum() == 6
    for record in records:
        assert " learning episode " in record.detail and replay(record).reproduced


@pytest.mark.slow
def test_a_learning_run_stopped_mid_way_resumes_to_the_uninterrupted_result(
    pacmaze_learning_run, tmp_path
):
    """A learning run is checkpointed every period; resumed, it ends with the uninterrupted run's
    table, curves, episode counts and records."""
    config, whole, out = pacmaze_learning_run
    phase = f"learn reline, counting its last {config.eval_episodes} episodes"

    def stop_after_one_period(name, done, total):
        if name == phase and done == 1:
            raise _Killed

    with pytest.raises(_Killed):
        reline.run(config, tmp_path, progress=stop_after_one_period)
    assert (tmp_path / "checkpoints" / "learn-reline").is_dir() and not (
        tmp_path / "summary.json"
    ).exists()
    reported = []
    resumed = reline.run(
        config,
        tmp_path,
        resume=True,
        progress=lambda name, done, total: reported.append(done) if name == phase else None,
    )
    assert reported[:2] == [0, 2], "resumed after the first period"
    for key in ("table1", "training_curves", "learning_runs"):
        assert resumed[key] == whole[key]
    strip = lambda records: [r.__class__(**{**r.__dict__, "wall_s": 0.0}) for r in records]
    assert strip(read_bug_records(tmp_path / "bugs.jsonl")) == strip(
        read_bug_records(out / "bugs.jsonl")
    )


@pytest.mark.slow
@pytest.mark.parametrize("evaluation", ["training", "frozen"])
def test_the_kart_twin_finds_low_fps_points_under_either_protocol(evaluation, tmp_path):
    """Under the package's protocol the learners' low-FPS points come from the last episodes of
    their learning runs (their cells and frame times kept on device); frozen, from separate
    evaluations."""
    config = reline.RelineConfig(
        game="KartTrack-v0",
        evaluation=evaluation,
        eval_episodes=3,
        threshold_episodes=4,
        warmup_episodes=2,
        replays=3,
        learner_overrides=TINY_DQN,
        game_kwargs=(("max_steps_in_episode", 40),),
    )
    summary = reline.run(config, tmp_path)
    low = json.loads((tmp_path / "low_fps.json").read_text())
    assert (
        set(low["per_agent"]) == {"reline", "rl-baseline", "random"}
        and summary["threshold"]["t_ms"] > 0
    )
    assert summary["replay_reliability"]["replays"] == 3
    learned = {
        "learn reline, counting its last 3 episodes",
        "learn rl-baseline, counting its last 3 episodes",
    }
    if evaluation == "training":
        assert learned <= set(summary["phases_s"]) and "evaluate reline" not in summary["phases_s"]
        assert all(e >= 3 for run in summary["learning_runs"].values() for e in run["episodes"])
    else:
        assert not learned & set(summary["phases_s"]) and {
            "train reline",
            "evaluate reline",
        } <= set(summary["phases_s"])
    # every agent visited cells over its counted episodes: at most 3 episodes of 40 steps
    assert all(0 < row["visits_mean"] <= 120 for row in low["per_agent"].values() if row["count"])
