"""The Unreal bridge against the local UnrealCV protocol server, through the real
``unrealcv.Client``: the wire, every command, pixels equal to the on-device world's, and every fault
of the wire."""

import json
import struct

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jgtest
from envs_bridge import unrealcv_server as server_module
from envs_bridge.protocol import GameTimeout
from envs_bridge.unreal import PAPER_KEYS, UnrealConnection, UnrealEnv
from jgtest.methods.park.ooi_testing import OOITestSettings, host_episode, init_tester, ooi_step
from jgtest.rollout import episode_key, reset_key

GAME = {"size": 64, "num_oois": 40}
ENV, PARAMS = jgtest.make("ParkWorld-v0", **GAME)


@pytest.fixture(scope="module")
def server():
    with server_module.UnrealCVServer(delay_s=1.5, **GAME) as running:
        yield running


RESET, STEP = jax.jit(ENV.reset_env), jax.jit(ENV.step_env)


@pytest.fixture(scope="module")
def models():
    """PPGTA's models at their initialisation: the bridge's wiring is under test, not the learning
    (an untrained oracle flags what it reads)."""
    from tests.methods.park.test_ppgta import TINY, _untrained

    return _untrained(TINY)


def _on_device(seed: int, actions, with_objects: bool = False):
    """The frames the on-device world renders (jitted, as the game behind the server) from the start
    of ``seed`` under ``actions``; with ``with_objects``, also each step's objects in view ``{id:
    pixels}``."""
    frame, state = RESET(reset_key(episode_key(seed, 0, 0)), PARAMS)
    frames, shown = [np.asarray(frame)], []
    for t, a in enumerate(actions):
        frame, state, _, _, info = STEP(jax.random.key(t), state, jnp.int32(a), PARAMS)
        frames.append(np.asarray(frame))
        shown.append(_in_view(jax.device_get(info["objects"])))
    return (frames, shown) if with_objects else frames


def _in_view(objects) -> dict:
    return {
        int(i): int(p) for i, p, v in zip(objects["id"], objects["pixels"], objects["visible"]) if v
    }


def test_the_real_client_speaks_the_wire_protocol(server):
    from unrealcv import Client

    client = Client(server.address)
    try:
        assert client.connect(timeout=2)
        assert client.request("vrun RestartLevel 3", timeout=5) == "ok"
        lit = client.request("vget /camera/0/lit png", timeout=5)
        assert isinstance(lit, bytes) and lit[:8] == b"\x89PNG\r\n\x1a\n"
        assert client.request("vget /unrealcv/commands", timeout=5).startswith(
            "error No handler found for URI"
        )
        assert (
            client.request("vget /no/such/thing", timeout=5)
            == "error No handler found for URI 'vget /no/such/thing'"
        )
        names = client.request("vget /objects", timeout=5).split()
        assert len(names) == GAME["num_oois"] and names[0].endswith("_000")
        assert client.request(f"vget /object/{names[0]}/color", timeout=5).startswith("(R=")
        assert len(client.request(f"vget /object/{names[0]}/bounds", timeout=5).split()) == 6
        assert len(client.request("vget /camera/0/rotation", timeout=5).split()) == 3
        assert (
            client.request("vset /action/game/pause", timeout=5) == "ok"
            and client.request("vget /action/game/is_paused", timeout=5) == "true"
        )
        assert client.request("vset /action/game/resume", timeout=5) == "ok"
        bmp = client.request("vget /camera/0/lit bmp", timeout=5)
        assert isinstance(bmp, bytes) and bmp[:2] == b"BM"
    finally:
        client.disconnect()


def test_bridge_frames_equal_the_on_device_world(server):
    """``lit`` pixels (PNG and BMP) and the objects read from ``object_mask`` equal the on-device
    world's."""
    actions = [0, 0, 4, 0, 5, 3, 7, 0, 0, 0]
    # a start with objects in view
    seed = next(s for s in range(20) if any(_on_device(s, actions, with_objects=True)[1]))
    expected, shown = _on_device(seed, actions, with_objects=True)
    with UnrealEnv([server.address], timeout_s=5) as env:
        frames, info = env.reset(seed)
        np.testing.assert_array_equal(frames[0], expected[0])
        for t, a in enumerate(actions):
            frames, _, _, truncated, info = env.step(np.array([a]))
            np.testing.assert_array_equal(frames[0], expected[t + 1])
            # ids and pixels from the mask's colours
            assert _in_view({k: v[0] for k, v in info["objects"].items()}) == shown[t]
            assert not truncated[0]
        assert sum(len(s) for s in shown) > 0
        np.testing.assert_array_equal(
            env.connections[0].image("vget /camera/0/lit bmp")[..., :3], expected[-1]
        )
        assert info["telemetry"].frame_time_ms[0] > 0
        assert env.faults == []


