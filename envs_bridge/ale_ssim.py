"""Ms. Pac-Man's gates seen on screen: RELINE's replication package's frame-similarity check.

The package (``MsPacman/msPacman_RELINE.py``, ``check_bug1`` …) saves each step's screen as a PNG
whose columns ALE doubles (320 x 210), and flags a gate when the screen's 15 x 30 crop at a tunnel
mouth has an SSIM above 0.9 with one of the screenshots of that side (``MsPacman/bug_left``,
``bug_right``); :class:`SsimGates` does the same on envpool's screens, to compare with the RAM
gates. Its references are the package's own screenshots (:func:`package_references`, shipped in
``data/reline_package`` under the package's MIT licence), or crops cut from the real game
(:func:`record_references`, ``python -m envs_bridge.ale_ssim TRACES.json``; :data:`REFERENCES`),
compared at the screen's own width.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

#: The package's SSIM threshold (``if s > 0.9``).
THRESHOLD = 0.9
#: Screen rows of each tunnel's crops (the package's ``top``/``bottom``).
CROP_ROWS = {"upper": (42, 72), "lower": (90, 120)}
#: Native screen columns of each side's crops (the package's 0–15 and 305–320, halved).
CROP_COLUMNS = {"left": (0, 8), "right": (152, 160)}
#: The package's columns of each side's crops, on the screen with its columns doubled.
PACKAGE_CROP_COLUMNS = {"left": (0, 15), "right": (305, 320)}
#: The package's screenshots: ``bug_left/*.png`` and ``bug_right/*.png``, 15 x 30 RGB each.
PACKAGE_REFERENCES = Path(__file__).parent / "data" / "reline_package"
#: Each gate's (tunnel, side), in :data:`envs_bridge.ale.GATE_NAMES` order.
GATES = (("upper", "left"), ("upper", "right"), ("lower", "left"), ("lower", "right"))
#: The reference crops shipped with jgtest: ``left`` and ``right``, ``uint8[R, 30, 8, 3]`` each.
REFERENCES = Path(__file__).parent / "data" / "mspacman_gate_crops.npz"
#: Steps a route goes on through its tunnel past the trace's gate, then back (:func:`tunnel_route`).
THROUGH_STEPS, BACK_STEPS = 24, 40
#: The turning points of the routes the references are cut from: several, so that Ms. Pac-Man
#: crosses each mouth at every offset in the crop, both facings and each phase of her animation.
REFERENCE_THROUGH_STEPS = (18, 20, 22, 24, 26, 28, 30, 32)


def gate_crops(screens: np.ndarray, doubled: bool = False) -> np.ndarray:
    """``uint8[N, 4, 30, W, 3]``: the crop of each gate (:data:`GATES` order) from
    ``[N, 210, 160, 3]`` screens: 8 columns wide (:data:`CROP_COLUMNS`), or with ``doubled`` the
    package's 15 of the screen with its columns doubled (:data:`PACKAGE_CROP_COLUMNS`)."""
    if doubled:
        screens = np.repeat(screens, 2, axis=2)
    columns = PACKAGE_CROP_COLUMNS if doubled else CROP_COLUMNS
    crops = []
    for tunnel, side in GATES:
        (top, bottom), (left, right) = CROP_ROWS[tunnel], columns[side]
        crops.append(screens[:, top:bottom, left:right])
    return np.stack(crops, axis=1)


def package_references() -> dict[str, np.ndarray]:
    """The package's screenshots (:data:`PACKAGE_REFERENCES`): ``{"left": uint8[11, 30, 15, 3],
    "right": uint8[10, 30, 15, 3]}``, RGB, in file-name order."""
    from PIL import Image

    references = {}
    for side in CROP_COLUMNS:
        files = sorted((PACKAGE_REFERENCES / f"bug_{side}").glob("bug_*.png"))
        references[side] = np.stack([np.asarray(Image.open(f).convert("RGB")) for f in files])
    return references


