"""Text to plan: the Dungeon examples read as before; reading by meaning on the held-out half of
the paraphrase suites, never misread; compound sentences; the lexicon reader on its own suite;
confidence per line, refusals with guesses, ``--accept-best``; and the held-out half kept apart from
the code and the tuning data.

The suites were written by hand in a QA engineer's style, not from the training templates: each set
is a short procedure (discourse words, list markers, polite forms, objects first, terse notes,
spelling slips, synonyms, compound steps, objects named by their role) and the plan its writer
meant. The tuning half (``jgtest/plans/data/paraphrases_tuning.jsonl``) is the code's to adjust on
and calibrates the thresholds; the held-out half (``paraphrases_held_out.jsonl``) was written before
the reader by meaning and is never edited."""

import json
import re
from operator import itemgetter
from pathlib import Path

import jax
import numpy as np
import pytest

import jgtest
from jgtest.plans import dungeon as game
from jgtest.plans.agent import run_plans
from jgtest.plans.calibrate import TUNING, load_suite
from jgtest.plans.compiled import stack_plans
from jgtest.plans.model import PlanError, load_plan, plan_game
from jgtest.plans.reading_check import plan_steps
from jgtest.plans.report import run_report
from jgtest.plans.text import DATA, load_instructions

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "plans" / "dungeon"
_read = lambda name: [
    json.loads(line)
    for line in (Path(__file__).parent / name).read_text().splitlines()
    if line.strip()
]
#: The lexicon reader's suite: the older sets, the tuning half's first 27 Dungeon sets and the
#: held-out half's first 17 (the rest were written for the reader by meaning, and the lexicon
#: misreads some of them: benchmarks/results/text_to_plan.json).
SUITE = [s for s in load_suite(TUNING) if "game" not in s][:27] + _read(
    "paraphrases_held_out.jsonl"
)[:17]
#: One xdist worker runs this module (``--dist loadgroup``): its pipeline is trained and its encoder
#: compiled once.
pytestmark = pytest.mark.xdist_group("text_to_plan")
#: A refusal: the line, the sentence and its two best guesses with their confidences.
REFUSAL = re.compile(r"^line \d+: '.+': did you mean .+ \(\d\.\d\d\)( or .+ \(\d\.\d\d\))?\?$")


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """The spaCy pipeline trained here, from the repository's data, into an empty cache."""
    import os

    os.environ["JGTEST_CACHE"] = str(tmp_path_factory.mktemp("cache"))
    try:
        yield
    finally:
        del os.environ["JGTEST_CACHE"]


@pytest.fixture(scope="module")
def text_to_plan(cache):
    """The lexicon reader (WordNet and spelling), a named option."""
    from jgtest.plans.text import TextToPlan

    return TextToPlan(reader="lexicon")


@pytest.fixture(scope="module")
def reader(cache):
    """The default reader: by meaning, with the lexicon's words and spelling."""
    from jgtest.plans.text import TextToPlan

    return TextToPlan()


@pytest.mark.parametrize("which", ["reader", "text_to_plan"])
def test_the_dungeon_examples_read_as_before(which, request):
    text_to_plan = request.getfixturevalue(which)
    metrics = text_to_plan.metrics
    # held-out instructions
    assert metrics["test"] >= 25 and metrics["textcat_accuracy"] >= 0.9 and metrics["ner_f"] >= 0.9
    env, _ = jgtest.make("Dungeon-v0")
    attack_enemies = load_plan(EXAMPLES / "attack_enemies.json")
    assert (
        text_to_plan.plan((EXAMPLES / "steps.txt").read_text(), env, name=attack_enemies.name)
        == attack_enemies
    )
    slips = text_to_plan.plan("Pres the swich.\nGo to the altar.\nCollect any coins.", env)
    assert [(n.actor, n.action) for n in slips.nodes] == [("switch", "interact"), ("shrine", None)]
    assert (
        slips.rules[0].preconditions[0].actor_near == "collectable"
        and slips.rules[0].action is None
    )