def test_objects_come_from_the_mask(server):
    with UnrealEnv([server.address]) as env:
        env.reset(0)
        # walk to face an object: teleport beside it, as a test engineer's console would
        target = 3
        x, y = np.asarray(PARAMS.ooi_pos[target]) * 100
        conn = env.connections[0]
        assert conn.request(f"vset /camera/0/location {x - 180:.1f} {y:.1f} 50") == "ok"
        assert conn.request("vset /camera/0/rotation 0 0 0") == "ok"
        frames, _, _, _, info = env.step(np.array([7]))  # look down one step
        objects = {k: v[0] for k, v in info["objects"].items()}
        assert target in objects["id"][objects["visible"]]
        slot = int(np.flatnonzero(objects["id"] == target)[0])
        r0, c0, r1, c1 = objects["box"][slot]
        assert objects["pixels"][slot] > 20 and r1 > r0 and c1 > c0
        assert objects["type"][slot] == int(PARAMS.ooi_type[target])


FAULTS = [  # the fault, and what the bridge's error says (it names the command too)
    ("delay", "no reply within 1s; connection marked broken, reconnecting"),
    ("drop", "the connection broke"),
    ("wrong_magic", "the connection broke"),
    ("truncated", "the connection broke"),
    ("out_of_order", "no reply within 1s"),
    ("error", "the game answered 'error injected fault'"),
    ("dark_text_image", "'vget /camera/0/lit png': expected image bytes, got str"),
]


@pytest.mark.parametrize("fault, message", FAULTS, ids=[f[0] for f in FAULTS])
def test_the_bridge_survives_each_fault_and_reconnects(server, fault, message):
    with UnrealEnv([server.address], timeout_s=1.0, connect_timeout_s=2.0) as env:
        env.reset(1)
        env.step(np.array([0]))
        before = env.connections[0].connects
        server.inject(fault)
        frames, _, _, truncated, info = env.step(np.array([0]))
        assert truncated[0], "the faulty step ends the episode cleanly"
        # no stale objects from the last good step
        assert info["telemetry"].crashed[0] and not info["objects"]["visible"].any()
        assert len(env.faults) == 1 and (
            "vget /camera/0/" in env.faults[0] or "vset /action/keyboard" in env.faults[0]
        )
        assert message in env.faults[0]
        # auto-reset: a fresh episode over the wire again
        frames, _, _, truncated, info = env.step(np.array([0]))
        assert info["autoreset"][0] and not truncated[0]
        # the next episode of game 0: seed + episodes * num_envs
        expected = _on_device(1 + 1, [])[0]
        np.testing.assert_array_equal(frames[0], expected)
        if fault not in ("error", "dark_text_image"):
            assert env.connections[0].connects == before + 1  # the broken wire was replaced


@pytest.fixture(scope="module")
def random_agent(models):
    from jgtest.methods.park.bridged import BridgedAgent

    return BridgedAgent(models, "random", trigger_pixels=40)  # compiled once for the fault suite


#: The campaign's paths through a fault, one fault each in the default run: a broken wire replaced
#: (delay), an error answered on a sound wire (error), a replacement that is never greeted
#: (no_greeting). The other faults take the first two paths (the bridge-level test above holds each
#: of them) and run with -m slow.
CAMPAIGN_PATHS = ("delay", "error", "no_greeting")


