"""Text to plan: each sentence classified as a node or a rule, cut into its steps and each step
read as one of the game's (action, actor) readings with a confidence; one read too low, or too
close to another reading, is refused with its two best guesses (:class:`TextToPlan`).

Three readers (:data:`READERS`): by meaning (:mod:`jgtest.plans.meaning`, a sentence encoder) with
the lexicon's words and spelling, the default; by meaning alone; and by the lexicon alone, the
article's pipeline (keywords tagged, then matched to the game's words by WordNet similarity).

* chosen: discourse words removed by rule, because a learned tagger would have to have seen each.
* chosen: a blank spaCy pipeline trained here, because no pretrained English pipeline installs.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import random
import re
from pathlib import Path

from jgtest.errors import BadInput
from jgtest.files import write_json_atomically
from jgtest.plans import lexicon, meaning, sentence_shape
from jgtest.plans.model import Node, Plan, PlanError, Precondition, Rule, plan_game

DATA = Path(__file__).parent / "data" / "instructions.jsonl"
RULE_DISTANCE = 3
#: The least confidence a sentence's reading is taken with: every training instruction reads above
#: it with its annotated action and actor (a test checks it), "Dance wildly." below it.
CONFIDENCE = 0.55
#: The kind's weight at a classifier probability of 0 (it rises to 1 at a probability of 1): a
#: sentence the classifier is unsure of (a terse note: "kill goblin") keeps most of its confidence,
#: since both readings act on the same actor.
KIND_FLOOR = 0.5
#: How far the best reading must be above a runner-up that differs in action or actor.
MARGIN = 0.05
#: The weight of a word the tagger did not mark, and of one it marked for the other role.
UNTAGGED, OTHER_ROLE = 0.9, 0.8
#: The weight of an actor word before the action word (the verb's object usually follows it).
BEFORE_ACTION = 0.95
#: The weight of "no actor" when the tagger marked an actor word that the vocabulary does not know.
UNKNOWN_ACTOR = 0.5
#: Particles that make a phrasal verb with the word before them ("turn on", "pick up").
PARTICLES = ("on", "off", "up", "down", "out")
#: Discourse words and phrases, removed by rule (:class:`TextToPlan`, step 1); ``,`` after one goes
#: with it.
DISCOURSE = (
    "first",
    "firstly",
    "first of all",
    "first thing",
    "first things first",
    "then",
    "and then",
    "and",
    "finally",
    "lastly",
    "last",
    "next",
    "afterwards",
    "after that",
    "now",
    "also",
    "start by",
    "begin by",
    "end by",
    "please",
    "kindly",
    "could you",
    "can you",
    "would you",
    "would you please",
    "could you please",
    "make sure to",
    "make sure you",
    "be sure to",
    "go ahead and",
    "thanks",
    "thank you",
    "ok",
    "okay",
    "hi",
    "hey",
    "hello",
    "i'd like you to",
    "i want you to",
    "i need you to",
    "we need you to",
    "don't forget to",
    "do not forget to",
    "remember to",
)
#: The readers :class:`TextToPlan` offers: by meaning with the lexicon's spelling slips mended
#: first (the default), by meaning alone, and by the lexicon alone (WordNet and spelling).
READERS = ("combined", "meaning", "lexicon")
#: A bug report's or a test case's fields, on a sentence "Field: ..." (or a table's cell): those
#: that list the steps lose their label ("Action 2: ...", "Steps to repro: ..." too), the others say
#: what happened or why, and ask for nothing; so does a heading ("Steps:" alone) and a ticket's id
#: with its title ("BUG-221: ...", "[DUN-88] ..."). The commonest fields of issue trackers' and
#: test-case templates, and Gherkin's headings.
STEP_FIELDS = frozenset(
    {"steps to reproduce", "steps", "repro steps", "repro", "reproduction steps", "to reproduce"}
) | {"str", "test steps", "test", "actions", "procedure", "sequence", "plan"}
STEP_LABEL_WORDS = frozenset("steps repro str sequence procedure actions action".split())
OTHER_FIELDS = frozenset(
    "observed expected actual result outcome notes note environment env build platform summary "
    "title description severity priority frequency goal context precondition preconditions "
    "prerequisites setup version device reproducibility component objective purpose criteria "
    "scenario feature background".split()
) | {"expected result", "actual result", "observed result", "observed behaviour"}
_NUMBERED_FIELD = re.compile(r"(?:step|action)\s*\d+")
_TICKET = re.compile(r"\[?[a-z]+-\d+\]?(?=[\s:]|$)", re.IGNORECASE)
#: How a line's table cells are separated ("TC-014 | Action 1: move to the switch | ...").
_CELLS = re.compile(r"\s+\|\s+")
#: Gherkin's step keywords (Cucumber's scenarios: "Given ... When ... Then ...").
GHERKIN = ("given", "when", "then", "and", "but")
_FIRST_PERSON = re.compile(r"^\s*(?:i|we)\s+", re.IGNORECASE)
#: Who acts in a Gherkin outcome that still asks for a step ("Then the player should kill it").
PLAYER = frozenset({"the player", "player", "i", "they", "we", "you"})
#: Discourse words that may come before a step's verb ("then", "please").
_LEAD = frozenset(phrase for phrase in DISCOURSE if " " not in phrase)
_LIST_MARKER = re.compile(r"^\s*(?:(?:step\s*)?\d+\s*[.):\-–]|[-*•])\s*", re.IGNORECASE)


def load_instructions(path: Path = DATA) -> tuple[list[dict], list[dict]]:
    """``(train, test)``: the annotated instructions by their split."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r for r in rows if r["split"] == "train"], [r for r in rows if r["split"] == "test"]


