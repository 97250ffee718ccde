"""The real Ms. Pac-Man through envpool, its gate bugs, and the host loop driving jitted agents over
it."""

import ast
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envs_bridge import ale_ssim
from envs_bridge.ale import GATE_NAMES, RAM_TELEMETRY, MsPacmanEnv, gates_at
from jgtest import host_loop
from jgtest.agents import dqn
from jgtest.envs.wrappers import GrayscaleResize, ObservationPipeline
from jgtest.nets.heads import NATURE_CNN
from jgtest.rewards import bug_bonus_reward

GATE_TRACES = json.loads((Path(__file__).parent / "data" / "mspacman_gates.json").read_text())[
    "traces"
]
PIPELINE = ObservationPipeline(size=(84, 84), num_frames=4)
RANDOM = lambda params, obs, key: jax.random.randint(key, (), 0, 5)
LEFT = lambda params, obs, key: jnp.int32(3)


@pytest.fixture(scope="module")
def game():
    with MsPacmanEnv(num_envs=2, seed=3) as env:
        yield env


def test_gate_geometry():
    # Inside each tunnel mouth, on its row (±2): that gate only; the maze's edge columns are not
    # gates.
    x = np.array([16, 160, 12, 171, 18, 158, 16, 88])
    y = np.array([50, 51, 98, 96, 50, 98, 74, 98])
    inside = np.stack(gates_at(x, y), axis=-1)
    expected = np.zeros((8, 4), bool)
    expected[[0, 1, 2, 3], [0, 1, 2, 3]] = True
    np.testing.assert_array_equal(inside, expected)


@pytest.mark.parametrize("trace", GATE_TRACES, ids=[t["gate"] for t in GATE_TRACES])
def test_recorded_trace_places_the_player_in_its_gate(trace):
    # The trace was recorded with seed 0; the game is a function of its actions, so any seed replays
    # it.
    with MsPacmanEnv(num_envs=1, seed=11) as env:
        env.reset(11)
        fired = []
        for action in trace["actions"]:
            _, _, terminated, _, info = env.step(np.array([action]))
            assert not terminated[0]
            fired.append(info["telemetry"].bugs_fired[0].copy())
    gate = GATE_NAMES.index(trace["gate"])
    fired = np.array(fired)
    assert fired[-1, gate], "the trace's last step enters its gate"
    assert not fired[:-1, gate].any(), "and not before"
    np.testing.assert_array_equal(info["telemetry"].position[0], trace["position"])


def test_contract_dots_and_autoreset(game):
    frames, info = game.reset(3)
    assert frames.shape == (2, 84, 84, 1) and frames.dtype == np.uint8
    # the start, below the ghost house
    np.testing.assert_array_equal(info["telemetry"].position[0], [88, 98])
    rng = np.random.default_rng(0)
    dots, ended, after_end = np.zeros(2), 0, []
    while ended < 2:
        frames, reward, terminated, truncated, info = game.step(rng.integers(0, 5, 2))
        tel = info["telemetry"]
        assert (
            tel.position.dtype == np.float32
            and tel.cell.dtype == np.int32
            and tel.bugs_fired.shape == (2, 4)
        )
        np.testing.assert_array_equal(reward, tel.game_reward)
        # +1 a dot (§3.1.2), never ALE's 10/50/200 points
        assert set(np.unique(reward)) <= {0.0, 1.0}
        dots += reward
        for i in np.flatnonzero(info["autoreset"]):
            after_end.append((reward[i], info["ram"][i, 119], tel.bugs_fired[i].any()))
        for i in np.flatnonzero(terminated | truncated):
            ended += 1
            assert dots[i] == info["ram"][i, 119]  # the episode's dots = RAM's dots-eaten counter
            dots[i] = 0
    frames, reward, _, _, info = game.step(np.zeros(2, int))
    assert info["autoreset"].any()
    assert all(r == 0 and counter == 0 and not bug for r, counter, bug in after_end)


def test_bad_actions_are_refused(game):
    game.reset(3)
    with pytest.raises(ValueError, match="outside"):
        game.step(np.array([0, 5]))
    with pytest.raises(ValueError, match="expected 2 actions"):
        game.step(np.array([0]))