def test_the_lexicon_reader_reads_its_suite_into_passing_plans_or_refuses(text_to_plan):
    env, params = jgtest.make("Dungeon-v0")
    read, refused = [], []
    for i, entry in enumerate(SUITE):
        try:
            plan = text_to_plan.plan(entry["text"], env, name=f"paraphrase {i}")
        except PlanError as error:
            assert REFUSAL.match(str(error)), str(error)
            refused.append(i)
            continue
        # never misread
        assert plan_steps(plan) == (entry["nodes"], entry.get("rules", [])), (entry["text"], plan)
        read.append(plan)
    assert len(SUITE) >= 40 and len(read) >= 0.9 * len(SUITE), (
        f"refused: {[SUITE[i]['text'] for i in refused]}"
    )
    agent, _ = run_plans(
        env, game, params, stack_plans(read, env), jax.vmap(jax.random.key)(np.arange(2))
    )
    agent = jax.device_get(agent)
    for p, plan in enumerate(read):
        assert all(
            run_report(plan, jax.tree.map(itemgetter((p, s)), agent), env, s)["passed"]
            for s in range(2)
        ), plan.name


def test_the_training_instructions_hold_none_of_the_suites_sentences():
    normal = lambda sentence: " ".join(re.sub(r"[^a-z ]", " ", sentence.lower()).split())
    trained = {normal(row["text"]) for split in load_instructions(DATA) for row in split}
    suite = {
        normal(s)
        for entry in SUITE
        for line in entry["text"].splitlines()
        for s in re.split(r"(?<=[.!?])\s+", line)
        if s.strip()
    }
    assert len(suite) > 100 and not suite & trained


def test_each_line_is_read_with_a_confidence_and_refused_below_the_threshold(text_to_plan):
    env, _ = jgtest.make("Dungeon-v0")
    first, prayer = text_to_plan.read("Activate the switch.\nKneel at the shrine.", game)
    assert (first.best.action, first.best.actor, first.best.kind) == (
        "interact",
        "switch",
        "node",
    ) and first.clear
    assert first.best.confidence > 0.9 and first.runner_up.confidence < first.best.confidence
    assert (prayer.best.action, prayer.best.actor) == ("interact", "shrine") and not prayer.clear
    with pytest.raises(
        PlanError,
        match=r"^line 2: 'Kneel at the shrine.': did you mean interact shrine \(0\.\d\d\) or ",
    ):
        text_to_plan.plan("Activate the switch.\nKneel at the shrine.", env)
    with pytest.raises(PlanError, match=r"^line 2: 'Dance wildly.': did you mean "):
        text_to_plan.plan("Activate the switch.\nDance wildly.", env)
    # discourse words only: nothing to do
    thanks = text_to_plan.plan("Activate the switch.\nThanks.\nThen, 2.", env)
    assert plan_steps(thanks)[0] == ["interact switch"]
    taken = text_to_plan.plan("Activate the switch.\nKneel at the shrine.", env, accept_best=True)
    assert plan_steps(taken)[0] == ["interact switch", "interact shrine"]
    assert len(taken.accepted_guesses) == 1 and taken.accepted_guesses[0].startswith(
        "line 2: 'Kneel at the shrine.': took interact shrine"
    )


def test_jgtest_plan_from_text(reader, tmp_path, capsys):
    from jgtest.cli import main

    out = tmp_path / "plan.json"
    # the cached pipeline (the fixture's)
    assert main(["plan", "from-text", str(EXAMPLES / "steps.txt"), "-o", str(out)]) == 0
    expected = load_plan(EXAMPLES / "attack_enemies.json")
    assert load_plan(out).nodes == expected.nodes and load_plan(out).rules == expected.rules
    printed = capsys.readouterr().out
    # every reading with its confidence, before the plan is written
    assert "line 1: 'Activate the switch.': interact switch (" in printed and "runner-up" in printed
    assert printed.index("line 2:") < printed.index("wrote ")
    (tmp_path / "bad.txt").write_text("Activate the switch.\n\nDance wildly.\n")
    assert main(["plan", "from-text", str(tmp_path / "bad.txt"), "-o", str(out)]) == 2
    assert REFUSAL.match(
        capsys.readouterr().err.removeprefix(f"error: {tmp_path / 'bad.txt'}: ").strip()
    )
    assert (
        main(["plan", "from-text", str(tmp_path / "bad.txt"), "-o", str(out), "--accept-best"]) == 0
    )
    assert "1 best guesses taken" in capsys.readouterr().out
    (guess,) = load_plan(out).accepted_guesses
    assert guess.startswith("line 3: 'Dance wildly.': took ")
    # a Doom level, read by meaning; the lexicon has no words for it
    (tmp_path / "doom.txt").write_text("Open the blue door.\n")
    doom = ["plan", "from-text", str(tmp_path / "doom.txt"), "-o", str(out)]
    assert main([*doom, "--game", "vizdoom:freedoom1/E1M1"]) == 0
    assert [(n.actor, n.action) for n in load_plan(out).nodes] == [("blue door", "use")]
    assert main([*doom, "--game", "vizdoom:freedoom1/E1M1", "--reader", "lexicon"]) == 2
    assert "--reader combined" in capsys.readouterr().err