class SsimGates:
    """Which gates each screen shows Ms. Pac-Man in: SSIM > :data:`THRESHOLD` with a reference crop
    of its side.

    The crops are :data:`CROP_ROWS` of the RGB screen, as wide as the references: 15 columns of
    the screen with its columns doubled (the package's, :data:`PACKAGE_CROP_COLUMNS`) or 8 of the
    native one (:data:`CROP_COLUMNS`). The similarity is scikit-image's ``structural_similarity``
    (7 × 7 windows, over the colour channels), the best over the side's references.

    Args:
      references: ``"package"`` (the package's screenshots, :func:`package_references`: the
        default), ``"recorded"`` (crops cut from the real game, :data:`REFERENCES`) or
        ``{"left": uint8[R, 30, W, 3], "right": ...}``.
    """

    def __init__(self, references: str | dict[str, np.ndarray] = "package"):
        if isinstance(references, str):
            if references not in ("package", "recorded"):
                raise ValueError(
                    f"references must be 'package', 'recorded' or a dict, got {references!r}"
                )
            if references == "package":
                references = package_references()
            else:
                with np.load(REFERENCES) as data:
                    references = {side: data[side] for side in CROP_COLUMNS}
        self.references = {side: np.asarray(references[side], np.uint8) for side in CROP_COLUMNS}
        widths = {refs.shape[2] for refs in self.references.values()}
        if widths not in ({8}, {15}):
            raise ValueError(f"reference crops must all be 8 or all 15 columns wide, got {widths}")
        self.doubled = widths == {15}

    def similarity(self, screens: np.ndarray) -> np.ndarray:
        """``float[N, 4]``: each gate's crop's best SSIM against its side's references."""
        from skimage.metrics import structural_similarity

        crops = gate_crops(np.asarray(screens), self.doubled)
        best = np.zeros(crops.shape[:2])
        for i in range(crops.shape[0]):
            for g, (_, side) in enumerate(GATES):
                best[i, g] = max(
                    structural_similarity(crops[i, g], ref, channel_axis=-1)
                    for ref in self.references[side]
                )
        return best

    def __call__(self, screens: np.ndarray) -> np.ndarray:
        """``bool[N, 4]``: the gates each of ``[N, 210, 160, 3]`` screens shows Ms. Pac-Man in."""
        return self.similarity(screens) > THRESHOLD


def tunnel_route(trace: dict, through: int = THROUGH_STEPS) -> list[int]:
    """A trace into a gate (``{"actions": [...]}``) continued through its tunnel and back:
    ``through`` steps on in the direction it entered (its last left or right; RELINE's action
    ids), then :data:`BACK_STEPS` the other way and :data:`BACK_STEPS` onwards again, so that
    Ms. Pac-Man passes each mouth of the tunnel both ways, the later passes at a phase that
    ``through`` sets, and never turns inside a mouth (envpool max-pools the last two of each
    step's four frames: a turn there draws both facings at once)."""
    outwards = next(a for a in reversed(trace["actions"]) if a in (1, 3))  # right 1, left 3
    back = 4 - outwards
    return (
        list(trace["actions"])
        + [outwards] * through
        + [back] * BACK_STEPS
        + [outwards] * BACK_STEPS
    )


def record_references(
    traces: list[dict], seed: int = 0, throughs: tuple[int, ...] = REFERENCE_THROUGH_STEPS
) -> dict[str, np.ndarray]:
    """Reference crops from the real game: each trace's :func:`tunnel_route`, turning at each of
    ``throughs``, is replayed from a reset, and the crop of every gate Ms. Pac-Man's RAM position is
    in (:func:`envs_bridge.ale.gates_at`) is kept, unless it looks like the empty mouth (SSIM >
    :data:`THRESHOLD` with the crop at reset: she is past the screen's edge there) or is kept
    already: ``{"left": uint8[R, 30, 8, 3], "right": ...}``."""
    from skimage.metrics import structural_similarity

    from envs_bridge.ale import MsPacmanEnv

    kept: dict[str, list[np.ndarray]] = {side: [] for side in CROP_COLUMNS}
    routes = [tunnel_route(trace, through) for trace in traces for through in throughs]
    for actions in routes:
        with MsPacmanEnv(num_envs=1, seed=seed, screens=True) as env:
            empty = gate_crops(env.reset(seed)[0])[0]  # the mouths before anyone enters them
            for action in actions:
                screens, _, terminated, _, info = env.step(np.array([action]))
                for g in np.flatnonzero(info["ram_gates"][0]):
                    crop, side = gate_crops(screens)[0, g], GATES[g][1]
                    # inside, off screen
                    hidden = structural_similarity(crop, empty[g], channel_axis=-1) > THRESHOLD
                    if not hidden and not any(np.array_equal(crop, k) for k in kept[side]):
                        kept[side].append(crop)
                if terminated[0]:
                    break
    missing = [side for side, crops in kept.items() if not crops]
    if missing:
        raise ValueError(
            f"the traces never show Ms. Pac-Man in a {' or '.join(missing)} mouth: no "
            "reference crops there"
        )
    return {side: np.stack(crops) for side, crops in kept.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description="Write Ms. Pac-Man's SSIM reference crops from action traces."
    )
    parser.add_argument(
        "traces", type=Path, help='a JSON file {"traces": [{"actions": [...]}, ...]}'
    )
    parser.add_argument("--out", type=Path, default=REFERENCES)
    args = parser.parse_args(argv)
    references = record_references(json.loads(args.traces.read_text())["traces"])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, **references)
    print(
        f"wrote {args.out}: "
        + ", ".join(f"{side} {len(crops)}" for side, crops in references.items())
    )


if __name__ == "__main__":
    main()
