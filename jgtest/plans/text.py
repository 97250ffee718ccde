"""Text to plan: QA-style instructions to an explicit plan, with spaCy (as the article's NLU).

The article's pipeline: "1. Using sentence-level classification, determine whether a sentence
represents a node or a rule. 2. Using token-level classification, extract an action keyword, and
an actor type keyword. 3. Match the keywords to valid values using similarity analysis. 4. Find an
in-game instance of the matched actor type and create a node with that instance as the target,
and the matched action. If no instance is matched, the action will simply be performed at a
fallback location. 5. Repeat for every line".

No pretrained English pipeline installs from the package index here, so :func:`train_pipeline`
trains a blank English pipeline with spaCy's own training loop on the annotated instructions
kept in the repository (``data/instructions.jsonl``: sentence → node or rule, the action and
actor keyword spans; a held-out fifth, its accuracy in :attr:`TextToPlan.metrics`): a
``textcat`` (NODE / RULE) and an ``ner`` (ACTION / ACTOR), then a lookup ``lemmatizer`` whose
tables come from ``spacy-lookups-data``. Keywords match the game's vocabulary
(``ACTION_WORDS``, ``ACTOR_WORDS`` of its plan module) by lemma, then by ``rapidfuzz`` for
spelling slips (score ≥ 80); a sentence whose keywords the model missed is scanned word by word
the same way. A rule acts on an actor of its type that comes within ``RULE_DISTANCE`` steps.
The trained pipeline is cached (``~/.cache/jgtest``, or ``$JGTEST_CACHE``), keyed by the data
and the spaCy version. Nothing downloads.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
from pathlib import Path

from jgtest.plans.model import Node, Plan, PlanError, Precondition, Rule, plan_game

DATA = Path(__file__).parent / "data" / "instructions.jsonl"
RULE_DISTANCE = 3
FUZZY_CUTOFF = 80


def load_instructions(path: Path = DATA) -> tuple[list[dict], list[dict]]:
    """``(train, test)``: the annotated instructions by their split."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r for r in rows if r["split"] == "train"], [r for r in rows if r["split"] == "test"]


def _examples(nlp, rows):
    from spacy.training import Example

    return [Example.from_dict(nlp.make_doc(r["text"]), {"cats": {"NODE": float(r["kind"] == "node"), "RULE": float(r["kind"] == "rule")},
                                                        "entities": [tuple(s) for s in r["spans"]]}) for r in rows]  # fmt: skip


def train_pipeline(path: Path = DATA, epochs: int = 25, seed: int = 0):
    """``(nlp, metrics)``: the sentence classifier and keyword tagger trained on ``path``'s train split;
    ``metrics`` on its test split (``textcat_accuracy``, ``ner_f``, ``ner_p``, ``ner_r``) and sizes."""
    import spacy
    from spacy.util import fix_random_seed, minibatch

    fix_random_seed(seed)
    train, test = load_instructions(path)
    nlp = spacy.blank("en")
    nlp.add_pipe("textcat", config={"model": {"@architectures": "spacy.TextCatBOW.v3", "exclusive_classes": True, "ngram_size": 2, "no_output_layer": False}})
    nlp.add_pipe("ner")
    train_examples, test_examples = _examples(nlp, train), _examples(nlp, test)
    optimizer = nlp.initialize(lambda: train_examples)
    rng = random.Random(seed)
    for _ in range(epochs):
        rng.shuffle(train_examples)
        for batch in minibatch(train_examples, size=8):
            nlp.update(batch, sgd=optimizer, drop=0.2)
    scores = nlp.evaluate(test_examples)
    correct = sum(max(doc.cats, key=doc.cats.get) == ("NODE" if r["kind"] == "node" else "RULE") for r, doc in zip(test, nlp.pipe(r["text"] for r in test)))
    metrics = {"train": len(train), "test": len(test), "textcat_accuracy": correct / len(test),
               "ner_f": scores["ents_f"], "ner_p": scores["ents_p"], "ner_r": scores["ents_r"]}  # fmt: skip
    lemmatizer = nlp.add_pipe("lemmatizer", config={"mode": "lookup"})
    lemmatizer.initialize()  # the English lookup table of spacy-lookups-data
    return nlp, metrics