def _entry(words: dict, span: str):
    """The vocabulary entry a training span names, by one of its words (the annotation's
    reading)."""
    from jgtest.plans import lexicon

    for word in span.lower().split():
        for entry, seeds in words.items():
            if set(lexicon.lemmas(word, lexicon.VERB) + lexicon.lemmas(word, lexicon.NOUN)) & set(
                seeds
            ):
                return entry
    return "unknown"


def test_the_training_instructions_read_as_annotated_above_the_threshold(text_to_plan):
    wrong = []
    for row in [row for split in load_instructions(DATA) for row in split]:
        spans = {label: row["text"][a:b] for a, b, label in row["spans"]}
        want = (
            row["kind"],
            _entry(game.ACTION_WORDS, spans["ACTION"]),
            _entry(game.ACTOR_WORDS, spans["ACTOR"]) if "ACTOR" in spans else None,
        )
        (reading,) = text_to_plan.read(row["text"], game)
        if (
            reading.best.kind,
            reading.best.action,
            reading.best.actor,
        ) != want or not reading.clear:
            wrong.append((row["text"], want, str(reading.best), str(reading.runner_up)))
    assert not wrong, wrong


HELD_OUT = Path(__file__).parent / "paraphrases_held_out.jsonl"
#: The share of held-out sets that must become passing plans: under the level the default reader
#: reaches (``benchmarks/results/text_to_plan.json``), itself under the 90% aimed at.
HELD_OUT_PASSING = 0.85


def _sentences(text: str) -> set[str]:
    return {
        " ".join(re.sub(r"[^a-z ]", " ", s.lower()).split())
        for line in text.splitlines()
        for s in re.split(r"(?<=[.!?])\s+", line)
        if s.strip()
    }


def test_no_held_out_line_appears_in_the_code_or_the_tuning_data():
    from jgtest.plans import calibrate, meaning

    held_out = {s for entry in load_suite(HELD_OUT) for s in _sentences(entry["text"])}
    tuning = {s for entry in load_suite(TUNING) for s in _sentences(entry["text"])}
    tuning |= _sentences(calibrate.REFUSE.read_text())
    tuning |= {_sentences(row["text"]).pop() for split in load_instructions(DATA) for row in split}
    assert len(held_out) > 150 and not held_out & tuning, held_out & tuning
    # the reader's code: the plans and the networks
    code = " ".join(
        " ".join(re.sub(r"[^a-z ]", " ", path.read_text().lower()).split())
        for package in ("plans", "nets")
        for path in (Path(meaning.__file__).parents[1] / package).rglob("*.py")
    )
    # a line of four words or more: shorter ones ("jump lava") are the steps' own names
    assert not [s for s in held_out if len(s.split()) >= 4 and f" {s} " in f" {code} "]


def test_the_held_out_half_becomes_passing_plans_or_refusals_and_none_is_misread(reader):
    from jgtest.plans.reading_check import judge, tally

    sets = load_suite(HELD_OUT)
    outcomes = judge(reader, sets)
    counts = tally(outcomes)
    assert len(sets) >= 40 + 17 and counts["misread"] == counts["unplayable"] == 0, [
        (s["text"], o) for s, o in zip(sets, outcomes) if o.startswith(("misread", "unplayable"))
    ]
    refusals = [o.removeprefix("refused: ") for o in outcomes if o.startswith("refused")]
    assert all(REFUSAL.match(r) for r in refusals), refusals
    assert counts["passed"] >= HELD_OUT_PASSING * len(sets), counts


def test_hit_the_switch_is_never_an_attack_and_a_compound_sentence_gives_itsplan_steps(reader):
    env, _ = jgtest.make("Dungeon-v0")
    (hit,) = reader.read("Hit the switch.", game)
    assert (hit.best.action, hit.best.actor) == ("interact", "switch") or not hit.clear
    assert all(
        (r.best.action, r.runner_up.action) != ("attack", "attack")
        for r in reader.read("Hit the switch.\nSmack the button.", game)
    )
    two = reader.plan("Go to the switch and press it.", env)
    assert plan_steps(two)[0] == ["go switch", "interact switch"]
    # a pronoun takes the last object named; "then" and "and" join steps
    three = reader.plan("Grab the coin, then walk to the switch and press it.", env)
    assert plan_steps(three)[0] == ["go collectable", "go switch", "interact switch"]


