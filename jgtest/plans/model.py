"""Explicit plans as data: the article's nodes and rules, their JSON form and its JSON Schema::

    {"game": "Dungeon-v0", "nodes": [{"actor": "switch", "action": "interact"}],
     "rules": [{"preconditions": [{"actor_near": "enemy"}], "action": "attack"}]}

* chosen: integers at most :data:`PLAN_INT_MAX`, because compiled plans are int32: no wrapping.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from jgtest.errors import PlanError
from jgtest.files import read_json

MOVEMENTS = ("walk", "teleport")
#: The most nodes a plan may hold, and rules: far beyond a hand-written test or a recorded session
#: (``plan record`` keeps a node every few steps of a 2,000-step Doom episode), and small enough
#: that a plan is checked, compiled and run in a second or two. Checked before anything else is
#: read.
MAX_PLAN_NODES, MAX_PLAN_RULES = 4096, 256
#: The largest integer a plan may hold (instance, location, radius, wait, distance, health
#: threshold), and the bound of a priority's magnitude: far beyond any map side (the Dungeon's is 17
#: cells) or episode, and far enough inside int32, the dtype of a compiled plan, that the agent's
#: arithmetic on them (a distance against a radius, steps waited against a wait) never wraps: a
#: radius of ``2**31`` is refused instead of wrapping to a negative one that nothing reaches.
PLAN_INT_MAX = 2**15
#: What each integer field of a plan is, for the messages that refuse a value out of its bounds.
_INTEGERS = {
    "instance": "actor instance",
    "location": "map coordinate",
    "radius": "tolerance radius",
    "wait": "wait",
    "distance": "precondition distance",
    "health_below": "health threshold",
    "priority": "priority",
}


@dataclasses.dataclass(frozen=True)
class Node:
    """A target, an actor or a location, and the action to perform there.

    Attributes:
      actor: the actor type targeted (or a ``location``).
      instance: which actor of that type, in the game's actor order.
      location: the cell targeted, ``[row, col]``.
      action: the action on arrival; ``None``: only get there.
      radius: the tolerance, in Manhattan cells (1: beside the target).
      movement: ``"walk"`` or ``"teleport"``.
      wait: steps to stay after arriving (and acting).
    """

    actor: str | None = None
    instance: int = 0
    location: tuple[int, int] | None = None
    action: str | None = None
    radius: int = 1
    movement: str = "walk"
    wait: int = 0


@dataclasses.dataclass(frozen=True)
class Precondition:
    """``{"actor_near": TYPE, "distance": D}`` (an actor of that type within D cells) or
    ``{"health_below": H}``."""

    actor_near: str | None = None
    distance: int = 3
    health_below: int | None = None


@dataclasses.dataclass(frozen=True)
class Rule:
    """A rule: when every precondition holds, its action is performed on the nearest actor of its
    first ``actor_near`` (``None``: walk onto it, e.g. to collect); the highest priority first."""

    preconditions: tuple[Precondition, ...]
    priority: int = 0
    action: str | None = None


@dataclasses.dataclass(frozen=True)
class Plan:
    """A plan: nodes in order and rules (a plan read from text with guesses taken, ``jgtest plan
    from-text --accept-best``, lists them in ``accepted_guesses``)."""

    game: str
    nodes: tuple[Node, ...]
    rules: tuple[Rule, ...] = ()
    name: str = ""
    #: Lines of a text plan read below the confidence threshold and taken anyway
    #: (``from-text --accept-best``).
    accepted_guesses: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        """The JSON form (the module's example), defaults left out."""

        def compact(item) -> dict:
            defaults = {f.name: f.default for f in dataclasses.fields(item)}
            out = {}
            for key, value in dataclasses.asdict(item).items():
                if key == "preconditions":
                    out[key] = [compact(p) for p in item.preconditions]
                elif value != defaults.get(key) or key == "action" and isinstance(item, Rule):
                    out[key] = list(value) if isinstance(value, tuple) else value
            return out

        return {
            "game": self.game,
            **({"name": self.name} if self.name else {}),
            "nodes": [compact(n) for n in self.nodes],
            "rules": [compact(r) for r in self.rules],
            **({"accepted_guesses": list(self.accepted_guesses)} if self.accepted_guesses else {}),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)


def plan_schema(vocabulary) -> dict:
    """The JSON Schema (draft 2020-12) of plans for one game; ``vocabulary`` has ``ACTIONS`` and
    ``ACTOR_TYPES``, and ``RULES`` or ``LOCATIONS`` false where its plans take no rules or no
    locations (a Doom level's)."""
    actions, types = list(vocabulary.ACTIONS), list(vocabulary.ACTOR_TYPES)
    action = {"enum": [*actions, None]}
    integer = lambda minimum: {"type": "integer", "minimum": minimum, "maximum": PLAN_INT_MAX}
    node = _closed_object(
        {
            "actor": {"enum": types},
            "instance": integer(0),
            "location": {"type": "array", "items": integer(0), "minItems": 2, "maxItems": 2},
            "action": action,
            "radius": integer(0),
            "movement": {"enum": list(MOVEMENTS)},
            "wait": integer(0),
        },
        one_of=[
            {"required": ["actor"], "not": {"required": ["location"]}},
            {"required": ["location"], "not": {"required": ["actor"]}},
        ],
    )
    precondition = _closed_object(
        {"actor_near": {"enum": types}, "distance": integer(1), "health_below": integer(1)},
        one_of=[{"required": ["actor_near"]}, {"required": ["health_below"]}],
    )
    rule = _closed_object(
        {
            "preconditions": {"type": "array", "items": precondition, "minItems": 1},
            "priority": integer(-PLAN_INT_MAX),
            "action": action,
        },
        required=["preconditions", "action"],
    )
    if not getattr(vocabulary, "LOCATIONS", True):
        del node["properties"]["location"], node["oneOf"]
        node["required"] = ["actor"]
    rules = (
        {"type": "array", "items": rule}
        if getattr(vocabulary, "RULES", True)
        else {"type": "array", "maxItems": 0}
    )
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **_closed_object(
            {
                "game": {"type": "string"},
                "name": {"type": "string"},
                "nodes": {"type": "array", "items": node, "minItems": 1},
                "rules": rules,
                "accepted_guesses": {"type": "array", "items": {"type": "string"}},
            },
            required=["game", "nodes"],
        ),
    }


