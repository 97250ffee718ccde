"""Wuji campaigns: every strategy runs, records are written as found and replay, bad configs
refused."""

import dataclasses
import json
import tempfile

import jax
import numpy as np
import pytest

from jgtest.agents.wuji_a2c import WujiA2CConfig
from jgtest.methods import wuji
from jgtest.methods.wuji.device import run_on_device
from jgtest.methods.wuji.placements import jitted_randomize
from jgtest.methods.wuji.search import offspring, search_for, shared_search
from jgtest.methods.wuji.strategies import REGISTRY, Ask, Strategy
from jgtest.records import read_bug_records
from jgtest.report import replay as replay_module
from jgtest.report.replay import replay

TINY_A2C = WujiA2CConfig(hidden_sizes=(16, 16, 16), num_envs=4, updates_per_round=5, max_rounds=2)


#: A variant of the arena (a game option of each kind): a weaker boss, late bugs at 90% of its hp.
ARENA_VARIANT = (("boss_max_hp", 120), ("late_phases", (0.9,)))


@pytest.mark.parametrize(
    "game, game_kwargs",
    [
        ("BlockMaze-v0", ()),
        pytest.param("CombatArena-v0", ARENA_VARIANT, marks=pytest.mark.slow),
        pytest.param("NSHArena-v0", (), marks=pytest.mark.slow),
    ],
)
def test_a_wuji_campaign_records_replayable_bugs_and_its_population(game, game_kwargs, tmp_path):
    config = wuji.WujiConfig(
        game=game, game_kwargs=game_kwargs, population=4, generations=2, seed=3, a2c=TINY_A2C
    )
    summary = run_on_device(config, tmp_path)
    records = read_bug_records(tmp_path / "bugs.jsonl")
    assert summary["bugs_found"] == len(records) == len({r.bug_id for r in records}) > 0
    replay_module._game.cache_clear()
    assert all(replay(r).reproduced for r in records)
    # the campaign's records share one game and one compiled replay
    assert replay_module._game.cache_info().misses == 1
    # each record carries the env step at which its bug was first found, as the summary does
    assert {r.bug_id: r.env_step for r in records} == {
        k: v for k, v in enumerate(summary["first_found_step"]) if v is not None
    }
    assert all(0 < r.env_step <= summary["env_steps"] for r in records)
    if game == "NSHArena-v0":  # bugs fixed where injected, counted by reach class
        assert (
            records[0].game_kwargs == {}
            and sum(c["of"] for c in summary["bugs_by_reach_class"].values()) == 21
        )
        return
    # the run's bugs were re-drawn: the records carry the placement (and the campaign's options)
    # that rebuild the game
    assert (
        records[0].game_kwargs
        and json.loads((tmp_path / "config.json").read_text())["game_kwargs"]
        == records[0].game_kwargs
    )
    for name, value in game_kwargs:
        assert records[0].game_kwargs[name] == (list(value) if isinstance(value, tuple) else value)
    assert summary["generations"] == 2 and 0 < summary["state_coverage"] <= summary["env_steps"]
    population = json.loads((tmp_path / "population.json").read_text())
    assert (
        len(population["exploration"]) == len(population["winning"]) == 4
        and min(population["front"]) == 0
    )
    # timeline: steps and bugs never go down
    steps, bugs = (
        np.asarray([t[1] for t in summary["timeline"]]),
        np.asarray([t[2] for t in summary["timeline"]]),
    )
    assert (
        (np.diff(steps) > 0).all()
        and (np.diff(bugs) >= 0).all()
        and bugs[-1] == summary["bugs_found"]
    )
    written = [json.loads(line) for line in (tmp_path / "timeline.jsonl").read_text().splitlines()]
    assert written == [list(row) for row in summary["timeline"]]  # the curve is on disk as it grows