def test_pipeline_matches_the_on_device_wrappers():
    frames = np.random.default_rng(0).integers(0, 256, (3, 40, 30, 3), dtype=np.uint8)
    stack = PIPELINE.reset(frames)
    assert stack.shape == (3, 84, 84, 4)
    nxt = PIPELINE.push(stack, frames[::-1], jnp.array([False, True, False]))
    one = GrayscaleResize.__new__(GrayscaleResize)
    one.size = (84, 84)
    # The same functions; a batched program may round a pixel at .5 the other way.
    close = lambda a, b: np.testing.assert_allclose(np.asarray(a, int), np.asarray(b, int), atol=1)
    close(nxt[0, ..., -1], one._convert(frames[2])[..., 0])
    np.testing.assert_array_equal(nxt[0, ..., :3], stack[0, ..., 1:])
    # a new episode refills the stack
    close(nxt[1], jnp.repeat(one._convert(frames[1]), 4, axis=-1))


def test_the_package_frames_are_resized_to_110_by_84_and_cut_to_rows_18_to_102():
    from jgtest.methods.reline import RelineConfig, host

    package = host.pipeline(RelineConfig(game="ale:MsPacman"))
    assert package is host.PACKAGE_PIPELINE and package.frame_shape == (84, 84)
    assert host.pipeline(RelineConfig(game="ale:MsPacman", evaluation="frozen")) is host.PIPELINE
    assert host.PACKAGE_ALE_OPTIONS["frame_size"] == (110, 84)  # envpool resizes, area-weighted
    frames = np.random.default_rng(0).integers(0, 256, (2, 110, 84, 1), dtype=np.uint8)
    stack = package.reset(frames)
    assert stack.shape == (2, 84, 84, 4)
    np.testing.assert_array_equal(stack[..., 0], frames[:, 18:102, :, 0])
    with pytest.raises(ValueError, match=r"crop_rows \(18, 120\) are not rows"):
        _ = package.replace(crop_rows=(18, 120)).frame_shape


def test_the_frame_ring_reads_as_the_shifted_stack():
    # 12 pushes with episodes restarting at random: ring_view equals the stack push() keeps.
    rng = np.random.default_rng(1)
    frames = rng.integers(0, 256, (13, 3, 84, 84, 1), dtype=np.uint8)
    stack, ring = PIPELINE.reset(frames[0]), PIPELINE.ring_reset(frames[0])
    np.testing.assert_array_equal(PIPELINE.ring_view(ring), stack)
    for t in range(1, 13):
        fresh = rng.random(3) < 0.25
        stack, ring = (
            PIPELINE.push(stack, frames[t], fresh),
            PIPELINE.ring_push(ring, frames[t], fresh),
        )
        np.testing.assert_array_equal(PIPELINE.ring_view(ring), stack)


class _HostTelemetry:
    """The game with its telemetry computed on the host (numpy), as a game without
    ``device_telemetry``."""

    device_telemetry = None

    def __init__(self, game):
        self._game = game

    def __getattr__(self, name):
        return getattr(self._game, name)


def test_telemetry_on_device_matches_the_host_path():
    # The same episodes through step_raw + RamTelemetry in the jitted step and through step()'s
    # numpy.
    outs = []
    for wrap in (lambda g: g, _HostTelemetry):
        with MsPacmanEnv(num_envs=2, seed=7) as env:
            outs.append(
                host_loop.play(wrap(env), PIPELINE, RANDOM, None, 2, jax.random.key(4), seed=7)
            )
    device, host = outs
    assert (
        device["telemetry"].game_reward.sum() > 20 and np.unique(device["telemetry"].cell).size > 10
    )
    for field in ("position", "cell", "bugs_fired", "game_reward"):
        np.testing.assert_array_equal(
            getattr(device["telemetry"], field), getattr(host["telemetry"], field), err_msg=field
        )
    np.testing.assert_array_equal(device["actions"], host["actions"])
    np.testing.assert_array_equal(device["valid"], host["valid"])


def test_ram_telemetry_fires_each_gate_of_the_recorded_traces():
    # The four gate traces, one a game, through step_raw and RamTelemetry: the same gates as step().
    length = max(len(t["actions"]) for t in GATE_TRACES)
    actions = np.array([t["actions"] + [4] * (length - len(t["actions"])) for t in GATE_TRACES])
    tally = jax.jit(RAM_TELEMETRY.step)
    with MsPacmanEnv(num_envs=4, seed=0) as raw, MsPacmanEnv(num_envs=4, seed=0) as host:
        _, info = raw.reset(0)
        host.reset(0)
        carry, fired_raw, fired_host = RAM_TELEMETRY.init(RAM_TELEMETRY.take(info)), [], []
        for step in actions.T:
            _, _, _, info = raw.step_raw(step)
            carry, tel = tally(carry, RAM_TELEMETRY.take(info), info["autoreset"])
            fired_raw.append(np.asarray(tel.bugs_fired))
            fired_host.append(host.step(step)[4]["telemetry"].bugs_fired)
    np.testing.assert_array_equal(fired_raw, fired_host)
    for g, trace in enumerate(GATE_TRACES):
        assert fired_raw[len(trace["actions"]) - 1][g, GATE_NAMES.index(trace["gate"])]