def test_a_step_starts_at_its_verb_and_comments_ask_for_nothing(reader):
    """Subjects, "go" before a verb and lead phrases are left out of a step; a clause commenting
    on a step, a stop and a sentence of commentary give no step; a light verb's noun is the
    verb."""
    from jgtest.plans.sentence_shape import (
        as_instruction,
        drop_ordering,
        is_condition,
        light_verb_noun,
        only_stops,
        steps,
    )
    from jgtest.plans.text import DISCOURSE

    split = lambda text: [" ".join(step) for step in steps(text, DISCOURSE)]
    assert split("Then you jump the lava and you go to the shrine.") == [
        "jump the lava",
        "go to the shrine",
    ]
    assert split("After that, jump the lava and go activate the shrine.") == [
        "jump the lava",
        "activate the shrine",
    ]
    assert split("Pull the lever, which opens the gate, then make your way to the lava.") == [
        "pull the lever",
        "go to the lava",
    ]
    assert split("Pick up the first coin.") == ["pick up the first coin"]
    assert split("Press switch + walk to door; jump lava") == [
        "press switch",
        "walk to door",
        "jump lava",
    ]
    # a clause that only orders the steps goes; a condition stays, and makes a rule
    assert drop_ordering("Once you're across, grab the coin and use the shrine.") == (
        "grab the coin and use the shrine."
    )
    assert drop_ordering("When a goblin comes near, kill it.") == (
        "When a goblin comes near, kill it."
    )
    assert is_condition("When a goblin comes near, kill it.")
    assert is_condition("Kill goblins whenever they come near.")
    assert not is_condition("When you're across, grab the coin.")
    assert not is_condition("When the goblin is dead, jump the lava.")
    # a relative clause's actor is not the object; "that door" is the door named before
    (device,) = reader.read("Walk to the device that unlocks the door.", game)
    assert device.best.actor == "switch"
    doom = "vizdoom:freedoom1/E1M1"
    text = "Grab the thing that unlocks the blue door, then open that door."
    assert plan_steps(reader.plan(text, doom))[0] == ["go blue card", "use blue door"]
    assert light_verb_noun("give the lever a pull".split()) == "pull the lever".split()
    assert light_verb_noun("make a jump over the lava".split()) == "jump over the lava".split()
    assert light_verb_noun("get a coin".split()) == "get a coin".split()
    assert as_instruction("check that the coin can be picked up".split()) == (
        "pick up the coin".split()
    )
    assert as_instruction("verify the player can pull the switch".split()) == (
        "pull the switch".split()
    )
    assert as_instruction("check that the door is open".split()) == (
        "check that the door is open".split()
    )
    assert only_stops(["stop", "there"]) and not only_stops("stop at the door".split())
    # a step read as one that holds a second action is refused, not read short
    (short,) = reader.read("Walk over to the lever n pull it.", game)
    assert not short.clear
    player = reader.read("The player walks to the lever and pulls it.", game)
    assert [(r.best.action, r.best.actor) for r in player] == [
        (None, "switch"),
        ("interact", "switch"),
    ]
    env, _ = jgtest.make("Dungeon-v0")
    plan = reader.plan(
        "I want to check the door here.\nStep 1 - press the switch.\n"
        "Step 2 - walk up to the goblin and kill him.\nWalk to the lava and stop.",
        env,
    )
    assert plan_steps(plan)[0] == ["interact switch", "go enemy", "attack enemy", "go lava"]
    # a bug report's steps, its other fields passed over
    report = reader.plan("Steps to reproduce: press the switch.\nObserved: nothing opens.", env)
    assert plan_steps(report) == (["interact switch"], [])
    # a node or a rule? the classifier unsure of it, the reading is refused with both
    (sight,) = reader.read("Attack enemies on sight.", game)
    assert not sight.clear and {sight.best.kind, sight.runner_up.kind} == {"node", "rule"}


