"""Reading a plan's sentences by meaning: each step's object and its action frame scored against a
game's canonical phrases with a paraphrase-trained sentence encoder (all-MiniLM-L6-v2,
:mod:`jgtest.nets.sentence_encoder`), by cosine similarity.

A sentence is cut into its steps, and each step into an **object phrase** ("the lever that opens
the gate") and an **action frame** with the object as "it" ("pull it"), by
:mod:`jgtest.plans.sentence_shape`; a pronoun takes the last step's object. A reading
``(action, actor)`` of the game's ``READINGS`` then has the confidence

    s_actor · s_action,   s_actor = max cos(object phrase, ACTOR_PHRASES[actor]),
                          s_action = max cos(action frame, ACTION_PHRASES[action]
                                                           + READING_PHRASES[(action, actor)]).

``READING_PHRASES`` holds what an action is called on one actor only: getting to a coin is
picking it up, getting to a switch is not.

Scoring the action apart from its object is what tells "hit the switch" (pressing) from "go to the
switch": a whole sentence's embedding is dominated by its noun, and the two read alike. The
thresholds that refuse a reading (:class:`Thresholds`) are calibrated on the tuning sentences
(:mod:`jgtest.plans.calibrate`), never set by hand.

* chosen: a game's readings are the steps it can validate, so no sentence is read as a step the
  level cannot check.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from jgtest.plans.sentence_shape import DETERMINERS, RELATIVES, Step, noun_phrase

#: Where the calibrated thresholds are kept (``python -m jgtest.plans.calibrate`` writes them).
CALIBRATION = Path(__file__).parent / "data" / "meaning_calibration.json"


@dataclasses.dataclass(frozen=True)
class Thresholds:
    """A reading is taken when its confidence is at least ``floor`` and ``margin`` above the best
    reading with another action or actor."""

    floor: float
    margin: float

    @classmethod
    def calibrated(cls, path: Path = CALIBRATION) -> Thresholds:
        stored = json.loads(path.read_text())
        return cls(stored["floor"], stored["margin"])


class MeaningScorer:
    """A game vocabulary's canonical phrases (with ``extra_actions`` and ``extra_actors``, more
    phrases by action and actor) embedded once; :meth:`score` for a plan's steps."""

    def __init__(self, vocab, encoder=None, extra_actions=None, extra_actors=None):
        from jgtest.nets.sentence_encoder import minilm

        self.encoder = encoder or minilm()
        self.readings = tuple(vocab.READINGS)
        phrases = lambda own, extra: {
            a: self.encoder.encode(list(dict.fromkeys((*p, *(extra or {}).get(a, ())))))
            for a, p in own.items()
        }
        self._actor_phrases = phrases(vocab.ACTOR_PHRASES, extra_actors)
        self._actor_words = {
            w
            for actor, own in vocab.ACTOR_PHRASES.items()
            for phrase in (*own, *(extra_actors or {}).get(actor, ()))
            for w in phrase.split()
            if w not in DETERMINERS
        }
        self._modified = {
            (w, noun[-1])
            for actor, own in vocab.ACTOR_PHRASES.items()
            for phrase in (*own, *(extra_actors or {}).get(actor, ()))
            for noun in [noun_phrase(phrase.split())]
            for w in noun[:-1]
        }
        self._actor_nouns = {
            actor: {
                noun[-1]
                for phrase in (*own, *(extra_actors or {}).get(actor, ()))
                for noun in [noun_phrase(phrase.split())]
                if noun
            }
            for actor, own in vocab.ACTOR_PHRASES.items()
        }
        names = [
            (" ".join(noun_phrase(phrase.split())), actor)
            for actor, own in vocab.ACTOR_PHRASES.items()
            for phrase in (*own, *(extra_actors or {}).get(actor, ()))
        ]
        self._names = {
            name: actor
            for name, actor in names
            if name and {a for n, a in names if n == name} == {actor}
        }
        self._action_phrases = phrases(vocab.ACTION_PHRASES, extra_actions)
        self._reading_phrases = {
            reading: self.encoder.encode(list(p))
            for reading, p in getattr(vocab, "READING_PHRASES", {}).items()
        }

    def known_words(self, phrase: str) -> str:
        """``phrase`` with the words none of the actor phrases has dropped ("the red button" → "the
        button", "the lava pool" → "the lava"); ``""`` when it keeps none or all of them."""
        words = phrase.split()
        if words and words[0] in DETERMINERS:
            words = words[1:]
        kept = [w for w in words if w in self._actor_words]
        return f"the {' '.join(kept)}" if kept and len(kept) < len(words) else ""

    def with_attached(self, step: Step) -> str:
        """``step``'s object phrase with the modifiers its attached phrase gives it ("the door" with
        "the blue key" → "the blue door"): those the game's actor phrases put before the object's
        noun ("the blue door"; "the switch with the green light" stays); ``""`` when none."""
        own = noun_phrase(step.object.split())
        carried = [
            w
            for w in noun_phrase(step.attached.split())[:-1]
            if own and (w, own[-1]) in self._modified and w not in own
        ]
        if not carried:
            return ""
        return " ".join(["the", *carried, *own])

    def named(self, step: Step) -> str | None:
        """The actor ``step``'s object names exactly, by one of its phrases and no other actor's
        ("the shotgun", not "the shotgun shells"); ``None`` when none does."""
        return self._names.get(" ".join(w for w in step.object.split() if w not in DETERMINERS))

    def clause_actors(self, phrase: str) -> set:
        """The actors a relative clause of ``phrase`` names and its head does not: "the device
        that unlocks the door" is no door."""
        words = phrase.split()
        k = next((k for k, w in enumerate(words[1:], 1) if w in RELATIVES), None)
        if k is None:
            return set()
        head, clause = set(words[:k]), set(words[k + 1 :])
        return {a for a, nouns in self._actor_nouns.items() if nouns & clause and not nouns & head}

    def score(
        self, plan_steps: list[Step], in_place: list[bool] | None = None
    ) -> list[dict[tuple, float]]:
        """Each step's confidence in every reading, ``{(action, actor): s_actor · s_action}``; a
        step naming no object scores its actors on its whole text, one with an attached phrase on
        its object :meth:`with_attached`, one whose object phrase has words no actor phrase has, on
        the better of it and its :meth:`known_words`; an actor its relative clause names is not
        its object (:meth:`clause_actors`). A step that acts
        ``in_place`` (:func:`acts_in_place`) acts on its object: getting there is read only as
        collecting it (``READING_PHRASES``), never as walking to it."""
        import numpy as np

        n = len(plan_steps)
        named = [self.with_attached(s) or s.object or s.text for s in plan_steps]
        # one batch: the objects, their known words, the frames whole and bare
        encoded = self.encoder.encode(
            [
                *named,
                *(self.known_words(t) or t for t in named),
                *(s.frame for s in plan_steps),
                *(bare_frame(s.frame) for s in plan_steps),
            ]
        )
        objects, known = encoded[:n], encoded[n : 2 * n]
        frames = np.stack([encoded[2 * n : 3 * n], encoded[3 * n :]], axis=1)  # (steps, 2, width)
        out = []
        for step, obj, own_words, frame, touches in zip(
            plan_steps, objects, known, frames, in_place or [False] * len(plan_steps)
        ):
            not_named = self.clause_actors(step.object)
            s_actor = {
                a: 0.0 if a in not_named else float(max((e @ obj).max(), (e @ own_words).max()))
                for a, e in self._actor_phrases.items()
            }
            s_action = {a: float((e @ frame.T).max()) for a, e in self._action_phrases.items()}
            s_reading = {r: float((e @ frame.T).max()) for r, e in self._reading_phrases.items()}
            scores = {}
            for a, o in self.readings:
                own = 0.0 if touches and a is None else s_action[a]
                scores[(a, o)] = s_actor[o] * max(own, s_reading.get((a, o), 0.0))
            out.append(scores)
        return out


def bare_frame(frame: str) -> str:
    """An action frame without what follows its object and particle ("use it to end the level" →
    "use it", "attack it on sight" → "attack it", "pick it up" stays)."""
    words = frame.split()
    if "it" not in words:
        return frame
    end = words.index("it") + 1
    if end < len(words) and words[end] in ("up", "down", "on", "off", "out", "over", "across"):
        end += 1
    return " ".join(words[:end])