def test_step_after_step_raw_needs_a_reset(game):
    game.reset(3)
    game.step_raw(np.zeros(2, np.int32))
    with pytest.raises(RuntimeError, match="reset first"):
        game.step(np.zeros(2, np.int32))
    game.reset(3)
    game.step(np.zeros(2, np.int32))
    with pytest.raises(ValueError, match="must be integers"):
        game.step(np.zeros(2, np.float32))  # a new dtype is checked again


def test_host_loop_trains_the_jitted_dqn_and_plays(game):
    config = dqn.lapan_config(
        "ale:MsPacman",
        num_envs=2,
        torso="cnn",
        cnn_layers=((8, 8, 4),),
        cnn_dense=32,
        conv_impl="im2col",
        learning_starts=40,
        batch_size=8,
        buffer_size=100,
        track_coverage=False,
    )
    agent = dqn.make_agent(config, host_loop.spec_game(game, PIPELINE))
    reward = lambda r, terminated, info: bug_bonus_reward(
        info["telemetry"].game_reward, info["telemetry"].bugs_fired
    )
    state, stats = host_loop.train_dqn(
        agent, game, PIPELINE, dqn.LAPAN_HYPERPARAMS, jax.random.key(0), 80, reward, seed=3
    )
    assert int(state.timesteps) >= 80 and int(state.updates) == (int(state.timesteps) - 40) // 2 + 1
    assert state.obs.shape == (2, 84, 84, 4) and state.env_state is None

    bugs = []
    out = host_loop.play(
        game, PIPELINE, RANDOM, None, 3, jax.random.key(1), seed=3, on_bug=bugs.append
    )
    lengths = out["valid"].sum(axis=1)
    assert out["actions"].shape == out["valid"].shape == out["telemetry"].game_reward.shape
    assert len(lengths) == 3 and lengths.min() > 100  # three random lives take hundreds of steps
    # each game its share of the episodes, ⌊3/2⌋ + 1 and ⌊3/2⌋
    assert sorted(out["env_index"]) == [0, 0, 1]
    for bug in bugs:  # every bug record's trace ends at the step its gate fired
        e = np.flatnonzero(
            (out["env_index"] == bug["env_index"]) & (out["episode"] == bug["episode"])
        )
        if e.size:
            np.testing.assert_array_equal(out["actions"][e[0], : bug["step"] + 1], bug["actions"])


def test_xla_loop_plays_the_same_game_as_the_host_loop():
    with MsPacmanEnv(num_envs=2, seed=5) as env:
        totals = host_loop.xla_rollout(env, PIPELINE, LEFT, None, jax.random.key(0), 150)
    with MsPacmanEnv(num_envs=2, seed=5) as env:
        env.reset(5)
        host = sum(env.step(np.full(2, 3))[1].sum() for _ in range(150))
    assert float(totals["game_reward"]) == host > 0


def test_only_the_host_loop_imports_envs_bridge():
    root = Path(host_loop.__file__).parent
    importers = []
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if any(n == "envs_bridge" or n.startswith("envs_bridge.") for n in names):
                importers.append(path.relative_to(root).as_posix())
    assert sorted(set(importers)) == ["host_loop.py"]