def test_offspring_cross_whole_layers_in_compute_order_and_mutate_weights_only():
    import jax
    import jax.numpy as jnp

    from jgtest.evo import VariationParams
    from jgtest.nets import BatchNormActorCritic

    net = BatchNormActorCritic(num_actions=3, hidden_sizes=(4, 4, 4))
    member = net.init(jax.random.key(0), jnp.zeros((1, 2)))
    # member i: every weight i, every running statistic 10 + i
    population = {
        part: jax.tree.map(
            lambda x, part=part: jnp.stack(
                [jnp.full_like(x, i + 10 * (part == "batch_stats")) for i in range(4)]
            ),
            member[part],
        )
        for part in ("params", "batch_stats")
    }
    children = offspring(
        jax.random.key(1),
        population,
        jnp.zeros((4, 1)),
        VariationParams(1.0, 0.0, 0.1),
        net.layer_names(),
    )
    mixed = 0
    for c in range(4):
        # which member each leaf came from, in the network's order; a batch-norm layer's statistics
        # before its weights
        parent = []
        for name in net.layer_names():
            leaves = (
                [children["batch_stats"][name][k][c] - 10 for k in ("mean", "var")]
                if name in children["batch_stats"]
                else []
            )
            leaves += [leaf[c] for leaf in jax.tree.leaves(children["params"][name])]
            parent += [np.asarray(leaf).ravel().tolist() for leaf in leaves]
        flat = [p for leaf in parent for p in leaf]
        # one cut: one member's first layers, the other's last
        assert flat == sorted(flat) or flat == sorted(flat, reverse=True)
        mixed += len(set(flat)) == 2
    assert mixed  # with crossover always on, a child of two different parents mixes them
    mutated = offspring(
        jax.random.key(2),
        population,
        jnp.zeros((4, 1)),
        VariationParams(0.0, 1.0, 0.1),
        net.layer_names(),
    )
    # statistics are copied, not mutated
    assert all(
        set(np.unique(leaf)) <= {10.0, 11.0, 12.0, 13.0}
        for leaf in jax.tree.leaves(mutated["batch_stats"])
    )
    # every weight moved off its integer
    assert all(np.all(np.asarray(leaf) % 1 != 0) for leaf in jax.tree.leaves(mutated["params"]))


def test_run_params_redraws_bugs_per_seed():
    from jgtest.envs.registration import make

    env, params = make("BlockMaze-v0")
    _, a = wuji.run_params(env, params, 0)
    _, b = wuji.run_params(env, params, 1)
    assert a["bug_pos"] != b["bug_pos"] and set(a) >= {"bug_pos"}
    assert jitted_randomize(env)._cache_size() == 1  # the runs of a game share one compiled draw


def test_a_campaign_keeps_its_game_options_and_refuses_one_its_runs_redraw(tmp_path):
    from jgtest.envs.registration import make

    options = (("boss_max_hp", 300), ("late_phases", (0.3, 0.05)))
    env, params = make("CombatArena-v0", **dict(options))
    drawn, overrides = wuji.run_params(env, params, 4, options)
    assert int(drawn.boss_max_hp) == overrides["boss_max_hp"] == 300 and overrides[
        "late_phases"
    ] == (0.3, 0.05)
    assert np.isclose(np.asarray(drawn.late_phase)[:, None], [0.3, 0.05]).any(axis=1).all()
    with pytest.raises(ValueError, match="stuck_buff is re-drawn for each run"):
        wuji.run_params(env, params.replace(stuck_buff=2), 4, (("stuck_buff", 2),))
    with pytest.raises(ValueError, match="re-drawn for each run"):  # refused before any run starts
        wuji.run(
            wuji.WujiConfig(game="CombatArena-v0", game_kwargs=(("stuck_buff", 2),)),
            tmp_path,
            seeds=3,
        )
    assert not any(tmp_path.iterdir())
    # hashable
    assert wuji.WujiConfig(game_kwargs={"late_phases": [0.3]}).game_kwargs == (
        ("late_phases", (0.3,)),
    )


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (dict(strategy="monkey"), "strategy must be one of"),
        (dict(population=1), "population must be at least 2 for wuji"),
        (dict(generations=0), "generations must be at least 1"),
        (dict(budget_s=0), "budget_s must be positive"),
        (dict(generations=None), "needs generations, budget_s or budget_steps"),
        (dict(budget_steps=0), "budget_steps must be at least 1"),
    ],
)
def test_bad_configs_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        wuji.WujiConfig(**kwargs)