def _examples(nlp, rows):
    from spacy.training import Example

    return [
        Example.from_dict(
            nlp.make_doc(r["text"]),
            {
                "cats": {"NODE": float(r["kind"] == "node"), "RULE": float(r["kind"] == "rule")},
                "entities": [tuple(s) for s in r["spans"]],
            },
        )
        for r in rows
    ]


def train_pipeline(path: Path = DATA, epochs: int = 25, seed: int = 0):
    """``(nlp, metrics)``: the sentence classifier and keyword tagger trained on ``path``'s train
    split; ``metrics`` on its test split (``textcat_accuracy``, ``ner_f``, ``ner_p``, ``ner_r``) and
    sizes."""
    import spacy
    from spacy.util import fix_random_seed, minibatch

    fix_random_seed(seed)
    train, test = load_instructions(path)
    nlp = spacy.blank("en")
    nlp.add_pipe(
        "textcat",
        config={
            "model": {
                "@architectures": "spacy.TextCatBOW.v3",
                "exclusive_classes": True,
                "ngram_size": 2,
                "no_output_layer": False,
            }
        },
    )
    nlp.add_pipe("ner")
    train_examples, test_examples = _examples(nlp, train), _examples(nlp, test)
    optimizer = nlp.initialize(lambda: train_examples)
    rng = random.Random(seed)
    for _ in range(epochs):
        rng.shuffle(train_examples)
        for batch in minibatch(train_examples, size=8):
            nlp.update(batch, sgd=optimizer, drop=0.2)
    scores = nlp.evaluate(test_examples)
    correct = sum(
        max(doc.cats, key=doc.cats.get) == ("NODE" if r["kind"] == "node" else "RULE")
        for r, doc in zip(test, nlp.pipe(r["text"] for r in test))
    )
    metrics = {
        "train": len(train),
        "test": len(test),
        "textcat_accuracy": correct / len(test),
        "ner_f": scores["ents_f"],
        "ner_p": scores["ents_p"],
        "ner_r": scores["ents_r"],
    }
    return nlp, metrics


def _cache_dir(path: Path) -> Path:
    import spacy

    digest = hashlib.sha256(
        path.read_bytes() + spacy.__version__.encode() + b"textcat+ner"
    ).hexdigest()[:16]  # the pipes trained
    return lexicon.cache_root() / f"text_to_plan-{digest}"