def test_reline_learner_settings_on_the_real_game():
    """By default the replication package's settings (``reline.host.run_host_game``'s docstring):
    one game, a gradient step a step, ε to 0.01 over 150k, the Nature CNN, 1,000 + 1,000 training
    episodes with the last 1,000 counted (30 with --quick). Under the paper's text (frozen): 4
    games a learner step, a gradient step every 4 environment steps, --quick with Mnih 2013's
    network and 200k steps."""
    from jgtest.methods import reline
    from jgtest.methods.reline import learners

    package, quick = (
        reline.RelineConfig(game="ale:MsPacman"),
        reline.RelineConfig(game="ale:MsPacman", quick=True),
    )
    assert package.evaluation == quick.evaluation == "training" and (
        package.models,
        quick.models,
    ) == (10, 1)
    for cfg in (package, quick):
        learn = reline.learner(cfg)
        assert learn.config.cnn_layers == NATURE_CNN
        assert (
            learn.config.num_envs,
            learn.config.train_interval,
            learn.config.batch_size,
            learn.config.buffer_size,
        ) == (1, 1, 32, 10_000)
        assert (learn.config.learning_starts, learn.config.target_update_interval) == (
            10_000,
            1_000,
        )
        assert (
            learn.hparams.epsilon_end,
            learn.hparams.epsilon_anneal_steps,
            learn.hparams.learning_rate,
        ) == (0.01, 150_000, 1e-4)
    assert [learners.package_train_episodes(package, a) for a in ("reline", "rl-baseline")] == [
        2000,
        2000,
    ]
    assert [learners.package_train_episodes(quick, a) for a in ("reline", "rl-baseline")] == [
        60,
        60,
    ]
    assert (learners.counted_episodes(package), learners.counted_episodes(quick)) == (1000, 30)

    full, small = (
        reline.RelineConfig(game="ale:MsPacman", evaluation="frozen", quick=q)
        for q in (False, True)
    )
    paper, small = reline.learner(full).config, reline.learner(small).config
    assert paper.cnn_layers == NATURE_CNN and paper.total_timesteps == 700_000
    assert small.cnn_layers == learners.NIPS_CNN["cnn_layers"] and small.total_timesteps == 200_000
    for config in (paper, small):
        assert (config.num_envs, config.train_interval, config.batch_size, config.buffer_size) == (
            4,
            4,
            32,
            10_000,
        )
    farm = reline.learner(
        reline.RelineConfig(game="ale:MsPacman", evaluation="frozen", actors=2)
    ).config
    assert farm.num_envs == 2 and farm.train_interval == 4


def test_the_intro_takes_65_steps_as_the_package_waits():
    # The package waits out the intro with 65 no-ops after each reset (msPacman_RELINE.py,
    # Agent._reset): whatever the agent presses, Ms. Pac-Man first moves on step 66.
    with MsPacmanEnv(num_envs=1, seed=0) as env:
        env.reset(0)
        moved = [
            (env.step(np.array([3]))[4]["telemetry"].position[0] != [88, 98]).any()
            for _ in range(66)
        ]
    assert not any(moved[:65]) and moved[65]


def test_the_score_reward_pays_as_ale_does_and_its_sign_as_the_package():
    # reward="score": ALE's 10 a dot and 50 an energizer where the paper's reward pays 1 a dot;
    # reward="sign" (the package's ClipRewardEnv): 1 a step that scores.
    actions = GATE_TRACES[0]["actions"]
    rewards = []
    for reward in ("dots", "score", "sign"):
        with MsPacmanEnv(num_envs=1, seed=0, reward=reward) as env:
            env.reset(0)
            steps = [env.step(np.array([a])) for a in actions]
        rewards.append(np.array([s[1][0] for s in steps]))
        np.testing.assert_array_equal(
            rewards[-1], [s[4]["telemetry"].game_reward[0] for s in steps]
        )
    dots, score, sign = rewards
    assert (
        dots.sum() > 10
        and set(np.unique(score[dots == 1])) <= {10.0, 50.0}
        and (score[dots == 0] == 0).all()
    )
    np.testing.assert_array_equal(sign, np.sign(score))
    for reward in ("score", "sign"):
        with MsPacmanEnv(num_envs=1, reward=reward) as env:
            # RamTelemetry counts dots: the host computes the score's telemetry
            assert env.device_telemetry is None
    with pytest.raises(ValueError, match="'dots', 'score' or 'sign'"):
        MsPacmanEnv(reward="points")


def test_the_package_screenshots_are_the_ssim_references():
    references = ale_ssim.package_references()
    assert references["left"].shape == (11, 30, 15, 3) and references["right"].shape[1:] == (
        30,
        15,
        3,
    )
    maze_blue, wall_pink = (0, 28, 136), (228, 111, 111)
    for crops in references.values():
        colours = {tuple(c) for c in crops.reshape(-1, 3)}
        assert colours == {maze_blue, wall_pink, MS_PACMAN_YELLOW}
        assert all((crop == MS_PACMAN_YELLOW).all(axis=-1).any() for crop in crops)  # she shows
    detector = ale_ssim.SsimGates()
    assert detector.doubled
    # On a screen with her drawn as the package's first left screenshot shows her in the lower-left
    # mouth (its columns undoubled), the check finds her there and nowhere else.
    screen = np.zeros((1, 210, 160, 3), np.uint8)
    screen[..., :] = maze_blue
    screen[0, 90:120, 0:8] = references["left"][0][:, 0:15:2]
    np.testing.assert_array_equal(detector(screen)[0], [False, False, True, False])
    with pytest.raises(ValueError, match="'package', 'recorded' or a dict"):
        ale_ssim.SsimGates("screenshots")