@pytest.mark.slow
def test_an_env_step_budget_is_equal_across_strategies_and_cuts_their_results(tmp_path):
    """Every strategy plays the budget to within one row of lockstep steps (one step of each of the
    call's games: here 16), never past it, and counts bugs and states only up to it."""
    budget, row = 3_333, 4 * TINY_A2C.num_envs
    config = wuji.WujiConfig(
        game="BlockMaze-v0",
        population=4,
        generations=None,
        budget_steps=budget,
        seed=3,
        a2c=TINY_A2C,
    )
    summary = wuji.run(config, tmp_path, ("random", "drl", "wuji"))
    for strategy in ("random", "drl", "wuji"):
        run = json.loads((tmp_path / strategy / "seed-3" / "summary.json").read_text())
        assert budget - row < run["env_steps"] <= budget, strategy
        assert run["timeline"][-1][1] == run["env_steps"] and all(
            r[1] <= budget for r in run["timeline"]
        )
        found = [s for s in run["first_found_step"] if s is not None]
        assert len(found) == run["bugs_found"] and all(0 < s <= run["env_steps"] for s in found)
        records = read_bug_records(tmp_path / strategy / "seed-3" / "bugs.jsonl")
        assert sorted(r.env_step for r in records) == sorted(found)
    assert summary["budget_steps"] == budget and list(summary["by_steps"]) == [
        "833",
        "1666",
        "3333",
    ]
    assert (
        summary["by_steps"]["3333"]["drl"]["bugs_found"]["mean"]
        <= summary["bugs_found"]["drl"]["mean"]
    )
    # drl is one learner (its population.json one policy) playing a population's games: a round, 4 x
    # 4 games x 5 updates x 5 steps
    drl = tmp_path / "drl" / "seed-3"
    assert len(json.loads((drl / "population.json").read_text())["exploration"]) == 1
    timeline = json.loads((drl / "summary.json").read_text())["timeline"]
    evaluation = timeline[0][1]  # the initial evaluation of the one policy
    assert 0 < evaluation <= 4 * 200 and timeline[1][1] - evaluation == 4 * TINY_A2C.steps_per_round


def test_drl_as_30_learners_keeps_a_population_of_trained_policies(tmp_path):
    config = wuji.WujiConfig(
        game="BlockMaze-v0", strategy="drl_30", population=4, generations=1, seed=3, a2c=TINY_A2C
    )
    summary = run_on_device(config, tmp_path)
    assert len(json.loads((tmp_path / "population.json").read_text())["exploration"]) == 4
    # a generation: each learner's rounds (4 learners x 4 games), then the population's evaluation
    rounds = [b[1] - a[1] for a, b in zip(summary["timeline"], summary["timeline"][1:])]
    assert rounds[0] == 4 * TINY_A2C.steps_per_round


def test_drl_with_a_population_of_one_is_a_learner_in_the_a2c_games_alone(tmp_path):
    """The authors' DRL: one learner in ``a2c.num_envs`` games (their one), with no population."""
    config = wuji.WujiConfig(
        game="BlockMaze-v0", strategy="drl", population=1, generations=1, seed=3, a2c=TINY_A2C
    )
    summary = run_on_device(config, tmp_path)
    rounds = [b[1] - a[1] for a, b in zip(summary["timeline"], summary["timeline"][1:])]
    assert rounds[0] == TINY_A2C.steps_per_round


class _Killed(Exception):
    pass


def _kill_after_first_generation(generation, generations, bugs):
    if generation == 1:
        # after generation 1 (whose records are written; its checkpoint is not: the last is the
        # initial one)
        raise _Killed


# random: its slot games' episodes go on across the kill
@pytest.mark.parametrize("strategy", ["ea_m", pytest.param("random", marks=pytest.mark.slow)])
def test_a_killed_campaign_resumes_to_the_uninterrupted_result(strategy, tmp_path):
    # the game of the tests above: compiled once; sampled evaluation, whose varied episodes find
    # bugs in three generations (untrained greedy policies on the small maze find none)
    config = wuji.WujiConfig(
        game="BlockMaze-v0",
        strategy=strategy,
        population=4,
        generations=3,
        seed=5,
        a2c=TINY_A2C,
        evaluation="sampled",
    )
    whole = run_on_device(config, tmp_path / "whole")
    killed = tmp_path / "killed"
    with pytest.raises(_Killed):
        run_on_device(config, killed, progress=_kill_after_first_generation)
    before = read_bug_records(killed / "bugs.jsonl")
    resumed = run_on_device(config, killed, resume=True)
    after = read_bug_records(killed / "bugs.jsonl")
    assert after[: len(before)] == before  # nothing written before the kill is lost
    for field in ("bugs_found", "state_coverage", "env_steps", "generations"):
        assert resumed[field] == whole[field], field
    assert {r.bug_id: r.actions for r in after} == {
        r.bug_id: r.actions for r in read_bug_records(tmp_path / "whole" / "bugs.jsonl")
    }
    assert after and all(replay(r).reproduced for r in after)
    if strategy != "random":
        assert json.loads((killed / "population.json").read_text()) == json.loads(
            (tmp_path / "whole" / "population.json").read_text()
        )
    # the resumed curve drops what the kill lost and reaches the same steps and bugs
    assert [row[1:] for row in resumed["timeline"]] == [row[1:] for row in whole["timeline"]]
    # a finished run resumes to its summary as it is, playing nothing
    records = (killed / "bugs.jsonl").read_bytes()
    assert run_on_device(config, killed, resume=True) == json.loads(json.dumps(resumed))
    assert (killed / "bugs.jsonl").read_bytes() == records