def test_nothing_is_dropped_out_of_order_and_lines_that_ask_for_nothing_give_no_step(reader):
    """Arrows chain a note's steps; a step whose clause acts out of the text's order, a negated
    step and two objects under one verb are refused; an ordering clause that does not act goes;
    a sentence opening on a negation, a ticket's id and a report's other fields, also in a table's
    cells, ask for nothing; a terse step with no rule's mark is a node; an actor's own name has no
    rival of its action, and getting to it twice in a sentence is one node."""
    env, _ = jgtest.make("Dungeon-v0")
    doom = "vizdoom:freedoom1/E1M1"
    dungeon_steps = lambda text: plan_steps(reader.plan(text, env))[0]
    doom_steps = lambda text: plan_steps(reader.plan(text, doom))[0]
    assert dungeon_steps("pull lever > walk to door -> jump lava") == [
        "interact switch",
        "go door",
        "jump lava",
    ]
    for text in (
        "After opening the door with the lever, kill the goblin.",
        "Activate the shrine after you've jumped the lava.",
        "Walk to the lever but don't pull it.",
    ):
        assert not all(r.clear for r in reader.read(text, game)), text
    assert not all(r.clear for r in reader.read("Pick up shotgun and shells.", plan_game(doom)))
    (both,) = reader.read("Kill both goblins.", game)  # a node acts on one object
    assert not both.clear
    assert dungeon_steps("Before you do anything else, grab the coin.") == ["go collectable"]
    assert dungeon_steps("Walk over to the lever. Don't pull it yet.") == ["go switch"]
    report = (
        "BUG-12: the door sticks.\nTC-3 | Precondition: fresh level | Action 1: press the switch"
    )
    assert dungeon_steps(report + " | Expected: the door opens") == ["interact switch"]
    assert dungeon_steps("Steps to repro:\n1. Press the switch.\n[DUN-8] Door sticks.") == [
        "interact switch"
    ]
    # a Gherkin scenario: its context and the game's outcomes ask for nothing
    scenario = (
        "Scenario: the door\nGiven I am at the start\nWhen I walk to the lever\nAnd pull it\n"
        "Then the door should open\nAnd the player should jump the lava\n"
        "And activating the shrine should end the level"
    )
    assert dungeon_steps(scenario) == [
        "go switch",
        "interact switch",
        "jump lava",
        "interact shrine",
    ]
    (terse,) = reader.read("- kill goblin", game)
    assert (terse.best.kind, terse.best.action) == ("node", "attack") and terse.clear
    assert doom_steps("get shotgun") == ["go shotgun"]
    assert doom_steps("Walk over to the rocket ammo and pick it up.") == ["go rocket ammo"]


def test_a_step_naming_a_type_takes_the_one_nearest_where_the_step_before_left_off(reader):
    """ "The goblin" is the one not yet killed nearest the player, walking; "the coin" after the
    jump is the one across the lava."""
    env, _ = jgtest.make("Dungeon-v0")
    plan = reader.plan(
        "Grab the coin.\nPress the switch.\nKill the goblin.\nJump the lava.\n"
        "Grab the coin on the far side.\nKill the other goblin.\nWalk to the coin.",
        env,
    )
    nodes = [(n.action, n.actor, n.instance) for n in plan.nodes]
    assert nodes == [
        (None, "collectable", 0),
        ("interact", "switch", 0),
        ("attack", "enemy", 0),
        ("jump", "lava", 0),
        (None, "collectable", 1),
        ("attack", "enemy", 1),
        (None, "collectable", 1),  # both taken: the nearest
    ]


def test_a_phrase_with_with_says_which_object_when_the_game_names_one_so(reader):
    """The modifiers of a "with" or "using" phrase after the object go to the object when the
    game's names put them before its noun ("the blue door"), and not otherwise ("the green
    switch" names nothing); a pronoun there is the last object."""
    doom = "vizdoom:freedoom1/E1M1"
    read = lambda text: plan_steps(reader.plan(text, doom))[0]
    assert read("Open the door with the blue stripe.") == ["use blue door"]
    assert read("Open the door with the key.") == ["use door"]
    assert read("Take the blue keycard and open the door using it.") == [
        "go blue card",
        "use blue door",
    ]
    (switch,) = reader.read("Flip the switch with the green light over it.", plan_game(doom))
    assert (switch.best.action, switch.best.actor) == ("use", "switch") and switch.clear


def test_the_thresholds_are_the_ones_the_tuning_data_gives(cache):
    import json

    from jgtest.plans import calibrate, meaning

    stored = json.loads(meaning.CALIBRATION.read_text())
    measured = calibrate.calibrate()
    assert measured == stored
    assert stored["right_taken"] >= 0.9 * stored["right"] and stored["wrong"] >= 20


def test_an_unknown_reader_is_refused():
    from jgtest.errors import BadInput
    from jgtest.plans.text import TextToPlan

    with pytest.raises(BadInput, match=r"^unknown reader 'bert': choose one of combined, meaning"):
        TextToPlan(reader="bert")