def _closed_object(
    properties: dict, required: list[str] | None = None, one_of: list[dict] | None = None
) -> dict:
    """The JSON Schema of an object with ``properties`` and no others, its ``required`` ones and its
    ``oneOf`` alternatives where given."""
    schema = {"type": "object", "additionalProperties": False}
    if required is not None:
        schema["required"] = required
    schema["properties"] = properties
    if one_of is not None:
        schema["oneOf"] = one_of
    return schema


def _where(path) -> str:
    """``nodes[1].action`` from a jsonschema error path."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "plan"


#: Reasons in the plan's words, by (failed schema keyword, the field it is about).
_REASONS = {
    ("minItems", "nodes"): "an empty plan: it needs at least one node",
    ("minItems", "preconditions"): "a rule without preconditions",
    ("maxItems", "rules"): "this game's plans take no rules",
    (
        "required",
        "nodes",
    ): "a node targets one of the game's things (an actor); this game's plans take no locations",
    ("oneOf", "nodes"): "a node targets either an actor or a location (exactly one of them)",
    (
        "oneOf",
        "preconditions",
    ): "a precondition is either actor_near or health_below (exactly one of them)",
}


def _message(error) -> str:
    """What a jsonschema error says is wrong, in the plan's words where they are clearer."""
    field = next((part for part in reversed(error.path) if isinstance(part, str)), "")
    if error.validator in ("minimum", "maximum"):
        side = "above the largest" if error.validator == "maximum" else "below the smallest"
        return f"{error.instance} is {side} {_INTEGERS[field]}, {error.validator_value}"
    return _REASONS.get((error.validator, field), error.message)