@pytest.mark.parametrize(
    "fault",
    [
        f if f in CAMPAIGN_PATHS else pytest.param(f, marks=pytest.mark.slow)
        for f in [f for f, _ in FAULTS] + ["no_greeting"]
    ],
)
def test_a_bridged_campaign_keeps_its_records_through_each_fault(
    server, random_agent, fault, tmp_path
):
    from jgtest.methods.park.bridged import run_bridged
    from jgtest.records import read_bug_records

    with UnrealEnv([server.address], timeout_s=1.0, connect_timeout_s=1.0) as env:
        env.reset(0)  # reads the objects' catalogue
        if fault == "no_greeting":  # the wire breaks, and the game does not greet the reconnection
            server.inject("drop", after=5 + 5 * 30)
            server.inject("no_greeting")
        else:
            server.inject(fault, after=5 + 5 * 30)  # the reset, then 30 steps of 5 requests
        summary = run_bridged(env, random_agent, tmp_path, episodes=3, episode_steps=40, seed=6)
    # the fault ended episode 0 at its 31st step
    assert summary["faults"] and summary["steps_played"][0] == 30
    assert summary["steps_played"][-1] == 40  # and a later episode played in full
    records = (
        read_bug_records(tmp_path / "bugs.jsonl") if (tmp_path / "bugs.jsonl").exists() else []
    )
    assert {r.bug_id for r in records} == {
        int(k) for k, v in summary["outcomes"].items() if v["flagged"]
    }


@pytest.mark.slow
def test_a_bridged_campaign_killed_mid_episode_resumes_to_the_uninterrupted_result(
    server, random_agent, tmp_path, monkeypatch
):
    from jgtest.methods.park.bridged import run_bridged
    from jgtest.records import read_bug_records

    run = lambda out, **kw: run_bridged(
        env, random_agent, tmp_path / out, episodes=3, episode_steps=100, seed=3, **kw
    )
    with UnrealEnv([server.address], timeout_s=1.0) as env:
        whole = run("whole")
        # Killed 5 steps after the last bug found in a later episode: the kill cuts that episode
        # short.
        found = read_bug_records(tmp_path / "whole" / "bugs.jsonl")
        last = max((r for r in found if r.episode >= 1 and r.step < 95), key=lambda r: r.episode)
        kill_after, steps, step = last.episode * 100 + last.step + 5, [0], env.step

        def killed_mid_episode(actions):
            steps[0] += 1
            if steps[0] > kill_after:
                raise KeyboardInterrupt
            return step(actions)

        monkeypatch.setattr(env, "step", killed_mid_episode)
        with pytest.raises(KeyboardInterrupt):
            run("killed")
        monkeypatch.undo()
        progress = json.loads((tmp_path / "killed" / "progress.json").read_text())
        assert (
            progress["episodes_done"] == last.episode
            and progress["steps_played"] == [100] * last.episode
        )
        resumed = run("killed", resume=True)
    records = {
        name: read_bug_records(tmp_path / name / "bugs.jsonl") for name in ("whole", "killed")
    }
    for key in ("steps_played", "outcomes", "ooi_tested", "texture_flagged"):
        assert resumed[key] == whole[key], key
    strip = lambda r: (r.bug_id, r.episode, r.step, r.actions)
    # each written once
    assert sorted(map(strip, records["killed"])) == sorted(map(strip, records["whole"]))


def test_a_greeting_that_never_comes_is_a_timeout(server):
    server.inject("no_greeting")
    connection = UnrealConnection(server.address, timeout_s=1.0, connect_timeout_s=1.0)
    with pytest.raises(GameTimeout, match="no greeting within 1s"):
        connection.connect()
    connection.connect()  # the next connection is greeted
    assert connection.request("vget /unrealcv/version") == "v1.0.0"
    connection.close()


def test_non_loopback_binds_are_refused():
    with pytest.raises(ValueError, match="not a loopback address"):
        server_module.UnrealCVServer(host="0.0.0.0", **GAME)


def test_wire_frames_are_little_endian_with_the_magic():
    frame = server_module.frame_bytes(b"0:ok")
    assert struct.unpack("<II", frame[:8]) == (0x9E2B83C1, 4) and frame[8:] == b"0:ok"
    assert len(PAPER_KEYS) == 9 and PAPER_KEYS[0] == "W" and PAPER_KEYS[-1] == "SpaceBar"


