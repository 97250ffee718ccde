"""The thresholds of reading by meaning (:class:`jgtest.plans.meaning.Thresholds`), measured on the
tuning sentences: ``python -m jgtest.plans.calibrate`` writes ``data/meaning_calibration.json``.

The calibration set is the tuning half of the paraphrase suites (``data/paraphrases_tuning.jsonl``,
each set a plan and the steps its writer meant) and sentences a reader must refuse
(``data/refuse.txt``: ones that name nothing a level can do, and ones a QA engineer could mean two
ways, "Check the switch."). Every sentence is read with no threshold; a reading is *wrong* when it
is not one of its set's annotated steps (aligned in order) or its sentence is to be refused. The
thresholds are the pair that refuses every wrong reading (below ``floor`` or within ``margin`` of
its runner-up) and takes the most right ones; of those pairs, the highest margin, then the highest
floor, each :data:`STEP` above the wrong reading it refuses.

The held-out half (``tests/plans/paraphrases_held_out.jsonl``) plays no part.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from pathlib import Path

from jgtest.files import write_json_atomically
from jgtest.plans import dungeon
from jgtest.plans.meaning import CALIBRATION

DATA = Path(__file__).parent / "data"
TUNING, REFUSE = DATA / "paraphrases_tuning.jsonl", DATA / "refuse.txt"
#: How far above the worst wrong reading each threshold is set.
STEP = 0.01


def step_name(action: str | None, actor: str | None) -> str:
    """A step as the suites write it: ``"interact switch"``, ``"go collectable"``."""
    return f"{action or 'go'} {actor}"


def load_suite(path: Path) -> list[dict]:
    """A paraphrase suite: each set's ``text``, ``nodes`` and ``rules`` (and ``game``)."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def labelled_readings(reader, sets: list[dict], refuse: list[str]) -> list[tuple]:
    """``(confidence, margin, wrong)`` for every sentence's best reading (module docstring)."""
    from jgtest.plans.model import plan_game

    out = []
    for entry in sets:
        readings = reader.read(entry["text"], plan_game(entry.get("game", "Dungeon-v0")))
        for kind, wanted in (("node", entry["nodes"]), ("rule", entry.get("rules", []))):
            mine = [r for r in readings if r.best.kind == kind]
            names = [step_name(r.best.action, r.best.actor) for r in mine]
            matched = {
                i
                for block in difflib.SequenceMatcher(a=names, b=wanted).get_matching_blocks()
                for i in range(block.a, block.a + block.size)
            }
            out += [(*_scores(r), i not in matched) for i, r in enumerate(mine)]
    for sentence in refuse:
        out += [(*_scores(r), True) for r in reader.read(sentence, dungeon)]
    return out


def _scores(reading) -> tuple[float, float]:
    rival = reading.runner_up.confidence if reading.runner_up else 0.0
    return reading.best.confidence, reading.best.confidence - rival


def thresholds(labelled: list[tuple]) -> dict:
    """``floor`` and ``margin`` from :func:`labelled_readings`' output (module docstring), with
    how many right readings they take."""
    wrong = [(c, m) for c, m, w in labelled if w]
    right = [(c, m) for c, m, w in labelled if not w]
    floors = sorted({0.0, *(round(c + STEP, 4) for c, _ in wrong)})
    margins = sorted({0.0, *(round(m + STEP, 4) for _, m in wrong)})
    best = None
    for floor in floors:
        for margin in margins:
            if any(c >= floor and m >= margin for c, m in wrong):
                continue
            taken = sum(c >= floor and m >= margin for c, m in right)
            key = (taken, margin, floor)
            best = max(best, key) if best else key
    taken, margin, floor = best
    return {
        "floor": floor,
        "margin": margin,
        "readings": len(labelled),
        "wrong": len(wrong),
        "right_taken": taken,
        "right": len(right),
    }


def calibrate(reader=None) -> dict:
    """The thresholds measured with ``reader`` (default: the default
    :class:`jgtest.plans.text.TextToPlan`, thresholds off), and the digest of the data they were
    measured on."""
    from jgtest.plans.meaning import Thresholds
    from jgtest.plans.text import TextToPlan

    reader = reader or TextToPlan(thresholds=Thresholds(0.0, 0.0))
    result = thresholds(
        labelled_readings(
            reader, load_suite(TUNING), [s for s in REFUSE.read_text().splitlines() if s]
        )
    )
    digest = hashlib.sha256(TUNING.read_bytes() + REFUSE.read_bytes()).hexdigest()[:16]
    return {**result, "reader": reader.reader, "data_sha256": digest}


if __name__ == "__main__":
    measured = calibrate()
    write_json_atomically(CALIBRATION, measured)
    print(json.dumps(measured, indent=1))