@dataclasses.dataclass(frozen=True)
class Interpretation:
    """One reading of a sentence: a node or a rule, its action (``None``: go to / collect) and actor
    type (``None``: none named)."""

    kind: str
    action: str | None
    actor: str | None
    confidence: float

    def __str__(self) -> str:
        words = " ".join([self.action or "go to", *([self.actor] if self.actor else [])])
        return f"{'rule: ' if self.kind == 'rule' else ''}{words} ({self.confidence:.2f})"


@dataclasses.dataclass(frozen=True)
class Reading:
    """A sentence of a line, its best interpretation and the runner-up."""

    line: int
    sentence: str
    best: Interpretation
    runner_up: Interpretation | None
    floor: float = CONFIDENCE
    margin: float = MARGIN
    sure: bool = True

    @property
    def clear(self) -> bool:
        """Whether the best is taken: at least ``floor``, and ``margin`` above a runner-up that
        acts otherwise or on another actor (a runner-up of the other kind only does not count),
        and ``sure`` of its shape (its kind, and that it holds one step); the lexicon reader's
        :data:`CONFIDENCE` and :data:`MARGIN`, the calibrated ones when read by meaning
        (:class:`jgtest.plans.meaning.Thresholds`)."""
        rival = self.runner_up is not None and (self.runner_up.action, self.runner_up.actor) != (
            self.best.action,
            self.best.actor,
        )
        return (
            self.sure
            and self.best.confidence >= self.floor
            and not (rival and self.best.confidence - self.runner_up.confidence < self.margin)
        )

    @property
    def where(self) -> str:
        return f"line {self.line}: {self.sentence!r}"

    def guesses(self) -> str:
        return (
            f"did you mean {self.best}" + (f" or {self.runner_up}" if self.runner_up else "") + "?"
        )


def _report_field(sentence: str) -> str:
    """``sentence`` as steps: without a steps label ("Steps to reproduce: press the switch" →
    "press the switch"), ``""`` for another field ("Observed: the door stays shut"), a heading or a
    ticket's id and title (:data:`STEP_FIELDS`, :data:`OTHER_FIELDS`)."""
    if _TICKET.match(sentence.strip()):
        return ""
    label, colon, rest = sentence.partition(":")
    label = " ".join(label.lower().split())
    words = label.split()
    if not colon or len(words) > 4:
        return sentence
    if not rest.strip():  # a heading
        return ""
    if label in STEP_FIELDS or _NUMBERED_FIELD.fullmatch(label) or set(words) & STEP_LABEL_WORDS:
        return rest
    return "" if label in OTHER_FIELDS or set(words) & OTHER_FIELDS else sentence


def gherkin_steps(lines: list[str]) -> list[str]:
    """A Gherkin scenario's lines as plain steps, when a line opens on "Given": its context
    ("Given ...") asks for nothing; "When", "And", "But" lose their keyword; an outcome ("Then
    ...", and the "And"s after it) is a step when the player is its subject or it opens on the
    action ("Then activating the shrine should end the level" → "activating the shrine"), else it
    states what the game should do and asks for nothing ("Then the door should open"). Other
    text is returned as it is."""
    if not any(line.strip().lower().startswith("given ") for line in lines):
        return lines
    out, outcome = [], False
    for line in lines:
        keyword, _, rest = line.strip().partition(" ")
        keyword = keyword.lower()
        if keyword not in GHERKIN:
            out.append(line)
            continue
        outcome = keyword == "then" or (outcome and keyword in ("and", "but"))
        if keyword == "given":
            out.append("")
        else:
            step = _outcome_step(rest) if outcome else rest
            out.append(_FIRST_PERSON.sub("", step))  # "When I pick up the coin"
    return out