@pytest.mark.parametrize("behaviour", [pytest.param("learned", marks=pytest.mark.slow), "scripted"])
def test_an_episode_through_the_bridge_tests_the_same_objects_as_on_device(server, behaviour):
    """PPGTA's learned test (here the explorer's own actions, judged by JS) and Inspector's scripted
    walk (steered by the bridge's location and yaw) test the same objects as on device."""
    learned = behaviour == "learned"
    settings = OOITestSettings(trigger_pixels=60, test_steps=8 if learned else 0)
    judge = (jnp.full(9, 1 / 9), 0.35) if learned else None
    # walks that meet three objects from seed 4's start, and one that walks all round an object from
    # seed 0's
    seed, walk, steps, tests = (4, 10, 160, 3) if learned else (0, 10, 300, 1)
    actions = np.random.default_rng(walk).choice(
        9, size=steps, p=[0.5, 0.05, 0.05, 0.05, 0.15, 0.15, 0.0, 0.0, 0.05]
    )
    step = jax.jit(
        lambda tester, state, a, key: ooi_step(
            ENV,
            settings,
            PARAMS,
            tester,
            state,
            a,
            key,
            test_action=a if learned else None,
            judge=judge,
        )
    )
    _, state = RESET(reset_key(episode_key(seed, 0, 0)), PARAMS)
    tester, on_device = init_tester(ENV.num_oois), []
    for t, a in enumerate(actions):
        tester, _, state, _, executed, event = step(tester, state, jnp.int32(a), jax.random.key(t))
        on_device.append({**jax.device_get(event), "executed": executed})
    with UnrealEnv([server.address]) as env:
        env.reset(seed)
        ooi_pos = env.objects[0]["location"][:, :2] / env.units_per_cell
        bridged = host_episode(
            env,
            seed,
            actions,
            settings,
            ooi_pos,
            judge,
            walk_turn_deg=None if learned else float(PARAMS.turn_deg),
        )
    ends = lambda events: [
        (t, int(e["done"]), bool(e["success"])) for t, e in enumerate(events) if e["done"] >= 0
    ]
    # same objects tested, at the same steps, same verdicts
    assert len(ends(on_device)) >= tests and ends(bridged) == ends(on_device)
    assert [int(e["target"]) for e in bridged] == [int(e["target"]) for e in on_device]
    assert [int(e["executed"]) for e in bridged] == [int(e["executed"]) for e in on_device]
    if not learned:
        assert any(success for _, _, success in ends(on_device))  # a walk went all the way round


def test_a_bridged_inspector_campaign_survives_a_fault_and_keeps_its_records(
    server, models, tmp_path
):
    from jgtest.methods.park import inspector
    from jgtest.methods.park.bridged import BridgedAgent, run_bridged
    from jgtest.records import read_bug_records

    campaign = inspector.InspectorCampaign(
        inspector.InspectorConfig(
            episodes=1, num_envs=1, tests=OOITestSettings(trigger_pixels=40), **GAME
        )
    )
    # what device_run(RUN) returns, at the policy's initialisation
    trained = (campaign, jax.jit(campaign.init)(jax.random.key(0)))
    with UnrealEnv([server.address], timeout_s=1.0) as env:
        env.reset(0)  # reads the objects' catalogue
        # two resets (5 requests each), 300 steps of episode 0 and 20 of episode 1
        server.inject("drop", after=2 * 5 + 5 * (300 + 20))
        agent = BridgedAgent(models, "inspector", trained)
        assert agent.settings.trigger_pixels == 40  # the run's test settings, not the defaults
        # a start with objects near
        summary = run_bridged(env, agent, tmp_path, episodes=2, episode_steps=300, seed=4)
    assert len(summary["faults"]) == 1 and "the connection broke" in summary["faults"][0]
    assert summary["steps_played"] == [300, 20]  # the fault ended episode 1
    records = read_bug_records(tmp_path / "bugs.jsonl")
    flagged = {int(k) for k, v in summary["outcomes"].items() if v["flagged"]}
    # every verdict written as it came
    assert summary["ooi_tested"] >= 1 and {r.bug_id for r in records} == flagged
    assert all(r.kind == "texture" and "inspector over the bridge" in r.detail for r in records)
    with pytest.raises(ValueError, match="a device campaign trained"):
        BridgedAgent(models, "inspector")
    with pytest.raises(ValueError, match="not a random campaign"):
        BridgedAgent(models, "random", trained)


