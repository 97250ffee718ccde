"""Reading a plan's sentences by meaning: each step's object and its action frame scored against a
game's canonical phrases with a paraphrase-trained sentence encoder (all-MiniLM-L6-v2,
:mod:`jgtest.nets.sentence_encoder`), by cosine similarity.

A sentence is cut into its steps (:func:`steps`: "Go to the gate and open it." is two), and each
step into an **object phrase** ("the lever that opens the gate") and an **action frame** with the
object as "it" ("pull it"); a pronoun takes the last step's object. A reading ``(action, actor)``
of the game's ``READINGS`` then has the confidence

    s_actor · s_action,   s_actor = max cos(object phrase, ACTOR_PHRASES[actor]),
                          s_action = max cos(action frame, ACTION_PHRASES[action]
                                                           + READING_PHRASES[(action, actor)]).

``READING_PHRASES`` holds what an action is called on one actor only: getting to a coin is
picking it up, getting to a switch is not.

Scoring the action apart from its object is what tells "hit the switch" (pressing) from "go to the
switch": a whole sentence's embedding is dominated by its noun, and the two read alike. The
thresholds that refuse a reading (:class:`Thresholds`) are calibrated on the tuning sentences
(:func:`calibrate`), never set by hand.

* chosen: a game's readings are the steps it can validate, so no sentence is read as a step the
  level cannot check.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Collection
from pathlib import Path

#: Where the calibrated thresholds are kept (``python -m jgtest.plans.calibrate`` writes them).
CALIBRATION = Path(__file__).parent / "data" / "meaning_calibration.json"
DETERMINERS = frozenset(
    "the a an any every each some all that this those these its his her their your".split()
)
PRONOUNS = frozenset("it them one there him her".split())
#: A step's subject, left out before its verb ("then you jump the lava"; "the player" too).
SUBJECTS = frozenset("you we i they".split())
#: Verbs that open a check written as a test case ("verify the player can open the door").
CHECKS = frozenset("verify check confirm ensure".split())
#: Modal verbs ("that should open the door").
MODALS = frozenset("should will would must can could may might".split())
#: Verbs that only lead to the verb after them ("go activate the shrine").
SERIAL_VERBS = frozenset({"go", "come"})
#: Ways of saying "go", read as it ("make your way to the lever").
GOING = ("make your way", "find your way", "head over", "make my way")
#: A step that only stops the player where the last one left it ("and stop there", not "stop at
#: the door"): no node (:func:`only_stops`).
STOPS = frozenset({"stop", "halt"})
#: Openings of a sentence that comments and asks for nothing ("This checks the door.", "I just
#: want to check the door logic.").
COMMENTARY = frozenset("i i'm i'd i've this these it's that's here's there's note".split())
#: Negations: a sentence opening on one asks not to act; a step holding one is refused.
NEGATIONS = frozenset("don't dont never not".split())
#: Words that end an object phrase (prepositions, particles, conjunctions); a relative clause
#: ("that opens the door") stays in it.
PHRASE_END = frozenset(
    "to by with at in on near behind once until from so before after when while and then if for "
    "using without across over past through into onto up down off out around under along beside "
    "next inside whenever unless as".split()
)
RELATIVES = frozenset("that which who where".split())
#: A sentence opening on one of these is a condition and its main clause, never two steps.
SUBORDINATORS = frozenset("if when whenever once should unless as".split())
#: The conditions that make a sentence a rule, whatever the classifier says ("once" orders steps).
CONDITIONS = frozenset("if when whenever should unless".split())
#: Light verbs, whose object or the words after them carry the meaning ("do something with it",
#: "take out", "make a jump"): they say nothing of moving or staying.
LIGHT_VERBS = frozenset("do make take have give get".split())
#: The prepositions whose phrase, after an object, may say which one it is: an instrument ("the
#: door with the blue key") or a feature ("the door with the blue stripe").
ATTACHING = frozenset({"with", "using"})
#: Where a compound sentence may be cut, when a verb follows.
JOINS = frozenset({",", ";", "and", "then", "+", "&"})
#: Arrows that chain a terse note's steps ("pull lever > walk to door"), read as "then".
_ARROWS = re.compile(r"\s*(?:->|=>|→|>)\s*")
_TOKEN = re.compile(r"[a-z0-9']+|[,;:+&]|(?<=\s)-(?=\s)")
#: How a "when" clause about the player's own progress opens ("when you're across"): it orders
#: the steps, as "once" does; another ("when a goblin comes near") makes a rule.
_PROGRESS = (["you're"], ["you've"], ["you", "are"], ["you", "have"], ["you", "reach"])
_PROGRESS += (["you", "get"], ["you", "arrive"], ["you", "land"], ["the", "player"])
#: States reached once, that make a "when" clause order the steps ("when the goblin is dead").
STATES = frozenset("down dead open opened opens gone done over across through past killed".split())
#: Verbs that only help another, or say where the player got to: the clause they open names no
#: action of the player's ("once you have the key", "after you reach the lava").
AUXILIARIES = frozenset("be is are was were been being am have has had do does did".split())
ARRIVING = frozenset("reach reached arrive arrived land landed get got enter entered".split())
#: Clauses inside a step that put another action before or after it ("open the door after you
#: kill the goblin"): the step is refused (:func:`acts_again`), since its order is not the text's.
ORDERING = frozenset("after before once until".split())
#: What marks a sentence as a standing rule and not a step: a quantifier, a condition or a span of
#: the run ("kill any goblin", "whenever...", "on sight", "at all times"); with none, a sentence
#: is a step whatever the classifier says ("kill goblin").
RULE_WORDS = frozenset(
    "any every each all always never whenever wherever if when unless throughout".split()
)
RULE_PHRASES = (("on", "sight"), ("on", "the", "way"), ("along", "the", "way"), ("as", "you", "go"))


@dataclasses.dataclass(frozen=True)
class Step:
    """One step of a sentence: its text, object phrase (``""``: none named), action frame and the
    phrase after a "with" or "using" that follows the object ("open the door with the blue key":
    ``"the blue key"``; ``""``: none)."""

    text: str
    object: str
    frame: str
    attached: str = ""


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


@functools.cache
def _verb_like(word: str) -> bool:
    """Whether ``word`` can open an imperative step: WordNet knows it as a verb."""
    from jgtest.plans import lexicon

    if word in DETERMINERS or word in PRONOUNS or word in PHRASE_END or not word.isalpha():
        return False
    return any(
        lexicon.wordnet().synsets(lemma, lexicon.VERB) for lemma in lexicon.lemmas(word, "v")
    )


def tokens(text: str) -> list[str]:
    """``text``'s lower-case words and the marks that shape a step (``,`` ``;`` ``:`` and a
    spaced ``-``); a way of saying "go" (:data:`GOING`) becomes "go"."""
    text = _ARROWS.sub(" then ", text.lower())
    for idiom in GOING:
        text = re.sub(rf"\b{idiom}\b", "go", text)
    return _TOKEN.findall(text)


def is_commentary(sentence: str) -> bool:
    """Whether ``sentence`` comments, or asks the player not to act, and asks for nothing: it opens
    on :data:`COMMENTARY` or :data:`NEGATIONS` ("Don't pull it yet."), and no clause after a join
    or a dash opens on a verb ("There's a lever by the start - walk over to it.")."""
    words = tokens(sentence)
    if not words or not (words[0] in COMMENTARY or _negated(words)):
        return False
    return not any(
        w in JOINS | {"-", ":"}
        and _step_start(words, k + 1, ()) < len(words)
        and _verb_like(words[_step_start(words, k + 1, ())])
        for k, w in enumerate(words)
    )


def _negated(words: list[str]) -> bool:
    """Whether ``words`` open on a negation ("don't", "do not", "never")."""
    return words[0] in NEGATIONS or words[:2] == ["do", "not"]


def acts_again(step: list[str]) -> bool:
    """Whether ``step``, read as one, holds a second action it was not cut at, or says not to act:

    * a verb after its first one, after a join or "it" ("player goes to the lever and pulls it",
      "with it open the door", "walk over n use it"), with an object, a pronoun or a particle
      after it;
    * a clause of :data:`ORDERING` that acts (:func:`clause_acts`: "open the door after you kill
      the goblin");
    * an "and" it was not cut at (two objects: "pick up shotgun and shells");
    * a negation (:data:`NEGATIONS`: "walk up to the lever but don't pull it").

    A condition or an object first ("the gate, open it") is one step. Such a step is refused rather
    than read short (a step left out is a misread)."""
    if not step or step[0] in SUBORDINATORS | DETERMINERS:  # a condition, an object first
        return False
    if any(w in ORDERING and clause_acts(step[k + 1 :]) for k, w in enumerate(step) if k):
        return True
    if any(w in ("and", "&", "+") for w in step[1:]):  # two objects: "pick up shotgun and shells"
        return True
    if NEGATIONS & set(step):  # "walk up to the lever but don't pull it"
        return True
    glue = JOINS | {"n", "after", "it"}
    after = DETERMINERS | PRONOUNS | {"to", "over", "across", "up"}
    verbs = [k for k, w in enumerate(step) if w not in DETERMINERS and _verb_like(w)]
    return any(
        k > verbs[0] + 1 and step[k - 1] in glue and k + 1 < len(step) and step[k + 1] in after
        for k in verbs[1:]
    )


def _subject(word: str) -> bool:
    """Whether ``word`` is a subject, alone or with its auxiliary ("you", "you've", "we'll")."""
    return word in SUBJECTS or word == "player" or word.partition("'")[0] in SUBJECTS


def clause_acts(words: list[str]) -> bool:
    """Whether a clause opening on ``words`` (after its "after", "once"...) names an action of the
    player's: past a subject, modals and auxiliaries, a verb ("opening the door", "you've jumped
    the lava", "you go kill the goblin"); not a state ("you're across", "that's done"), an
    arrival ("you reach the lava") nor another's doing ("the goblin dies")."""
    k = 2 if words[:2] == ["the", "player"] else 0
    while k < len(words) and (_subject(words[k]) or words[k] in MODALS | AUXILIARIES):
        k += 1
    return (
        k < len(words)
        and words[k] not in STATES | ARRIVING | PHRASE_END | DETERMINERS
        and _verb_like(words[k])
    )


def ordering_acts(sentence: str) -> bool:
    """Whether ``sentence`` opens on a clause that orders the steps (:func:`drop_ordering`) and
    itself names an action ("After opening the door, kill the goblin."): dropping it would drop a
    step, and keeping it would take the text's order for the plan's, so the sentence is refused."""
    kept = drop_ordering(sentence)
    if kept == sentence:
        return False
    return clause_acts(tokens(sentence[: len(sentence) - len(kept)])[1:])


def marks_rule(words: list[str], object_phrase: str = "") -> bool:
    """Whether a sentence's ``words`` mark it as a standing rule (:data:`RULE_WORDS`,
    :data:`RULE_PHRASES`) or its step's ``object_phrase`` is plural ("kill goblins")."""
    if set(words) & RULE_WORDS:
        return True
    if any(words[k : k + len(p)] == list(p) for p in RULE_PHRASES for k in range(len(words))):
        return True
    return plural(object_phrase)


def plural(object_phrase: str) -> bool:
    """Whether ``object_phrase``'s noun is plural ("the goblins", "both coins")."""
    from jgtest.plans import lexicon

    noun = _noun_phrase(object_phrase.split())[-1:]
    return bool(noun) and noun[0].endswith("s") and len(lexicon.lemmas(noun[0], lexicon.NOUN)) > 1


def only_stops(step: list[str]) -> bool:
    """Whether ``step`` stops the player and names nothing: "stop", "stop there", "halt here"."""
    return (
        bool(step)
        and step[0] in STOPS
        and all(w in PRONOUNS or w in PHRASE_END or w == "here" for w in step[1:])
    )


def as_instruction(step: list[str]) -> list[str]:
    """A check written as a test case read as the step it checks: "verify (that) the player can
    pull the switch" → "pull the switch"; "check that the switch can be used" → "use the switch",
    "...the coin can be picked up" → "pick up the coin". A check with no "can" (or another modal)
    states an expectation and stays as written."""
    from jgtest.plans import lexicon

    if not step or step[0] not in CHECKS:
        return step
    rest = step[1:]
    rest = rest[1:] if rest[:1] == ["that"] else rest
    for subject in (["the", "player"], ["player"], ["you"], ["we"]):
        if rest[: len(subject)] == subject:
            rest = rest[len(subject) :]
            break
    if not any(w in MODALS for w in rest):  # an expectation ("check that the door is open")
        return step
    rest = rest[1:] if rest[:1] and rest[0] in MODALS else rest
    passive = next(
        (k for k in range(1, len(rest) - 1) if rest[k] == "be" and rest[k - 1] in MODALS), None
    )
    if passive is None:
        return rest
    verb, after = rest[passive + 1], rest[passive + 2 :]
    forms = lexicon.lemmas(verb, "v")
    particle = after[:1] if after[:1] and after[0] in ("up", "down", "on", "off", "out") else []
    return [forms[-1], *particle, *rest[: passive - 1], *after[len(particle) :]]


def light_verb_noun(step: list[str]) -> list[str]:
    """A light verb's noun made the step's verb: "give it a pull" → "pull it", "give the lever a
    push" → "push the lever", "make a jump over the lava" → "jump over the lava". Only with an
    object before the noun, or a preposition after it: "get a coin" stays."""
    if not step or step[0] not in LIGHT_VERBS:
        return step
    for k in range(1, len(step) - 1):
        if step[k] in ("a", "an") and _verb_like(step[k + 1]):
            after = step[k + 2 : k + 3]
            if k > 1 or (after and after[0] in PHRASE_END and step[0] != "get"):
                return [step[k + 1], *step[1:k], *step[k + 2 :]]
            return step
    return step


def is_condition(sentence: str) -> bool:
    """Whether ``sentence`` opens on a condition that makes it a rule ("If a coin is near, pick it
    up.", "Whenever..."): :data:`CONDITIONS`, but not a clause that orders the steps; or has a
    "whenever" ("Kill goblins whenever they come near.")."""
    words = tokens(sentence)
    opens = bool(words) and words[0] in CONDITIONS and not _orders(words)
    return opens or "whenever" in words


def _orders(words: list[str]) -> bool:
    """Whether ``words`` open on a clause that only orders the steps: "once", "after", "before",
    "as soon as", or a "when" of the player's progress (:data:`_PROGRESS`) or of a state
    (:data:`STATES`, in any of its forms: "when the door is opening")."""
    from jgtest.plans import lexicon

    clause = words[: words.index(",")] if "," in words else words
    state = any(
        w in STATES or set(lexicon.lemmas(w, lexicon.VERB)) & STATES for w in clause if w.isalpha()
    )
    progress = any(words[1 : 1 + len(p)] == p for p in _PROGRESS) or state
    return (
        words[:1] in (["once"], ["after"], ["before"])
        or words[:3] == ["as", "soon", "as"]
        or (words[:1] == ["when"] and progress)
    )


def drop_ordering(sentence: str) -> str:
    """``sentence`` without an opening clause that only orders the steps, to its comma ("Once
    you're across, grab the coin and use the shrine." → "grab the coin and use the shrine.")."""
    lead = re.match(r"\W*(?:(?:then|and)\b\W*)*", sentence, re.IGNORECASE).end()
    clause, comma, rest = sentence[lead:].partition(",")
    return rest.strip() if comma and _orders(tokens(clause)) else sentence


def steps(sentence: str, lead: Collection[str] = ()) -> list[list[str]]:
    """``sentence``'s steps as token lists, cut at a comma, ";", "and" or "then":

    * followed by a verb: "go to the gate and open it" → "go to the gate", "open it";
    * followed by another object of the same verb: "take the key and then the gem" → "take the
      key", "take the gem".

    A step starts at its verb: the ``lead`` phrases before it ("then", "after that,", "please")
    and a subject ("you go to the shrine", :data:`SUBJECTS`) are left out. Only when the sentence
    opens on a verb: "The gate, open it." is one step, and so is a sentence opening on a
    condition ("If a coin is near, pick it up.")."""
    words = tokens(sentence)
    first = _step_start(words, 0, lead)
    if first >= len(words) or words[first] in SUBORDINATORS or not _verb_like(words[first]):
        return [words] if words else []
    out, current, i = [], [], first
    while i < len(words):
        if words[i] == "," and _comments(words[i + 1 : i + 3]):  # to the next join
            i = next((k for k in range(i + 1, len(words)) if words[k] in JOINS), len(words))
            continue
        j = _step_start(words, i, lead) if words[i] in JOINS else i
        if j > i and current and j < len(words):
            verb = current[: _object_start(current) or 0]
            if _verb_like(words[j]):
                out.append(current)
                current, i = [], j
                continue
            if words[j] in DETERMINERS and words[j] not in RELATIVES and verb:
                out.append(current)
                current, i = list(verb), j
                continue
        current.append(words[i])
        i += 1
    return [*out, current] if current else out


def _comments(words: list[str]) -> bool:
    """Whether a clause opening on ``words`` comments on the step before it ("that should open
    the door", "which opens the gate", "it ends the level"): a relative, "this" or "it", then a
    modal or a verb."""
    return (
        len(words) == 2
        and words[0] in RELATIVES | {"this", "it"}
        and (words[1] in MODALS or words[1] not in DETERMINERS and _verb_like(words[1]))
    )


def _step_start(words: list[str], k: int, lead: Collection[str]) -> int:
    """Where a step that may begin at ``words[k]`` has its verb: past the joins, ``lead`` phrases
    (with their comma), and a subject or a modal before a verb ("the player must flip")."""
    phrases = _longest_first(tuple(lead))
    while k < len(words):
        found = next((p for p in phrases if words[k : k + len(p)] == p), None)
        if found:
            k += len(found) + (words[k + len(found) : k + len(found) + 1] == [","])
        elif words[k : k + 2] == ["the", "player"] and _verb_next(words, k + 2):
            k += 2
        elif words[k] in SUBJECTS | SERIAL_VERBS | MODALS | {"player"} and _verb_next(words, k + 1):
            k += 1
        else:
            return k
    return k


@functools.cache
def _longest_first(lead: tuple[str, ...]) -> list[list[str]]:
    """The joins and ``lead`` phrases as word lists, the longest first, built once per ``lead``."""
    return sorted((p.split() for p in (*JOINS, *lead)), key=len, reverse=True)


def _verb_next(words: list[str], k: int) -> bool:
    """Whether ``words[k]`` is a verb (or a modal) that can follow a step's subject."""
    return (
        k < len(words)
        and words[k] not in PHRASE_END
        and (words[k] in MODALS or _verb_like(words[k]))
    )


def _object_start(step: list[str]) -> int | None:
    """Where ``step``'s object phrase begins (its first determiner after the verb), if it has
    one."""
    return next((k for k in range(1, len(step)) if step[k] in DETERMINERS), None)


def split_step(tokens: list[str], last_object: str) -> Step:
    """A step's object phrase and action frame (module docstring); a pronoun takes ``last_object``.

    * object first, "button: push it", "the gate, open it", "at the gap, leap": the part before
      the ``:``, ``-`` or comma is the object;
    * a condition, "whenever a goblin gets close, kill it": the main clause is the frame, its
      pronoun the condition's object;
    * else the first determiner's phrase, to the first :data:`PHRASE_END` word ("pull the lever
      that opens the gate" → "the lever that opens the gate", "pull it"); a pronoun; or, in a
      terse note ("press switch"), the words after the verb.
    """
    text = " ".join(t for t in tokens if t not in ",;:-")
    for mark in (":", "-", ","):
        if mark in tokens:
            k = tokens.index(mark)
            before, after = tokens[:k], tokens[k + 1 :]
            first = before[0] if before else ""
            if mark != "," or first in DETERMINERS or first in PHRASE_END or first in SUBORDINATORS:
                if first in SUBORDINATORS:
                    condition = split_step(before[1:], last_object)
                    main = split_step(after, condition.object or last_object)
                    return Step(text, main.object, main.frame)
                subject = [t for t in before if t not in PHRASE_END]
                frame = split_step(after, " ".join(subject))
                return Step(text, " ".join(subject), frame.frame)
    words = [t for t in tokens if t not in ",;:-"]
    named = _named_before(words, last_object)
    if named:
        return Step(text, named, " ".join([words[0], "it", *words[3:]]))
    for d in range(1, len(words)):
        if words[d] in DETERMINERS and not (words[d] in RELATIVES and d + 1 == len(words)):
            e = _phrase_end(words, d + 1)
            attached = ""
            if e + 1 < len(words) and words[e] in ATTACHING:
                attached = " ".join(words[e + 1 : _phrase_end(words, e + 1)])
                attached = last_object if attached in PRONOUNS else attached
            return Step(
                text, " ".join(words[d:e]), " ".join([*words[:d], "it", *words[e:]]), attached
            )
    if any(w in PRONOUNS or w in ("that", "this") for w in words[1:]):
        frame = [("it" if w in PRONOUNS or w in ("that", "this") else w) for w in words]
        return Step(text, last_object, " ".join(frame))
    start = 1
    while start < len(words) and words[start] in PHRASE_END:
        start += 1  # the verb's particles: "turn on switch"
    end = _phrase_end(words, start)
    if end > start:
        return Step(
            text, " ".join(words[start:end]), " ".join([*words[:start], "it", *words[end:]])
        )
    return Step(text, "", text)


def _named_before(words: list[str], last_object: str) -> str:
    """The phrase of ``last_object`` that a demonstrative object names again: "open that door"
    after "the item that unlocks the blue door" is "the blue door"; ``""`` when none."""
    if len(words) < 3 or words[1] not in ("that", "this") or words[2] not in last_object.split():
        return ""
    before = last_object.split()
    end = len(before) - before[::-1].index(words[2])
    start = max((k for k in range(end) if before[k] in DETERMINERS - RELATIVES), default=0)
    return " ".join(before[start:end])


def _noun_phrase(words: list[str]) -> list[str]:
    """``words``' noun phrase without its leading determiners, to its first relative, "of" or
    :data:`PHRASE_END` word ("the switch that opens the door" → ``["switch"]``)."""
    start = next((k for k, w in enumerate(words) if w not in DETERMINERS), len(words))
    end = start
    while end < len(words) and not (words[end] in PHRASE_END | RELATIVES or words[end] == "of"):
        end += 1
    return words[start:end]


def _phrase_end(words: list[str], start: int) -> int:
    """Where the phrase that begins at ``start`` ends: its first :data:`PHRASE_END` word."""
    end = start
    while end < len(words) and words[end] not in PHRASE_END:
        end += 1
    return end


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
            for noun in [_noun_phrase(phrase.split())]
            for w in noun[:-1]
        }
        self._actor_nouns = {
            actor: {
                noun[-1]
                for phrase in (*own, *(extra_actors or {}).get(actor, ()))
                for noun in [_noun_phrase(phrase.split())]
                if noun
            }
            for actor, own in vocab.ACTOR_PHRASES.items()
        }
        names = [
            (" ".join(_noun_phrase(phrase.split())), actor)
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
        own = _noun_phrase(step.object.split())
        carried = [
            w
            for w in _noun_phrase(step.attached.split())[:-1]
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


def acts_in_place(step: Step, lead: Collection[str] = (), go_words: Collection[str] = ()) -> bool:
    """Whether the step's verb (its frame's first word after ``lead`` words) acts on its object
    rather than moving the player to it: its commonest sense is not one of motion (WordNet files
    "go", "reach", "head", "leap" under ``verb.motion``; "hit", "press", "test", "light" elsewhere),
    it is none of the game's ``go_words`` ("visit", "collect", "find") nor a light verb
    (:data:`LIGHT_VERBS`), and no "to" follows it ("get to it")."""
    from jgtest.plans import lexicon

    words = [w for w in step.frame.split() if w not in lead]
    if not words or not words[0].isalpha():
        return False
    verb, after = words[0], words[1:3]
    lemmas = lexicon.lemmas(verb, lexicon.VERB)
    if "to" in after or "towards" in after or set(lemmas) & (set(go_words) | LIGHT_VERBS):
        return False
    return _commonest_sense(verb) not in ("", "verb.motion")


def moves(frame: str) -> bool:
    """Whether ``frame``'s verb moves the player: its commonest sense is one of motion ("walk
    across"; not "shells", whose commonest sense as a verb is another)."""
    words = frame.split()
    return bool(words) and _commonest_sense(words[0]) == "verb.motion"


@functools.cache
def _commonest_sense(verb: str) -> str:
    """The WordNet file of ``verb``'s commonest sense (``"verb.motion"``...); ``""``: no verb."""
    from jgtest.plans import lexicon

    lemmas = lexicon.lemmas(verb, lexicon.VERB)
    senses = [s for lemma in lemmas for s in lexicon.wordnet().synsets(lemma, lexicon.VERB)]
    return senses[0].lexname() if senses else ""