@pytest.mark.slow
def test_the_package_protocol_counts_the_last_training_episodes(tmp_path):
    """RELINE under the package's protocol on the real game: the model trains a number of episodes
    and Table 1 counts the last of them (no separate evaluation); records are written as bugs
    show."""
    from jgtest.methods import reline

    small = (
        ("learning_starts", 64),
        ("buffer_size", 256),
        ("cnn_layers", ((8, 8, 4),)),
        ("cnn_dense", 32),
    )
    config = reline.RelineConfig(
        game="ale:MsPacman",
        models=1,
        eval_episodes=1,
        agents=("reline",),
        quick=True,
        learner_overrides=small,
    )
    phases = []
    summary = reline.run(config, tmp_path, progress=lambda phase, done, total: phases.append(phase))
    assert summary["protocol"] == {"evaluation": "training"} and summary["eval_episodes"] == 1
    assert not any(p.startswith("evaluate") for p in phases)
    books = json.loads((tmp_path / "models.json").read_text())["reline-0"]
    # 2,000 × 1/1,000 episodes trained (1,000 + 1,000), the last one counted
    assert books["training"]["episodes"] == 2 and len(books["bugs_found"]) == 1
    assert books["training"]["steps"] > 400  # two whole games of three lives
    assert summary["table1"]["reline"]["1"]["counts"] == [
        int(np.asarray(books["bugs_found"]).any(axis=1).sum())
    ]
    # the package's 2,000 episodes at this run's speed
    cost = summary["full_table_budget"]["reline"]
    per_episode = books["training"]["steps"] / books["training"]["episodes"]
    assert cost["updates_per_model"] == round(2000 * per_episode - 10_000)
    assert (
        cost["hours_10_models"] == pytest.approx(10 * cost["hours_per_model"], abs=0.1)
        and cost["seconds_per_update"] > 0
    )


def test_reline_plays_a_stochastic_ms_pacman_as_gym_v0():
    """Under the paper's text, RELINE's game repeats the previous action with probability 0.25 (Gym
    ``MsPacman-v0``, ``reline.host.run_host_game``'s docstring): the same actions then take two
    differently seeded games apart, where the deterministic default (the package's
    ``NoFrameskip-v4``) keeps them together."""
    from jgtest.methods.reline import host

    assert host.ALE_OPTIONS == {"sticky_action_prob": 0.25}
    actions = np.tile(np.repeat(np.arange(4), 6), 8)  # up, right, down, left: 6 steps each, 8 times

    def paths(**options):
        with MsPacmanEnv(num_envs=2, seed=11, **options) as env:
            env.reset(11)
            out = [env.step(np.full(2, a))[4]["telemetry"].position for a in actions]
        return np.stack(out, 1)

    deterministic, sticky = paths(), paths(**host.ALE_OPTIONS)
    np.testing.assert_array_equal(deterministic[0], deterministic[1])
    assert np.abs(sticky[0] - sticky[1]).max() > 0


class _Stopped(Exception):
    pass


@pytest.mark.slow
def test_a_stopped_ms_pacman_run_resumes_without_training_again(tmp_path):
    """RELINE on the real game: each model's parameters are checkpointed as its training ends; a run
    stopped in the evaluation resumes from them (no training phase again), and a finished run
    resumed plays nothing."""
    from jgtest.methods import reline

    config = reline.RelineConfig(
        game="ale:MsPacman",
        models=1,
        eval_episodes=1,
        agents=("rl-baseline",),
        train_steps=64,
        quick=True,
        evaluation="frozen",
    )

    def stop_at_the_evaluation(phase, done, total):
        if phase.startswith("evaluate"):
            raise _Stopped

    with pytest.raises(_Stopped):
        reline.run(config, tmp_path, progress=stop_at_the_evaluation)
    assert "training" in json.loads((tmp_path / "models.json").read_text())["rl-baseline-0"]
    phases = []
    summary = reline.run(
        config, tmp_path, progress=lambda phase, done, total: phases.append(phase), resume=True
    )
    assert (
        phases
        and not any(p.startswith("train") for p in phases)
        and summary["table1"]["rl-baseline"]["1"]["counts"]
    )
    phases.clear()
    again = reline.run(
        config, tmp_path, progress=lambda phase, done, total: phases.append(phase), resume=True
    )
    assert (
        phases == []
        and again["table1"] == summary["table1"]
        and again["training"] == summary["training"]
    )