def _outcome_step(outcome: str) -> str:
    """A Gherkin outcome's step (:func:`gherkin_steps`), ``""`` when it asks for none."""
    words = outcome.split()
    modal = next((k for k, w in enumerate(words) if w.lower() in sentence_shape.MODALS), None)
    if modal is None:
        return outcome
    subject = " ".join(words[:modal]).lower()
    if subject in PLAYER:
        return outcome
    if words[0].lower().endswith("ing"):
        return " ".join(words[:modal])
    return ""


def _arrives_again(before: list[Reading], before_steps: list, reading: Reading, step) -> bool:
    """Whether ``step``, read (clear) as ``reading``, only gets to the object that the reading
    ``before`` it in the same sentence got to: "walk over to the ammo and pick it up" is one
    node."""
    if not before or before[0].line != reading.line or reading.best.action is not None:
        return False
    was, now = before[0].best, reading.best
    return (was.kind, was.action, was.actor) == (now.kind, None, now.actor) and (
        before_steps[0].object == step.object
    )


@functools.cache
def _vocabulary_words(vocab) -> frozenset[str]:
    """The words of a game's phrases and lexicon, once a game: what a spelling slip is mended to."""
    words = {
        w
        for phrases in (*vocab.ACTOR_PHRASES.values(), *vocab.ACTION_PHRASES.values())
        for phrase in phrases
        for w in phrase.split()
        if len(w) > 2
    }
    words |= {w for seeds in getattr(vocab, "ACTION_WORDS", {}).values() for w in seeds}
    words |= {w for seeds in getattr(vocab, "ACTOR_WORDS", {}).values() for w in seeds}
    return frozenset(words)