def test_a_policy_scored_nan_stops_the_run_naming_it(tmp_path, monkeypatch):
    """NSGA-II's selection runs compiled and cannot refuse NaN objectives itself: each evaluation's
    scores are checked."""
    import jax.numpy as jnp

    config = wuji.WujiConfig(
        game="BlockMaze-v0", strategy="ea_m", population=4, generations=1, seed=3, a2c=TINY_A2C
    )
    search = search_for(config)
    evaluate = search.evaluate

    def second_policy_nan(population, params, seeds):
        scores, out = evaluate(population, params, seeds)
        return scores.at[1, 0].set(jnp.nan), out

    monkeypatch.setattr(search, "evaluate", second_policy_nan)
    with pytest.raises(FloatingPointError, match=r"ea_m: policies \[1\] scored NaN"):
        run_on_device(config, tmp_path)


@pytest.mark.parametrize("evaluation", ["greedy", "sampled"])
def test_greedy_evaluation_plays_a_policy_the_same_way_whatever_the_run_seeds(evaluation):
    """Block Maze is deterministic: a greedy policy's runs are the same on any seeds, so its
    stored scores carry no luck; sampled runs differ from seed to seed."""
    import jax
    import jax.numpy as jnp

    from jgtest.envs.registration import make

    search = shared_search("BlockMaze-v0", (), 3, 10, TINY_A2C, evaluation)
    _, params = make("BlockMaze-v0")
    population = search.init_variables(jax.random.split(jax.random.key(0), 2))
    first, out_first = search.evaluate(population, params, jnp.array([1, 2]))
    again, _ = search.evaluate(population, params, jnp.array([1, 2]))
    other, out_other = search.evaluate(population, params, jnp.array([7, 8]))
    np.testing.assert_array_equal(first, again)  # keyed: the same seeds replay either way
    same_play = bool(np.all(np.asarray(out_first["actions"]) == np.asarray(out_other["actions"])))
    assert same_play == (evaluation == "greedy")


@pytest.mark.parametrize(
    "pool, strategy, pool_sizes, evaluated",
    [
        ("authors", "wuji", [30, 30], ["trained"]),  # P∪Q: untrained children never played
        ("paper", "wuji", [30, 30, 30], ["children", "trained"]),  # P∪P′∪Q
        ("authors", "ea_m", [30, 30], ["children"]),  # no training: P∪P′ either way
    ],
)
def test_the_selection_pool_is_the_authors_or_the_papers(pool, strategy, pool_sizes, evaluated):
    from jgtest.methods.wuji.strategies import REGISTRY, SearchState, play

    config = wuji.WujiConfig(strategy=strategy, selection_pool=pool)
    played, pools = [], []

    class Stub:
        """Children are ones, trained children twos."""

        def breed(self, key, population, fitness):
            return np.ones_like(population)

        def evaluate(self, policies):
            played.append("trained" if policies[0, 0] == 2 else "children")
            return np.zeros((30, 2))

        def fine_tune(self, policies):
            return policies + 1

        def select(self, candidates, scores, multi):
            pools.append([len(c) for c in candidates])
            return candidates[0], scores[0], np.arange(30)

        def spent(self):
            return False

    chosen = REGISTRY[strategy]
    state = SearchState.create(np.zeros((30, 3)), np.zeros((30, 2)), jax.random.key(0))
    ask, state = chosen.ask(state, Stub(), config)
    chosen.tell(state, ask, play(ask, Stub()), Stub(), config)
    assert pools == [pool_sizes] and played == evaluated


class _KeepTheBest(Strategy):
    """A user's strategy: one child bred from the population's best, kept when it scores higher."""

    def ask(self, state, player, config):
        key, k_breed = jax.random.split(state.key)
        return Ask(player.breed(k_breed, state.population, state.objectives)), state.replace(
            key=key
        )

    def tell(self, state, ask, played, player, config):
        population, objectives, _ = player.select(
            (state.population, ask.policies), (state.objectives, played.scores), True
        )
        return state.replace(population=population, objectives=objectives)