#: Ms. Pac-Man's colour on ALE's RGB screen.
MS_PACMAN_YELLOW = (210, 164, 74)


def _visits(flags: np.ndarray) -> list[tuple[int, int]]:
    """The runs of consecutive flagged steps, ``(first, last)``."""
    edges = np.diff(np.r_[0, flags.astype(int), 0])
    return list(zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1) - 1))


@pytest.mark.slow
def test_the_ram_and_the_screen_detectors_flag_the_same_gate_visits():
    """The package's SSIM check (envs_bridge.ale_ssim), its references cut from two routes through
    the tunnels and back, and the RAM gates agree visit by visit on the two other routes (other
    approaches, so other animation phases and ghosts): every mouth passed both ways."""
    references = ale_ssim.record_references(
        [GATE_TRACES[0], GATE_TRACES[2]], throughs=(18, 22, 26, 30)
    )
    detector = ale_ssim.SsimGates(references)
    visits, hidden = 0, 0
    for trace in (GATE_TRACES[1], GATE_TRACES[3]):
        with MsPacmanEnv(num_envs=1, seed=0, screens=True) as env:
            env.reset(0)
            ram, screen, drawn = [], [], []
            for action in ale_ssim.tunnel_route(trace):
                screens, _, terminated, _, info = env.step(np.array([action]))
                assert not terminated[0]
                ram.append(info["ram_gates"][0])
                screen.append(detector(screens)[0])
                drawn.append(
                    (ale_ssim.gate_crops(screens)[0] == MS_PACMAN_YELLOW)
                    .all(axis=-1)
                    .any(axis=(1, 2))
                )
        ram, screen, drawn = np.array(ram), np.array(screen), np.array(drawn)
        for g in range(4):
            overlaps = lambda a, b: a[0] <= b[1] + 1 and b[0] <= a[1] + 1  # noqa: E731 -- a step's slack (RAM and screen)
            by_screen = _visits(screen[:, g])
            # A RAM visit in which she is never drawn in the crop (past the screen's edge in the
            # tunnel) no screen check can see.
            by_ram = [v for v in _visits(ram[:, g]) if drawn[max(0, v[0] - 1) : v[1] + 2, g].any()]
            hidden += len(_visits(ram[:, g])) - len(by_ram)
            assert all(any(overlaps(v, w) for w in by_screen) for v in by_ram), (
                GATE_NAMES[g],
                by_ram,
                by_screen,
            )
            assert all(any(overlaps(w, v) for v in by_ram) for w in by_screen), (
                GATE_NAMES[g],
                by_ram,
                by_screen,
            )
            visits += len(by_ram)
    # each route: into its gate, out of the far mouth, back in, out, in again, out
    assert visits >= 12 and hidden <= 2


@pytest.mark.slow
def test_ms_pacman_reports_the_screen_detector_with_the_shipped_references():
    # The package's screenshots: through the trace's gate and its tunnel, the check sees her in
    # that gate, and the step's flags are the detector's on the step's screens.
    trace = GATE_TRACES[0]
    detector = ale_ssim.SsimGates()
    seen = np.zeros(4, bool)
    with MsPacmanEnv(num_envs=2, seed=0, screens=True, ssim_gates=detector) as env:
        frames, _ = env.reset(0)
        assert frames.shape == (2, 210, 160, 3)
        for action in ale_ssim.tunnel_route(trace)[: len(trace["actions"]) + 8]:
            frames, _, _, _, info = env.step(np.full(2, action))
            np.testing.assert_array_equal(info["ssim_gates"], detector(frames))
            seen |= info["ssim_gates"].all(axis=0)
    assert seen[GATE_NAMES.index(trace["gate"])] and seen.sum() <= 2
    with pytest.raises(ValueError, match="screens=True"):
        MsPacmanEnv(ssim_gates=ale_ssim.SsimGates())