class TextToPlan:
    """The trained pipeline (trained on first use, then loaded from the cache), the ``reader``
    (:data:`READERS`; by meaning, its ``thresholds``, default the calibrated ones), :meth:`read`
    and :meth:`plan`.

    **By meaning** (``combined``, ``meaning``), each sentence: its list marker goes, the classifier
    (step 2 below) says node or rule (a sentence opening on "if" or "whenever" is a rule), it is cut
    into steps (:func:`jgtest.plans.sentence_shape.steps`), each step loses its discourse words, and
    :class:`jgtest.plans.meaning.MeaningScorer` scores every reading; ``combined`` first mends
    spelling slips against the game's words and adds its ``ACTION_WORDS`` and ``ACTOR_WORDS`` to
    the phrases. A step is refused below ``thresholds.floor`` or within ``thresholds.margin`` of its
    runner-up.

    **By the lexicon** (``lexicon``), each sentence of each line is read in four steps:

    1. **Discourse words go, by rule**: a list marker at the start of a line ("1.", "-", "Step 2:"),
       then the spaCy ``Matcher``'s :data:`DISCOURSE` patterns, for order ("first", "then") and
       politeness ("please", "could you").
    2. **Sentence and keyword classification**: a ``textcat`` (NODE / RULE) and an ``ner``
       (ACTION / ACTOR), trained by :func:`train_pipeline` with spaCy's own loop on the annotated
       instructions (``data/instructions.jsonl``; a held-out fifth, its accuracy in
       :attr:`metrics`), cached (``$JGTEST_CACHE`` or ``~/.cache/jgtest``), keyed by the data and
       the spaCy version.
    3. **Similarity to the game's vocabulary** (:func:`jgtest.plans.lexicon.similarity`): every word
       against each action's words (``ACTION_WORDS``) as a verb, with a following particle also as
       a phrasal verb ("turn on": WordNet's ``turn_on``), and against each actor type's
       (``ACTOR_WORDS``) as a noun. A word tagged for the role counts in full, an untagged one at
       :data:`UNTAGGED`, one tagged for the other role at :data:`OTHER_ROLE`, an actor word before
       the action word at :data:`BEFORE_ACTION`; one word fills one role.
    4. **An interpretation** (a kind, an action, an actor type or none: the action at the level's
       start) has the confidence ``(KIND_FLOOR + (1 − KIND_FLOOR)·p(kind)) · s(action) · s(actor)``,
       where for no actor ``s`` is one minus the best actor similarity of any word (times
       :data:`UNKNOWN_ACTOR` when the tagger marked an actor word the vocabulary does not know).

    :meth:`read` returns each sentence's best interpretation and its runner-up (:class:`Reading`).
    A sentence whose best is below :data:`CONFIDENCE`, or within :data:`MARGIN` of a reading with
    another action or actor, is refused, naming its line and its two best guesses ("line 2: 'Kneel
    at the shrine.': did you mean interact shrine (0.31) or interact switch (0.20)?"), unless
    ``accept_best``: then the plan lists the lines it guessed (``Plan.accepted_guesses``). A rule
    acts on an actor of its type within :data:`RULE_DISTANCE` steps.
    """

    def __init__(
        self,
        path: Path = DATA,
        reader: str = "combined",
        thresholds: meaning.Thresholds | None = None,
    ):
        import spacy
        from spacy.matcher import Matcher

        if reader not in READERS:
            raise BadInput(f"unknown reader {reader!r}: choose one of {', '.join(READERS)}")
        self.reader = reader
        self.thresholds = thresholds or (
            meaning.Thresholds.calibrated() if reader != "lexicon" else None
        )
        self._scorers: dict[str, meaning.MeaningScorer] = {}

        where = _cache_dir(path)
        if (where / "meta.json").exists() and (where / "metrics.json").exists():
            self.nlp, self.metrics = (
                spacy.load(where),
                json.loads((where / "metrics.json").read_text()),
            )
        else:
            self.nlp, self.metrics = train_pipeline(path)
            where.mkdir(parents=True, exist_ok=True)
            self.nlp.to_disk(where)
            write_json_atomically(where / "metrics.json", self.metrics)
        self._discourse = Matcher(self.nlp.vocab)
        self._discourse.add(
            "DISCOURSE",
            [
                [{"LOWER": token.lower_} for token in self.nlp.make_doc(phrase)]
                + [{"ORTH": ",", "OP": "?"}]
                for phrase in DISCOURSE
            ],
        )

    def strip_discourse(self, sentence: str) -> str:
        """``sentence`` without its list marker and discourse words (step 1 of :class:`TextToPlan`),
        capitalised again."""
        doc = self.nlp.make_doc(_LIST_MARKER.sub("", sentence))
        gone = {i for _, start, end in self._discourse(doc) for i in range(start, end)}
        kept = (
            "".join(token.text_with_ws for token in doc if token.i not in gone)
            .strip()
            .lstrip(",")
            .strip()
        )
        return kept[:1].upper() + kept[1:]

    def read(self, text: str, vocab) -> list[Reading]:
        """Every sentence of ``text`` (one or more per line) read against ``vocab`` (a game's plan
        module); a sentence of discourse words only ("Thanks.") says nothing to do and is passed
        over."""
        sentences = [
            (number, sentence)
            for number, line in enumerate(gherkin_steps(text.splitlines()), 1)
            for cell in _CELLS.split(line)
            for sentence in (
                _report_field(s.strip()) for s in re.split(r"(?<=[.!?])\s+", cell.strip())
            )
            if any(c.isalpha() for c in self.strip_discourse(sentence))
            and not sentence_shape.is_commentary(self.strip_discourse(sentence))
        ]
        if self.reader == "lexicon":
            return [self._read_sentence(number, sentence, vocab) for number, sentence in sentences]
        return self._read_by_meaning(sentences, vocab)

    def _scorer(self, vocab) -> meaning.MeaningScorer:
        """The game's phrases embedded once; the combined reader's with the lexicon's words too
        (``ACTION_WORDS`` as "word it", ``ACTOR_WORDS`` as "the word")."""
        key = getattr(vocab, "level_name", None) or vocab.__name__
        if key not in self._scorers:
            lexical = self.reader == "combined"
            self._scorers[key] = meaning.MeaningScorer(
                vocab,
                extra_actions={
                    a: tuple(f"{w} it" for w in words)
                    for a, words in getattr(vocab, "ACTION_WORDS", {}).items()
                    if a is not None  # its words mix moving ("go") and collecting ("grab")
                }
                if lexical
                else None,
                extra_actors={
                    a: tuple(f"the {w}" for w in words)
                    for a, words in getattr(vocab, "ACTOR_WORDS", {}).items()
                }
                if lexical
                else None,
            )
        return self._scorers[key]

    def _mend_spelling(self, sentence: str, vocab) -> str:
        """``sentence`` with each spelling slip (:func:`jgtest.plans.lexicon.word_similarity`'s
        rule) replaced by the vocabulary's word it is nearest, within
        :data:`jgtest.plans.lexicon.FUZZY_CUTOFF`."""
        from rapidfuzz import fuzz, process

        words = _vocabulary_words(vocab)

        def mend(match: re.Match) -> str:
            word = match.group(0)
            if not lexicon._misspelt(word.lower()):
                return word
            found = process.extractOne(
                word.lower(), words, scorer=fuzz.ratio, score_cutoff=lexicon.FUZZY_CUTOFF
            )
            return found[0] if found else word

        return re.sub(r"[A-Za-z]+", mend, sentence)

    def _read_by_meaning(self, sentences: list[tuple[int, str]], vocab) -> list[Reading]:
        """Each sentence's steps read by meaning (:mod:`jgtest.plans.meaning`).

        * Its kind (node or rule) is the classifier's when the sentence marks a rule
          (:func:`jgtest.plans.sentence_shape.marks_rule`: "any", "whenever", "on sight", a plural
          object); with no mark it is a node ("kill goblin").
        * A step of a compound sentence that names no object and only moves ("walk across and pull
          the lever", :func:`jgtest.plans.sentence_shape.moves`) is passed over, and so is one that
          only gets to the object the step before it got to ("walk over to the ammo and pick it
          up").
        * A step whose object is an actor's own name ("the shotgun") has no rival in another actor
          of the same action ("the shotgun shells").
        * A reading is not ``sure`` (refused) when the classifier is unsure of its kind, its step
          holds a second action (:func:`jgtest.plans.sentence_shape.acts_again`), or its sentence
          opens on an ordering clause that acts
          (:func:`jgtest.plans.sentence_shape.ordering_acts`).
        """
        planned, last = [], ""
        for number, sentence in sentences:
            cats = self.nlp(sentence_shape.drop_ordering(self.strip_discourse(sentence))).cats
            kind = "rule" if cats.get("RULE", 0.0) > cats.get("NODE", 0.0) else "node"
            kind_p = cats.get(kind.upper(), 1.0)
            if sentence_shape.is_condition(sentence):
                kind, kind_p = "rule", 1.0
            unmarked = _LIST_MARKER.sub("", sentence)
            text = sentence_shape.drop_ordering(unmarked)
            ordered_acting = sentence_shape.ordering_acts(unmarked)
            if self.reader == "combined":
                text = self._mend_spelling(text, vocab)
            # cut into steps before the discourse words go: "and", "then" join steps
            parts = [
                sentence_shape.tokens(self.strip_discourse(" ".join(part)))
                for part in sentence_shape.steps(text, DISCOURSE)
            ]
            parts = [
                sentence_shape.light_verb_noun(sentence_shape.as_instruction(p)) for p in parts if p
            ]
            parts = [part for part in parts if part and not sentence_shape.only_stops(part)]
            for tokens in parts:
                step = sentence_shape.split_step(tokens, last)
                last = step.object or last
                shown = sentence if len(parts) == 1 else f"{sentence} [{step.text}]"
                one_step = not (ordered_acting or sentence_shape.acts_again(tokens))
                marked = sentence_shape.marks_rule(sentence_shape.tokens(text), step.object)
                step_kind = (kind, kind_p) if marked else ("node", 1.0)
                planned.append((number, shown, (*step_kind, one_step), step, len(parts) > 1))
        readings, shown_steps = [], []
        plan_steps = [p[3] for p in planned]
        go_words = {
            *getattr(vocab, "ACTION_WORDS", {}).get(None, ()),
            *(phrase.split()[0] for phrase in vocab.ACTION_PHRASES.get(None, ())),
        }
        in_place = (
            [sentence_shape.acts_in_place(step, _LEAD, go_words) for step in plan_steps]
            if self.reader == "combined"
            else None
        )
        scorer = self._scorer(vocab)
        scores = scorer.score(plan_steps, in_place)
        has_rules = getattr(vocab, "RULES", True)
        for (number, shown, (kind, kind_p, one_step), step, compound), scored in zip(
            planned, scores
        ):
            ranked = sorted(scored.items(), key=lambda kv: -kv[1])
            if (
                compound
                and not step.object
                and ranked[0][0][0] is None
                and sentence_shape.moves(step.frame)
            ):
                continue
            # an actor's own name has no rival in another actor of its action (getting there:
            # only when a verb that acts in place cannot read as going, "open the door")
            if ranked[0][0][1] == scorer.named(step) and (
                ranked[0][0][0] is not None or in_place is not None
            ):
                ranked = [
                    r for r in ranked if r[0][1] == ranked[0][0][1] or r[0][0] != ranked[0][0][0]
                ]
            best, *rest = [Interpretation(kind, a, o, round(c, 4)) for (a, o), c in ranked[:2]]
            # the kind, as sure as the action: its margin, confidence × (p_kind − p_other), is
            # held to the calibrated margin (the tuning half has no kind misread to calibrate on)
            kind_sure = (
                not has_rules or best.confidence * (2 * kind_p - 1) >= self.thresholds.margin
            )
            if not kind_sure:
                other = "node" if kind == "rule" else "rule"
                rest = [
                    dataclasses.replace(
                        best, kind=other, confidence=round(best.confidence * (1 - kind_p), 4)
                    )
                ]
            # a node acts on one object: "kill both goblins" is no step ("the shells" is a name)
            one_step = one_step and not (
                best.kind == "node"
                and sentence_shape.plural(step.object)
                and not scorer.named(step)
            )
            reading = Reading(
                number,
                shown,
                best,
                rest[0] if rest else None,
                self.thresholds.floor,
                self.thresholds.margin,
                kind_sure and one_step,
            )
            if (
                compound
                and reading.clear
                and _arrives_again(readings[-1:], shown_steps[-1:], reading, step)
            ):
                continue
            shown_steps.append(step)
            readings.append(reading)
        return readings

    def plan(self, text: str, env, name: str = "", accept_best: bool = False) -> Plan:
        """The plan of ``text`` for ``env``'s level (:meth:`read`, then
        :meth:`plan_from_readings`); a ViZDoom level by its game name
        (``"vizdoom:freedoom1/E1M1"``), whose plans need no environment."""
        game = env if isinstance(env, str) else env.name
        return self.plan_from_readings(self.read(text, plan_game(game)), env, name, accept_best)

    @staticmethod
    def plan_from_readings(
        readings: list[Reading], env, name: str = "", accept_best: bool = False
    ) -> Plan:
        """The plan of ``readings`` (:meth:`read`'s) for ``env``'s level.

        Raises:
          PlanError: naming the line and sentence read below :data:`CONFIDENCE`, with its two best
            guesses (unless ``accept_best``), or a text with no node."""
        game = env if isinstance(env, str) else env.name
        vocab = plan_game(game)
        nodes, rules, guessed = [], [], []
        for reading in readings:
            best = reading.best
            if not reading.clear:
                if not accept_best:
                    raise PlanError(f"{reading.where}: {reading.guesses()}")
                guessed.append(f"{reading.where}: took {best}")
            if not getattr(vocab, "RULES", True):  # a Doom level: its targets by name, no rules
                nodes.append(Node(actor=best.actor, action=best.action))
            elif best.kind == "rule":
                rules.append(
                    Rule(
                        (Precondition(actor_near=best.actor, distance=RULE_DISTANCE),),
                        1,
                        best.action,
                    )
                )
            elif best.actor is not None and len(env.actor_ids(vocab.ACTOR_TYPES.index(best.actor))):
                nodes.append(
                    Node(
                        actor=best.actor,
                        action=best.action,
                        radius=0 if best.action is None and best.actor in vocab.WALK_ONTO else 1,
                    )
                )
            else:  # none in the level (or none named): the action at a fallback location, the start
                nodes.append(
                    Node(
                        location=tuple(int(v) for v in env.default_params.start), action=best.action
                    )
                )
        if not nodes:
            raise PlanError("text: no step became a node (a plan needs at least one)")
        if hasattr(vocab, "nearest_instances"):
            nodes = vocab.nearest_instances(nodes, env)
        return Plan(game, tuple(nodes), tuple(rules), name, tuple(guessed))

    @staticmethod
    def _verb(token, known: bool) -> str:
        """The token as a verb: with the particle after it where WordNet knows the phrasal verb
        ("turn on": ``turn_on``), unless the word is ``known``, one of the vocabulary's own ("pick
        up" is "pick", a word for collecting)."""
        after = token.nbor() if token.i + 1 < len(token.doc) else None
        if after is not None and after.lower_ in PARTICLES and not known:
            for lemma in lexicon.lemmas(token.lower_, lexicon.VERB):
                if lexicon.wordnet().synsets(f"{lemma}_{after.lower_}", lexicon.VERB):
                    return f"{lemma}_{after.lower_}"
        return token.lower_

    def _read_sentence(self, line: int, sentence: str, vocab) -> Reading:
        doc = self.nlp(self.strip_discourse(sentence))
        words = [t for t in doc if t.is_alpha]
        tags = {t.i: ent.label_ for ent in doc.ents for t in ent}
        role = lambda token, label: (
            1.0 if tags.get(token.i) == label else OTHER_ROLE if token.i in tags else UNTAGGED
        )
        own = {lemma for seeds in vocab.ACTION_WORDS.values() for lemma in seeds}
        verbs = {
            t.i: self._verb(t, bool(own & set(lexicon.lemmas(t.lower_, lexicon.VERB))))
            for t in words
        }
        action = {
            entry: [
                lexicon.similarity(verbs[t.i], seeds, lexicon.VERB) * role(t, "ACTION")
                for t in words
            ]
            for entry, seeds in vocab.ACTION_WORDS.items()
        }
        actor = {
            entry: [
                lexicon.similarity(t.lower_, seeds, lexicon.NOUN) * role(t, "ACTOR") for t in words
            ]
            for entry, seeds in vocab.ACTOR_WORDS.items()
        }
        named = any(
            label == "ACTOR" for label in tags.values()
        )  # an actor the vocabulary may not know
        no_actor = (1.0 - max((s for scores in actor.values() for s in scores), default=0.0)) * (
            UNKNOWN_ACTOR if named else 1.0
        )
        kinds = {
            "node": KIND_FLOOR + (1 - KIND_FLOOR) * doc.cats.get("NODE", 0.0),
            "rule": KIND_FLOOR + (1 - KIND_FLOOR) * doc.cats.get("RULE", 0.0),
        }
        found = []
        for kind, p_kind in kinds.items():
            for act, act_scores in action.items():
                for i, s_act in enumerate(act_scores):
                    found.append(
                        Interpretation(kind, act, None, p_kind * s_act * no_actor)
                        if kind == "node"
                        else None
                    )
                    for who, who_scores in actor.items():
                        s_who = max(
                            (
                                s * (1.0 if j > i else BEFORE_ACTION)
                                for j, s in enumerate(who_scores)
                                if j != i
                            ),
                            default=0.0,
                        )
                        found.append(Interpretation(kind, act, who, p_kind * s_act * s_who))
        ranked = sorted(
            {
                (i.kind, i.action, i.actor): i
                for i in sorted((f for f in found if f), key=lambda i: i.confidence)
            }.values(),
            key=lambda i: -i.confidence,
        )
        ranked = [dataclasses.replace(i, confidence=round(i.confidence, 4)) for i in ranked]
        return Reading(line, sentence, ranked[0], ranked[1] if len(ranked) > 1 else None)