def parse_plan(data: dict, vocabulary=None) -> Plan:
    """A :class:`Plan` from its JSON form, checked against its game's schema.

    Numbers written as floats with no fraction (``1.0``) are JSON Schema integers, and become ints.

    Raises:
      PlanError: naming the first problem and where it is (more nodes or rules than
        :data:`MAX_PLAN_NODES` and :data:`MAX_PLAN_RULES`, checked first; an unknown actor type or
        action, an integer out of its bounds, an empty plan, a rule without preconditions, an
        unknown game).
    """
    if not isinstance(data, dict) or not isinstance(data.get("game"), str):
        raise PlanError("plan: a plan is a JSON object with a 'game' (e.g. \"Dungeon-v0\")")
    for key, limit in (("nodes", MAX_PLAN_NODES), ("rules", MAX_PLAN_RULES)):
        if isinstance(data.get(key), list) and len(data[key]) > limit:
            raise PlanError(
                f"{key}: {len(data[key]):,} {key}, more than a plan may hold ({limit:,})"
            )
    import jsonschema

    vocabulary = vocabulary or plan_game(data["game"])
    errors = sorted(
        jsonschema.Draft202012Validator(plan_schema(vocabulary)).iter_errors(data),
        key=lambda e: (list(e.path), e.message),
    )
    if errors:
        deepest = max(errors, key=lambda e: len(e.path))
        raise PlanError(f"{_where(deepest.path)}: {_message(deepest)}")
    data = _integers(data)
    nodes = tuple(
        Node(**{**n, **({"location": tuple(n["location"])} if "location" in n else {})})
        for n in data["nodes"]
    )
    rules = tuple(
        Rule(
            tuple(Precondition(**p) for p in r["preconditions"]), r.get("priority", 0), r["action"]
        )
        for r in data.get("rules", ())
    )
    for i, rule in enumerate(rules):
        if rule.preconditions[0].actor_near is None:
            raise PlanError(
                f"rules[{i}].preconditions[0]: a rule's first precondition names the actor it "
                "acts on (actor_near)"
            )
    return Plan(
        data["game"], nodes, rules, data.get("name", ""), tuple(data.get("accepted_guesses", ()))
    )


def _integers(value):
    """``value`` (a plan that fits its schema, where every number is an integer) with its floats as
    ints."""
    if isinstance(value, dict):
        return {key: _integers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_integers(item) for item in value]
    return int(value) if isinstance(value, float) else value


def load_plan(path: str | Path) -> Plan:
    """The plan in a JSON file (:func:`parse_plan`); errors name the file.

    Raises:
      BadFile: the file is missing, a directory, unreadable, not UTF-8 or not JSON
        (:func:`jgtest.files.read_json`).
      PlanError: the JSON is not a plan of a known game.
    """
    data = read_json(path)
    try:
        return parse_plan(data)
    except PlanError as error:
        raise PlanError(f"{path}: {error}") from None


def plan_game(game: str) -> Any:
    """The plan vocabulary and checks of ``game``: :mod:`jgtest.plans.dungeon` for ``Dungeon-v0``, a
    :class:`jgtest.plans.doom.DoomPlans` for a ViZDoom level (``vizdoom:freedoom1/E1M1``)."""
    from jgtest.plans import doom, dungeon

    if doom.level_of(game):
        return doom.plans_of(doom.level_of(game))
    games = {"Dungeon-v0": dungeon}
    if game not in games:
        raise PlanError(
            f"game: plans run on {', '.join(games)} and ViZDoom's levels (vizdoom:freedoom1/E1M1 "
            f"…), got {game!r}"
        )
    return games[game]