@pytest.mark.parametrize(
    "detector", [pytest.param(d, marks=pytest.mark.slow) for d in ("ground-truth", "learned")]
)
def test_jgtest_run_drives_ppgta_through_the_bridge(server, models, detector, tmp_path, capsys):
    from jgtest.cli import main
    from jgtest.methods.park import models as ppgta_models

    ppgta_models.save_models(models, tmp_path / "models")
    game = f"unreal:{server.address[0]}:{server.address[1]}"
    argv = [
        "run",
        "ppgta",
        "--game",
        game,
        "--ppgta-models",
        str(tmp_path / "models"),
        "--episodes",
        "1",
        "--quick",
        "--seed",
        "3",
    ]
    assert main([*argv, "--detector", detector, "--out", str(tmp_path / "run")]) == 0
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert (
        summary["agent"] == "ppgta" and summary["detector"] == detector and not summary["trained"]
    )
    assert summary["steps_played"] == [200] and summary["faults"] == []
    assert "ppgta over unreal:" in capsys.readouterr().out

    def refused(argv) -> str:
        """What a user mistake prints on stderr, after checking it exits with status 2."""
        assert main(argv) == 2
        return capsys.readouterr().err

    # --resume: a finished campaign plays nothing more; other settings are refused
    if detector == "ground-truth":
        assert (
            main([*argv, "--detector", detector, "--out", str(tmp_path / "run"), "--resume"]) == 0
        )
        assert (
            json.loads((tmp_path / "run" / "summary.json").read_text())["outcomes"]
            == summary["outcomes"]
        )
        assert "holds another campaign (seed " in refused(
            [*argv[:-1], "4", "--detector", detector, "--out", str(tmp_path / "run"), "--resume"]
        )
    if detector == "learned":
        assert "needs --explorer-from RUN" in refused(
            ["run", "inspector", *argv[2:], "--out", str(tmp_path / "inspector")]
        )
        assert "the learned detector is PPGTA's" in refused(
            ["run", "random", *argv[2:], "--detector", "learned", "--out", str(tmp_path / "random")]
        )


@pytest.mark.slow
def test_agents_trained_on_device_drive_the_bridged_game(server, models, tmp_path):
    """Inspector's and PPGTA's explorers, trained by short device campaigns, restored from their
    runs' checkpoints and driving the game through the bridge from the command line."""
    from jgtest.cli import main
    from jgtest.methods.park import inspector, ppgta
    from jgtest.methods.park import models as ppgta_models
    from jgtest.methods.park.campaign import run_campaign
    from tests.methods.park.test_ppgta import TINY

    ppgta_models.save_models(models, tmp_path / "models")
    inspector.run(
        inspector.InspectorConfig(
            episodes=1, num_envs=1, episode_steps=40, rollout_steps=20, **GAME
        ),
        tmp_path / "inspector",
    )
    config = ppgta.PPGTAConfig(
        episodes=1, num_envs=1, episode_steps=40, rollout_steps=20, models=TINY, test_steps=12
    )
    run_campaign(ppgta.PPGTACampaign(config, models), "ppgta", tmp_path / "ppgta", models.oracle)
    game = f"unreal:{server.address[0]}:{server.address[1]}"
    for agent in ("inspector", "ppgta"):
        argv = [
            "run",
            agent,
            "--game",
            game,
            "--ppgta-models",
            str(tmp_path / "models"),
            "--explorer-from",
            str(tmp_path / agent),
        ]
        assert (
            main(
                [
                    *argv,
                    "--episodes",
                    "1",
                    "--quick",
                    "--seed",
                    "6",
                    "--out",
                    str(tmp_path / f"{agent}_bridged"),
                ]
            )
            == 0
        )
        summary = json.loads((tmp_path / f"{agent}_bridged" / "summary.json").read_text())
        assert (
            summary["agent"] == agent
            and summary["trained"]
            and summary["steps_played"] == [200]
            and summary["faults"] == []
        )


def test_a_unix_socket_game_and_no_binary_is_ever_launched(tmp_path, monkeypatch):
    import subprocess

    def refuse(*args, **kwargs):
        raise AssertionError(f"the bridge tried to launch something: {args[:1]}")

    # unrealcv.launcher starts binaries and docker through it
    monkeypatch.setattr(subprocess, "Popen", refuse)
    path = str(tmp_path / "unrealcv.sock")
    with (
        server_module.UnrealCVServer(unix_path=path, size=32, num_oois=8) as unix_server,
        UnrealEnv([unix_server.address]) as env,
    ):
        frames, info = env.reset(0)
        assert frames.shape == (1, 64, 64, 3) and env.connections[0].kind == "unix"
        frames, _, _, truncated, _ = env.step(np.array([0]))
        assert not truncated[0] and env.faults == []
