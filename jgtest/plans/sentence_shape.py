"""A plan sentence's shape, read before any meaning: its steps (:func:`steps`: "Go to the gate and
open it." is two), each step's object phrase and action frame (:func:`split_step`), and what makes
a sentence ask for nothing (commentary, a negation, a stop), a standing rule
(:func:`marks_rule`) or a refusal (:func:`acts_again`: a step holding a second action, a negation,
an ordering clause that acts).

Words are told apart by WordNet (:mod:`jgtest.plans.lexicon`): whether a word can open an
imperative step, and whether a verb's commonest sense moves the player (:func:`acts_in_place`).
:mod:`jgtest.plans.meaning` then scores each step against a game's canonical phrases.

Example::

    last = ""
    for words in steps("Go to the gate and open it."):
        step = split_step(words, last)   # the gate: "go to it", then the gate: "open it"
        last = step.object or last
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Collection

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

    noun = noun_phrase(object_phrase.split())[-1:]
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


def noun_phrase(words: list[str]) -> list[str]:
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
