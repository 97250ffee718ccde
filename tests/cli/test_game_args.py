"""``--game-arg KEY=VALUE``: parsed as JSON, then checked against the game's option of that name.

Property-based (Hypothesis, a fixed budget): any text parses or is refused with a
:class:`jgtest.errors.BadInput`; valid values round-trip; and any parsed value given to a game's
numeric options is taken or refused with a ``ValueError`` naming the key, never a crash.
"""

from __future__ import annotations

import json
import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jgtest
from jgtest.cli.shared import parse_key_values
from jgtest.envs.registration import hashable
from jgtest.errors import BadInput

PROPERTY = settings(max_examples=120, deadline=None, database=None, derandomize=True)
_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3),
    max_leaves=6,
)


@PROPERTY
@given(st.text(max_size=30))
def test_any_text_is_an_option_or_a_bad_input(text):
    try:
        options = parse_key_values([text])
    except BadInput as error:
        assert "--game-arg" in str(error)
    else:
        ((key, value),) = options.items()
        assert text.startswith(key + "=")


@PROPERTY
@given(st.text(min_size=1, max_size=8).filter(lambda k: "=" not in k and k.strip()), _values)
def test_valid_values_round_trip(key, value):
    parsed = parse_key_values([f"{key}={json.dumps(value)}"])[key]
    same = lambda a, b: (
        (isinstance(a, float) and math.isnan(a) and math.isnan(b))
        or (
            a == b and type(a) is type(b)
            if not isinstance(a, tuple)
            else len(a) == len(b) and all(map(same, a, b))
        )
    )
    assert same(parsed, hashable(value))


@PROPERTY
@given(
    st.sampled_from(["num_bugs", "gold_reward", "max_steps_in_episode", "bug_pos", "num_near"]),
    _values,
)
def test_a_games_options_take_or_refuse_any_value_naming_the_key(key, value):
    try:
        jgtest.make("BlockMaze-v0", **{key: value})
    except ValueError as error:
        assert key in str(error) or "bug" in str(error)


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("num_bugs", 2.5, "num_bugs takes a whole number, got 2.5"),
        ("num_bugs", 2.0, "num_bugs takes a whole number, got 2.0"),
        ("num_bugs", True, "num_bugs takes a whole number, got True"),
        ("gold_reward", float("nan"), "gold_reward takes finite numbers, got nan"),
        ("gold_reward", float("inf"), "gold_reward takes finite numbers, got inf"),
        ("gold_reward", "high", "gold_reward takes a number, got 'high'"),
        ("gold_reward", [1.0], "gold_reward takes a number, got [1.0]"),
        ("bug_pos", [[1, 3]] * 9 + [[1.5, 3]], "bug_pos takes a whole number, got 1.5"),
    ],
)
def test_a_value_of_the_wrong_kind_is_refused_by_name(key, value, message):
    with pytest.raises(BadInput, match=re.escape(message)):
        jgtest.make("BlockMaze-v0", **{key: value})


def test_values_of_the_right_kind_are_taken():
    env, params = jgtest.make("BlockMaze-v0", num_bugs=3, gold_reward=2)
    assert env.num_bugs == 3 and float(params.gold_reward) == 2.0
