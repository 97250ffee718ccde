"""Properties of the plan parser (Hypothesis, derandomized and without an example database, so that
each run draws the same examples): whatever bytes or JSON it is given, it returns a plan or refuses
with a :class:`jgtest.errors.UserError`; every plan the schema allows round-trips through its JSON
form (its numbers ints); and a changed plan it accepts compiles for the Dungeon with its integers
intact in int32, or is refused by a :class:`PlanError` (an instance or cell the level does not
have)."""

import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jgtest
from jgtest.errors import UserError
from jgtest.plans import dungeon as game
from jgtest.plans.compiled import compile_plan
from jgtest.plans.model import (
    MOVEMENTS,
    PLAN_INT_MAX,
    Node,
    Plan,
    PlanError,
    Precondition,
    Rule,
    load_plan,
    parse_plan,
)

#: A fixed budget of examples, the same ones on every run (no database, derandomized).
FIXED = settings(max_examples=100, deadline=None, database=None, derandomize=True)

_count = lambda low: st.integers(low, PLAN_INT_MAX)
_actor = st.sampled_from(game.ACTOR_TYPES)
_action = st.sampled_from([*game.ACTIONS, None])
_utilities = {
    "action": _action,
    "radius": _count(0),
    "movement": st.sampled_from(MOVEMENTS),
    "wait": _count(0),
}


def _plans(instance, row, col, max_preconditions: int):
    """Plans that fit the schema (every other field anywhere within its bounds), their actor
    instances, cells and preconditions per rule drawn from ``instance``, ``row``, ``col`` and up to
    ``max_preconditions``."""
    nodes = st.builds(Node, actor=_actor, instance=instance, **_utilities) | st.builds(
        Node, location=st.tuples(row, col), **_utilities
    )
    near = st.builds(Precondition, actor_near=_actor, distance=_count(1))
    health = st.builds(Precondition, health_below=_count(1), distance=_count(1))
    preconditions = st.tuples(near, st.lists(near | health, max_size=max_preconditions - 1)).map(
        lambda pair: (pair[0], *pair[1])
    )
    rules = st.builds(
        Rule,
        preconditions=preconditions,
        priority=st.integers(-PLAN_INT_MAX, PLAN_INT_MAX),
        action=_action,
    )
    return st.builds(
        Plan,
        game=st.just("Dungeon-v0"),
        nodes=st.lists(nodes, min_size=1, max_size=4).map(tuple),
        rules=st.lists(rules, max_size=3).map(tuple),
        name=st.text(max_size=20),
    )


#: Any plan the schema allows.
plans = _plans(_count(0), _count(0), _count(0), max_preconditions=3)
#: Plans that compile for the Dungeon's level (9 x 17 cells, at least one actor of each type, two
#: preconditions a rule).
dungeon_plans = _plans(st.just(0), st.integers(0, 8), st.integers(0, 16), max_preconditions=2)

# Any JSON, with the schema's keys and words among the strings so that some of it gets past the
# first checks.
_words = st.sampled_from(
    [
        "game",
        "Dungeon-v0",
        "nodes",
        "rules",
        "name",
        *Node.__dataclass_fields__,
        *Precondition.__dataclass_fields__,
        "priority",
        *game.ACTOR_TYPES,
        *game.ACTIONS,
        *MOVEMENTS,
    ]
)
_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(-3, 3).map(float)
    | st.floats()
    | st.text(max_size=8)
    | _words
)
json_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(_words | st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@st.composite
def mutated_plans(draw) -> dict:
    """A Dungeon plan's JSON form with one change: an integer (anywhere in it) replaced by one
    beside it (itself as a float, a neighbour, its negation, past the bounds), any value replaced by
    any JSON, or a key added."""
    data = draw(dungeon_plans).to_dict()
    spots = []

    def walk(value):
        for key, item in (
            value.items()
            if isinstance(value, dict)
            else enumerate(value)
            if isinstance(value, list)
            else ()
        ):
            spots.append((value, key))
            walk(item)

    walk(data)
    integers = [(container, key) for container, key in spots if type(container[key]) is int]
    change = draw(st.sampled_from(["an integer beside", "any JSON", "a key added"]))
    if change == "an integer beside" and integers:
        container, key = draw(st.sampled_from(integers))
        value = container[key]
        container[key] = draw(
            st.sampled_from(
                [float(value), value - 1, value + 1, -value, PLAN_INT_MAX + 1, 2**31, 2**63]
            )
        )
    elif change == "a key added":
        container = draw(
            st.sampled_from([data, *(item for item, _ in spots if isinstance(item, dict))])
        )
        container[draw(_words | st.text(max_size=8))] = draw(json_values)
    else:
        container, key = draw(st.sampled_from(spots))
        container[key] = draw(json_values)
    return data


def _round_trips(plan: Plan) -> None:
    """``plan`` is parsed back from its JSON form (as a dict, and as text), and its numbers are
    ints."""
    assert parse_plan(plan.to_dict()) == plan
    assert parse_plan(json.loads(plan.to_json())) == plan
    items = (*plan.nodes, *plan.rules, *(p for rule in plan.rules for p in rule.preconditions))
    values = [getattr(item, field.name) for item in items for field in dataclasses.fields(item)]
    numbers = [
        n
        for v in values
        for n in (v if isinstance(v, tuple) else (v,))
        if isinstance(n, (int, float))
    ]
    # 1.0 in the JSON is the integer 1 (an array index, an int32)
    assert all(type(n) is int for n in numbers), numbers


@FIXED
@given(plans)
def test_every_plan_the_schema_allows_round_trips_through_json(plan):
    _round_trips(plan)


@FIXED
@given(
    json_values
    | st.fixed_dictionaries(
        {"game": st.just("Dungeon-v0")},
        optional={"nodes": json_values, "rules": json_values, "name": json_values},
    )
)
def test_any_json_value_is_a_plan_or_a_plan_error(value):
    try:
        plan = parse_plan(value)
    except PlanError:
        return
    _round_trips(plan)


@pytest.fixture(scope="module")
def dungeon():
    return jgtest.make("Dungeon-v0")[0]


@FIXED
@given(data=mutated_plans())
def test_a_changed_plan_is_refused_by_a_plan_error_or_round_trips_and_compiles_unwrapped(
    dungeon, data
):
    try:
        plan = parse_plan(data)
    except PlanError:
        return
    _round_trips(plan)
    try:
        compiled = compile_plan(plan, dungeon)
    # an actor instance or a cell the level does not have, or more preconditions than a rule holds
    except PlanError:
        return
    assert compiled.node_radius.tolist() == [
        n.radius for n in plan.nodes
    ] and compiled.node_wait.tolist() == [n.wait for n in plan.nodes]
    # int32 holds them: none wrapped
    assert compiled.rule_priority.tolist()[: len(plan.rules)] == [r.priority for r in plan.rules]


@pytest.fixture(scope="module")
def plan_file(tmp_path_factory):
    return tmp_path_factory.mktemp("bytes") / "plan.json"


@FIXED
@given(
    content=st.binary(max_size=64)
    | json_values.map(lambda value: json.dumps(value).encode())
    | plans.map(lambda plan: plan.to_json().encode("utf-16"))
)
def test_any_bytes_in_a_plan_file_load_as_a_plan_or_are_refused_in_one_user_error(
    plan_file, content
):
    plan_file.write_bytes(content)
    try:
        load_plan(plan_file)
    except UserError as error:
        assert str(error).startswith(f"{plan_file}: ")