def test_a_strategy_a_user_writes_runs_through_the_same_loop_budget_and_records(
    tmp_path, monkeypatch
):
    monkeypatch.setitem(REGISTRY, "keep_the_best", _KeepTheBest())
    config = wuji.WujiConfig(
        game="BlockMaze-v0",
        strategy="keep_the_best",
        population=4,
        generations=None,
        budget_steps=10_000,
        seed=3,
        a2c=TINY_A2C,
        evaluation="sampled",
    )
    summary = run_on_device(config, tmp_path)
    # the budget cuts its evaluations as any strategy's; each bug found has its record, which
    # replays
    assert 10_000 - 4 * 3 < summary["env_steps"] <= 10_000 and summary["generations"] >= 2
    records = read_bug_records(tmp_path / "bugs.jsonl")
    assert len(records) == summary["bugs_found"] >= 1
    assert all(replay(r).reproduced for r in records)


def test_the_command_line_lists_every_hyperparameter_with_the_configs_default_and_source():
    import functools

    from jgtest.cli import build_parser
    from jgtest.cli.wuji import HYPERPARAMETERS, _with_hyperparameters

    config = wuji.WujiConfig()
    run = build_parser()._subparsers._group_actions[0].choices["run"]
    parser = run._subparsers._group_actions[0].choices["wuji"]
    listed = parser.format_help()
    for flag, field, default, source in HYPERPARAMETERS:
        assert default == functools.reduce(getattr, field.split("."), config), flag
        assert f"default {default} ({source})" in " ".join(listed.split()), flag
    args = parser.parse_args(["--out", "x", "--preset", "ours", "--learning-rate", "0.002"])
    ours = _with_hyperparameters(config, args)
    assert ours.evaluation == "sampled" and ours.variation.crossover == "weights"
    assert ours.a2c.returns == "n_step" and ours.a2c_hparams.learning_rate == 0.002
    assert wuji.preset(ours, "authors") == config
    # one part switched back at a time: the ablation's variants
    for part in wuji.PARTS:
        variant = wuji.preset(config, "ours", (part,))
        changed = {f.name for f in dataclasses.fields(config)}
        changed = {n for n in changed if getattr(variant, n) != getattr(config, n)}
        assert changed == set(wuji.config.PRESET_PARTS["ours"][part]), part
    assert wuji.preset(config, "ours", wuji.PARTS) == wuji.preset(config, "ours")
    with pytest.raises(ValueError, match="parts must be among"):
        wuji.preset(config, "ours", ("mutation",))


def test_each_generation_records_where_its_survivors_came_from_and_rescores_its_front(tmp_path):
    config = wuji.WujiConfig(game="BlockMaze-v0", population=4, generations=2, seed=3, a2c=TINY_A2C)
    summary = run_on_device(config, tmp_path)
    rows = [json.loads(line) for line in (tmp_path / "lineage.jsonl").read_text().splitlines()]
    assert rows == summary["lineage"] and [r["generation"] for r in rows] == [1, 2]
    for row in rows:
        # P∪Q: the untrained children are never selected (nor played)
        assert sum(row["survivors"].values()) == 4 and row["survivors"]["child"] == 0
        assert len(row["stored"]) == len(row["front"]) == len(row["fresh"]) >= 1
    front = json.loads((tmp_path / "population.json").read_text())
    stored = [[front["exploration"][i], front["winning"][i]] for i in rows[-1]["front"]]
    np.testing.assert_allclose(rows[-1]["stored"], stored, atol=1e-4)


@pytest.mark.slow
def test_greedy_evaluation_leaves_no_winners_curse_in_the_exploration_score():
    """The front's stored ES sits within the noise of a re-score on fresh seeds: greedy policies'
    scores carry only the game's luck (sampled ones carried the policy's too, and selection kept
    the lucky)."""
    import dataclasses

    from jgtest.agents.wuji_a2c import AUTHORS_A2C

    a2c = dataclasses.replace(AUTHORS_A2C, hidden_sizes=(32, 32, 32), steps_per_child=2000)
    config = wuji.WujiConfig(game="CombatArena-v0", population=8, generations=4, seed=1, a2c=a2c)
    with tempfile.TemporaryDirectory() as out:
        rows = run_on_device(config, out)["lineage"]
    gap = np.concatenate([np.subtract(r["stored"], r["fresh"])[:, 0] for r in rows])
    assert abs(gap.mean()) <= 2 * gap.std(ddof=1) / np.sqrt(gap.size)
