"""The real SuperTuxKart bridge (``envs_bridge.supertuxkart``) and its asset folder.

pystk2 runs one race per process and can be initialised only once in a
process, so every check that needs the game runs in one subprocess
(:func:`_race_report`: a few short races of one env, ≈ 15 s) that writes its
measurements to a JSON file; the pytest process never calls ``pystk2.init``.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from envs_bridge import stk_assets
from envs_bridge.stk_assets import DEBIAN_DATA, prepare_data_dir

REPO = Path(__file__).resolve().parents[2]
needs_game = pytest.mark.skipif(
    importlib.util.find_spec("pystk2") is None,
    reason="pysupertuxkart2 (jgtest[bridges]) is not installed",
)


# ----- the asset folder (no game needed) -------------------------------------------------------
def test_data_dir_is_built_idempotently(tmp_path):
    root = prepare_data_dir(tmp_path / "stk")
    marker = root / "data" / "supertuxkart.1.5"
    first = marker.stat().st_ino
    assert prepare_data_dir(tmp_path / "stk") == root == (tmp_path / "stk").absolute()
    assert marker.stat().st_ino == first  # kept, not rewritten
    assert marker.read_bytes() == (DEBIAN_DATA / "supertuxkart.1.4").read_bytes()
    assert (root / "data" / "skins" / "classic").resolve() == (
        DEBIAN_DATA / "skins" / "peach"
    ).resolve()
    assert (root / "data" / "skins").is_dir() and not (root / "data" / "skins").is_symlink()
    for entry in DEBIAN_DATA.iterdir():
        if entry.name != "skins":
            assert (root / "data" / entry.name).resolve() == entry.resolve()
    assert (root / "data" / "tracks" / "lighthouse").is_dir()
    assert (root / "data" / "tracks" / "scotland").is_dir()  # the package's track


def test_data_dir_location_and_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("JGTEST_STK_DATA", str(tmp_path / "from_env"))
    monkeypatch.delenv("SUPERTUXKART_DATADIR", raising=False)
    monkeypatch.delenv("MESA_EXTENSION_OVERRIDE", raising=False)
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")  # as the Gymnasium bridge leaves it
    assert stk_assets.default_root() == tmp_path / "from_env"
    root = stk_assets.configure_environment()
    assert root == tmp_path / "from_env" and (root / "data" / "supertuxkart.1.5").is_file()
    assert os.environ["SUPERTUXKART_DATADIR"] == str(root)
    assert os.environ["MESA_EXTENSION_OVERRIDE"] == stk_assets.MESA_EXTENSION_OVERRIDE
    assert "SDL_VIDEODRIVER" not in os.environ  # without OpenGL, pystk2.init exits the process


def test_data_dir_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="apt-get install supertuxkart-data"):
        prepare_data_dir(tmp_path / "stk", source=tmp_path / "no_debian_package")
    (tmp_path / "taken" / "data").mkdir(parents=True)
    (tmp_path / "taken" / "data" / "tracks").write_text("a real file")
    with pytest.raises(FileExistsError, match="not a symlink"):
        prepare_data_dir(tmp_path / "taken")


# ----- options refused before the game starts --------------------------------------------------
@pytest.mark.parametrize(
    "options, message",
    [
        ({"num_envs": 2}, "envs_bridge.pool"),
        ({"frame_size": (0, 128)}, "frame_size"),
        ({"frames_per_step": 0}, "frames_per_step"),
        ({"max_seconds": -1.0}, "max_seconds"),
        ({"cell_buckets": (200,)}, "cell_buckets"),
    ],
)
def test_bad_options(options, message):
    from envs_bridge.supertuxkart import SuperTuxKartEnv

    with pytest.raises(ValueError, match=message):
        SuperTuxKartEnv(**options)


# ----- real races, in a subprocess -------------------------------------------------------------
def _autopilot(state, nodes) -> int:
    """Throttle towards the centre line three segments ahead (test-only driver, public pystk2
    API)."""
    state.update()
    kart = state.karts[0]
    here = np.asarray(kart.location)[[0, 2]]
    forward = np.asarray(kart.front)[[0, 2]] - here
    aim = nodes[(kart.node + 3) % len(nodes)].mean(axis=0) - here
    side = float(aim @ np.array([forward[1], -forward[0]])) / (
        np.linalg.norm(aim) * np.linalg.norm(forward) + 1e-9
    )
    return 5 if side > 0.1 else 4 if side < -0.1 else 1  # throttle right / left / straight


def _race_report(path: str) -> None:
    """Plays short races and writes what the tests check to ``path``, as JSON (run in a
    subprocess)."""
    import pystk2

    from envs_bridge.supertuxkart import SuperTuxKartEnv

    out = {}

    def steps(env, actions):
        rows = []
        for a in actions:
            frames, reward, term, trunc, info = env.step(np.array([a]))
            tel = info["telemetry"]
            rows.append(
                {
                    "frame_std": float(frames.std()),
                    "frame_sum": int(frames.sum(dtype=np.int64)),
                    "frames": [list(frames.shape), str(frames.dtype)],
                    "reward": float(reward[0]),
                    "terminated": bool(term[0]),
                    "truncated": bool(trunc[0]),
                    "autoreset": bool(info["autoreset"][0]),
                    "path_done": float(info["path_done"][0]),
                    "delta": float(info["delta_path_done"][0]),
                    "centering": float(info["centering"][0]),
                    "stuck": bool(info["stuck"][0]),
                    "frame_ms": float(tel.frame_time_ms[0]),
                    "cell": int(tel.cell[0]),
                    "telemetry": {k: [list(v.shape), str(v.dtype)] for k, v in vars(tel).items()},
                    "info": {
                        k: [list(v.shape), str(v.dtype)]
                        for k, v in info.items()
                        if k != "telemetry"
                    },
                }
            )
        return rows

    env = SuperTuxKartEnv("lighthouse", max_seconds=60.0, seed=0)
    try:
        SuperTuxKartEnv("lighthouse")
    except RuntimeError as e:
        out["open_error"] = str(e)
    frames, info = env.reset(seed=0)
    out["meta"] = {
        "name": env.name,
        "num_actions": env.num_actions,
        "num_cells": env.num_cells,
        "bugs": env.num_bugs,
        "max_steps": env.max_steps_in_episode,
        "step_seconds": env.step_seconds,
        "length": env.track_length,
        "reset": [list(frames.shape), str(frames.dtype)],
        "reset_path_done": float(info["path_done"][0]),
        "reset_autoreset": bool(info["autoreset"][0]),
    }
    # into a wall, truncated, autoreset
    out["throttle"] = steps(env, [1] * (env.max_steps_in_episode + 2))
    env.reset(seed=0)
    out["right"] = steps(env, [1] * 3 + [5] * 5)  # the package's throttle + right
    env.reset(seed=0)
    out["left"] = steps(env, [1] * 3 + [4] * 5)

    env.reset(seed=0)
    state, track = pystk2.WorldState(), pystk2.Track()
    track.update()
    nodes = np.asarray(track.path_nodes)[:, :, [0, 2]]
    lap = []
    while len(lap) < env.max_steps_in_episode and not (
        lap and (lap[-1]["terminated"] or lap[-1]["truncated"])
    ):
        lap += steps(env, [_autopilot(state, nodes)])
    out["lap"] = lap
    out["after_lap"] = steps(env, [1, 1])
    del state, track
    frames, info = env.reset(seed=3)  # another seed: a new race
    out["new_seed"] = [list(frames.shape), float(info["path_done"][0]), steps(env, [1])[0]["delta"]]
    env.close()
    env.close()
    try:
        env.step(np.array([1]))
    except RuntimeError as e:
        out["closed_error"] = str(e)
    try:
        SuperTuxKartEnv("lighthouse")
    except RuntimeError as e:
        out["again_error"] = str(e)
    Path(path).write_text(json.dumps(out))


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("stk")
    # SDL's dummy video driver, as a process that played a pygame game first has it: the bridge
    # must still render
    env = dict(os.environ, JGTEST_STK_DATA=str(folder / "assets"), SDL_VIDEODRIVER="dummy")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    code = (
        "from tests.bridges.test_supertuxkart import _race_report; "
        f"_race_report({str(folder / 'report.json')!r})"
    )
    command = [sys.executable, "-X", "faulthandler", "-c", code]
    run = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, (
        f"race subprocess exited {run.returncode}:\n{run.stdout[-2000:]}\n{run.stderr[-4000:]}"
    )
    return json.loads((folder / "report.json").read_text())


#: Steps of the first episode of the report (60 s cap / 0.4 s a step), and its rows.
CAP = 150


def _episode(report):
    return report["throttle"][:CAP]


@needs_game
def test_contract_metadata_and_reset(report):
    meta = report["meta"]
    assert (
        meta["name"] == "supertuxkart:lighthouse" and meta["num_actions"] == 8 and meta["bugs"] == 0
    )
    assert meta["num_cells"] == 200 * 24
    assert meta["step_seconds"] == pytest.approx(0.4) and meta["max_steps"] == CAP
    assert 800 < meta["length"] < 1000  # lighthouse's lap, metres
    assert meta["reset"] == [[1, 96, 128, 3], "uint8"] and not meta["reset_autoreset"]
    assert -5.0 < meta["reset_path_done"] < 0.0  # the grid stands just behind the start line
    shape, path_done, delta = report["new_seed"]  # reset with another seed starts a new race
    assert (
        shape == [1, 96, 128, 3]
        and path_done == pytest.approx(meta["reset_path_done"], abs=0.5)
        and delta > 0
    )


@needs_game
def test_frames_and_frame_times(report):
    rows = _episode(report)
    assert all(r["frames"] == [[1, 96, 128, 3], "uint8"] for r in rows)
    assert all(r["frame_std"] > 5.0 for r in rows)  # real pictures, not a constant frame
    assert len({r["frame_sum"] for r in rows[:40]}) > 20  # that change as the kart drives
    times = np.array([r["frame_ms"] for r in rows])
    assert np.all(times > 0.0) and np.all(times < 1000.0), times
    telemetry = rows[0]["telemetry"]
    assert telemetry == {
        "position": [[1, 2], "float32"],
        "cell": [[1], "int32"],
        "bugs_fired": [[1, 0], "bool"],
        "game_reward": [[1], "float32"],
        "frame_time_ms": [[1], "float32"],
        "crashed": [[1], "bool"],
    }
    assert rows[0]["info"] == {
        "autoreset": [[1], "bool"],
        "path_done": [[1], "float32"],
        "delta_path_done": [[1], "float32"],
        "centering": [[1], "float32"],
        "stuck": [[1], "bool"],
    }
    assert all(0 <= r["cell"] < 200 * 24 for r in rows)


@needs_game
def test_progress_centering_and_reward(report):
    rows = _episode(report)
    path = np.array([r["path_done"] for r in rows])
    assert path[29] - report["meta"]["reset_path_done"] > 50.0  # throttle drives down the track
    assert np.all(np.diff(path[:8]) > 0.0)  # then off the road outside the first bend, where the
    assert np.all(np.diff(path[:25]) >= 0.0)  # projection can stay on a vertex of the centre line
    assert np.allclose(np.diff(path), [r["delta"] for r in rows[1:]], atol=1e-3)
    centering = np.array([r["centering"] for r in rows])
    assert np.all(np.isfinite(centering)) and np.all(np.abs(centering) < 30.0)  # road edge at 10
    for r in rows:  # r_g = -1 off the road beyond θ, else the progress clipped to [0, M]
        expected = -1.0 if abs(r["centering"]) > 20 else min(max(r["delta"], 0.0), 10.0)
        assert r["reward"] == pytest.approx(expected, abs=1e-4)
    # Right of the driving direction is positive: steering right raises the centering, left lowers
    # it.
    right, left = report["right"], report["left"]
    assert right[-1]["centering"] > right[2]["centering"] + 2.0
    assert left[-1]["centering"] < left[2]["centering"] - 2.0


@needs_game
def test_stuck_flag_follows_the_window(report):
    rows = _episode(report)
    path = [report["meta"]["reset_path_done"]] + [r["path_done"] for r in rows]
    for i, r in enumerate(rows):  # path[i + 1] is the path done after step i
        expected = i + 1 >= 10 and path[i + 1] - path[i + 1 - 10] < 1.0
        assert r["stuck"] == expected, i
    # driving straight, the kart ends against the wall of lighthouse's first bend
    assert rows[-1]["stuck"]


@needs_game
def test_truncation_at_the_cap_then_autoreset(report):
    rows = report["throttle"]
    assert [r["truncated"] for r in rows] == [False] * (CAP - 1) + [True, False, False]
    assert [r["autoreset"] for r in rows] == [False] * CAP + [True, False]
    assert not any(r["terminated"] for r in rows)
    reset_step, next_step = rows[CAP:]
    assert (
        reset_step["reward"] == 0.0 and reset_step["frame_ms"] == 0.0 and reset_step["delta"] == 0.0
    )
    assert reset_step["path_done"] == pytest.approx(report["meta"]["reset_path_done"], abs=0.5)
    assert next_step["delta"] > 0.0 and next_step["frame_ms"] > 0.0


@needs_game
def test_lap_terminates_with_the_finish_bonus_then_autoresets(report):
    lap = report["lap"]
    last = lap[-1]
    assert last["terminated"] and not last["truncated"], f"no finish in {len(lap)} steps"
    assert not any(r["terminated"] or r["truncated"] for r in lap[:-1])
    assert last["reward"] == pytest.approx(1000.0 + min(max(last["delta"], 0.0), 10.0), abs=1e-3)
    # one lap from the line
    assert last["path_done"] == pytest.approx(report["meta"]["length"], abs=15.0)
    reset_step, next_step = report["after_lap"]
    assert reset_step["autoreset"] and reset_step["reward"] == 0.0 and reset_step["frame_ms"] == 0.0
    assert not (reset_step["terminated"] or reset_step["truncated"])
    assert reset_step["path_done"] == pytest.approx(report["meta"]["reset_path_done"], abs=0.5)
    assert not next_step["autoreset"] and next_step["delta"] > 0.0


@needs_game
def test_one_race_per_process_and_clear_errors(report):
    assert "already open" in report["open_error"] and "envs_bridge.pool" in report["open_error"]
    assert "closed" in report["closed_error"]
    assert "initialised" in report["again_error"]


def test_the_package_track_and_actions_are_the_defaults(tmp_path):
    import envs_bridge
    from envs_bridge import supertuxkart
    from jgtest.envs.kart import ACTION_NAMES

    assert envs_bridge.game_factory("supertuxkart:").keywords["track"] == "scotland"
    defaults = inspect.signature(supertuxkart.SuperTuxKartEnv).parameters
    assert defaults["track"].default == "scotland" and defaults["actions"].default == "package"
    # SuperTuxKart_RELINE.py's POSSIBLE_ACTIONS: NONE, UP, LEFT, RIGHT, UP+LEFT, UP+RIGHT,
    # UP+POWER, UP+NITRO
    rows = {name: rest for name, *rest in supertuxkart.PACKAGE_ACTIONS}
    assert list(rows) == [
        "none",
        "throttle",
        "left",
        "right",
        "throttle_left",
        "throttle_right",
        "throttle_powerup",
        "throttle_nitro",
    ]
    assert rows["none"] == [0.0, False, 0.0, False, False]
    assert rows["left"][2] == -rows["right"][2] == 1.0 and rows["left"][0] == 0.0
    assert rows["throttle_powerup"] == [1.0, False, 0.0, True, False]
    assert rows["throttle_nitro"] == [1.0, False, 0.0, False, True]
    assert not any(brake for _, _, brake, *_ in supertuxkart.PACKAGE_ACTIONS)  # no brake
    twin = [name for name, *_ in supertuxkart.TWIN_ACTIONS]
    assert twin == list(ACTION_NAMES)
    with pytest.raises(ValueError, match="actions must be one of package, twin"):
        supertuxkart.SuperTuxKartEnv("lighthouse", actions="arcade", data_dir=tmp_path / "stk")


def test_unknown_track_lists_the_race_tracks(tmp_path, monkeypatch):
    from envs_bridge.supertuxkart import SuperTuxKartEnv

    monkeypatch.delenv("SUPERTUXKART_DATADIR", raising=False)
    monkeypatch.delenv("MESA_EXTENSION_OVERRIDE", raising=False)
    with pytest.raises(ValueError, match="no_such_track.*lighthouse") as error:
        SuperTuxKartEnv("no_such_track", data_dir=tmp_path / "stk")  # refused before pystk2.init
    # arenas are not races
    assert "zengarden" in str(error.value) and "battleisland" not in str(error.value)
    assert stk_assets.race_tracks(tmp_path / "stk")[:3] == ["abyss", "black_forest", "candela_city"]