def _cache_dir(path: Path) -> Path:
    import spacy

    digest = hashlib.sha256(path.read_bytes() + spacy.__version__.encode()).hexdigest()[:16]
    return Path(os.environ.get("JGTEST_CACHE", Path.home() / ".cache" / "jgtest")) / f"text_to_plan-{digest}"


class TextToPlan:
    """The trained pipeline (trained on first use, then loaded from the cache) and :meth:`plan`."""

    def __init__(self, path: Path = DATA):
        import spacy

        where = _cache_dir(path)
        if (where / "meta.json").exists() and (where / "metrics.json").exists():
            self.nlp, self.metrics = spacy.load(where), json.loads((where / "metrics.json").read_text())
        else:
            self.nlp, self.metrics = train_pipeline(path)
            where.mkdir(parents=True, exist_ok=True)
            self.nlp.to_disk(where)
            (where / "metrics.json").write_text(json.dumps(self.metrics, indent=2))

    def plan(self, text: str, env, name: str = "") -> Plan:
        """The plan of ``text`` (one or more sentences per line) for ``env``'s level.

        Raises:
          PlanError: naming the line and sentence with no known action (or a rule with no actor)."""
        vocab = plan_game(env.name)
        nodes, rules = [], []
        for number, line in enumerate(text.splitlines(), 1):
            for sentence in (s.strip() for s in re.split(r"(?<=[.!?])\s+", line.strip())):
                if not sentence:
                    continue
                doc = self.nlp(sentence)
                kind = max(doc.cats, key=doc.cats.get)
                action = self._keyword(doc, "ACTION", vocab.ACTION_WORDS)
                actor = self._keyword(doc, "ACTOR", vocab.ACTOR_WORDS)
                where = f"line {number}: {sentence!r}"
                if action is _MISSING:
                    known = ", ".join(a if a else "go to / collect" for a in vocab.ACTION_WORDS)
                    raise PlanError(f"{where}: no known action ({known})")
                if kind == "RULE":
                    if actor is _MISSING:
                        raise PlanError(f"{where}: a rule needs the actor it acts on (one of {', '.join(vocab.ACTOR_WORDS)})")
                    rules.append(Rule((Precondition(actor_near=actor, distance=RULE_DISTANCE),), 1, action))
                elif actor is not _MISSING and len(env.actor_ids(vocab.ACTOR_TYPES.index(actor))):
                    nodes.append(Node(actor=actor, action=action, radius=0 if action is None and actor in vocab.WALK_ONTO else 1))
                else:  # no instance of it in the level: the action at a fallback location, the start
                    nodes.append(Node(location=tuple(int(v) for v in env.default_params.start), action=action))
        if not nodes:
            raise PlanError("text: no step became a node (a plan needs at least one)")
        return Plan(env.name, tuple(nodes), tuple(rules), name)

    def _keyword(self, doc, label: str, words: dict):
        """The vocabulary entry of the tagged keyword (its first word's lemma, then fuzzily), else of any word."""
        tagged = [ent for ent in doc.ents if ent.label_ == label]
        candidates = [tok for ent in tagged for tok in ent][:1] + list(doc)
        for token in candidates:
            match = _match(token.lemma_.lower() or token.lower_, token.lower_, words)
            if match is not _MISSING:
                return match
        return _MISSING


_MISSING = object()


def _match(lemma: str, word: str, words: dict):
    """The entry of ``words`` naming ``lemma`` (or ``word``), exactly, else by fuzzy matching."""
    from rapidfuzz import fuzz, process

    table = {w: entry for entry, synonyms in words.items() for w in synonyms}
    for form in (lemma, word, word.rstrip("s")):
        if form in table:
            return table[form]
    if len(word) < 4:
        return _MISSING  # short words ("the", "it", "up") are not matched fuzzily
    best = process.extractOne(word, list(table), scorer=fuzz.ratio, score_cutoff=FUZZY_CUTOFF)
    return table[best[0]] if best else _MISSING
