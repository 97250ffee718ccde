"""What plans may say about ``Dungeon-v0`` and how its actions are validated, "in one place" as the
article asks: each :class:`Check` pairs an action with an actor type.

* chosen: the switch's check bound to the switch-toggled event, so one out of reach times out.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from jgtest.envs import dungeon as game
from jgtest.envs.grid import NSEW, grid_distances


@dataclasses.dataclass(frozen=True)
class Check:
    """A post-action validation: the pre-action callback measures ``variable`` just before the
    action; the post-action callback measures it again when ``event`` fires (or after a delay) and
    expects ``change``; no event within ``timeout`` steps fails the test.

    Attributes:
      variable: the measured game variable (one of the game's ``VARIABLES``).
      change: the expected post-action value minus the pre-action one.
      event: the game event (``info["events"]``) the post-action check is bound to; ``None``: a
        delay.
      timeout: steps to wait for the event (or, with no event, the delay before checking).
    """

    variable: str
    change: float
    event: str | None
    timeout: int


#: Variables the pre- and post-action callbacks measure; ``side``: which side of the target the
#: player stands on along the row or column they share (−1 before it, +1 past it, 0 otherwise).
VARIABLES = ("door_open", "switch_on", "kills", "items", "shrine_active", "side")

#: The plan vocabulary: actions a node or rule may name, and actor types it may target.
ACTIONS = {"interact": game.INTERACT, "attack": game.ATTACK, "jump": game.JUMP}
ACTOR_TYPES = game.ACTOR_TYPES

#: (action, actor type) → its validation.
CHECKS = {
    ("interact", "switch"): Check("door_open", 1.0, "switch_toggled", 10),
    ("interact", "shrine"): Check("shrine_active", 1.0, "shrine_activated", 10),
    ("attack", "enemy"): Check("kills", 1.0, "enemy_killed", 10),
    ("jump", "lava"): Check("side", 2.0, None, 1),
}

MOVES, WAIT = 4, game.WAIT
EVENTS = game.EVENTS


def measure(state: game.EnvState, target: jax.Array) -> jax.Array:
    """``float32[len(VARIABLES)]``: the variables with the player and the actor cell ``target``
    (row, col)."""
    gap = state.pos - target
    side = jnp.where(gap[0] == 0, jnp.sign(gap[1]), jnp.where(gap[1] == 0, jnp.sign(gap[0]), 0))
    values = (state.door_open, state.switch_on, state.kills, state.items, state.shrine_active, side)
    return jnp.stack([jnp.asarray(v, jnp.float32) for v in values])


def actors(state: game.EnvState, env: game.Dungeon):
    """``(types int32[A], positions int32[A, 2], present bool[A])``."""
    return jnp.asarray(env.actor_types), state.actor_pos, state.alive


def passable(state: game.EnvState, env: game.Dungeon) -> jax.Array:
    """``bool[H, W]``: cells the player can walk into."""
    return ~env.solid(state)


def face_action(pos: jax.Array, target: jax.Array) -> jax.Array:
    """The move that faces ``target`` from ``pos`` (into it: blocked by it, so only a turn)."""
    gap = jnp.sign(target - pos)
    return jnp.argmax((jnp.asarray(NSEW) == gap[None]).all(-1)).astype(jnp.int32)


def teleport(state: game.EnvState, cell: jax.Array, facing: jax.Array) -> game.EnvState:
    """The player put at ``cell`` facing ``facing`` (the article's simplest navigation: "simply
    teleporting the player")."""
    return state.replace(pos=cell.astype(jnp.int32), facing=facing.astype(jnp.int32))


#: Text to plan (:mod:`jgtest.plans.text`): the words a QA engineer may write for each action
#: (``None``: only get there, e.g. "go to", "collect") and each actor type; spelling slips are
#: matched fuzzily.
ACTION_WORDS = {
    "interact": (
        "interact",
        "activate",
        "toggle",
        "press",
        "use",
        "flip",
        "pull",
        "push",
        "operate",
        "trigger",
        "open",
        "touch",
    ),
    "attack": ("attack", "kill", "hit", "fight", "strike", "slay", "defeat"),
    "jump": ("jump", "leap", "hop", "vault", "cross"),
    None: ("go", "walk", "move", "run", "head", "collect", "pick", "grab", "reach", "visit"),
}
ACTOR_WORDS = {
    "switch": ("switch", "button", "lever"),
    "door": ("door", "gate"),
    "lava": ("lava", "ledge", "pit", "gap", "chasm"),
    "shrine": ("shrine", "altar"),
    "enemy": ("enemy", "monster", "goblin", "foe", "guard"),
    "collectable": ("collectable", "coin", "item", "gem", "chest"),
}
#: Actors a node without an action walks onto (the others, beside).
WALK_ONTO = ("collectable",)
#: Steps after which their actor is gone (killed, collected): a later step names another.
TAKES = frozenset({("attack", "enemy"), (None, "collectable")})
_walking_steps = jax.jit(grid_distances)


def nearest_instances(nodes, env: game.Dungeon) -> tuple:
    """``nodes`` (:class:`jgtest.plans.model.Node`) with each actor's ``instance`` the one a text
    means when it names only a type ("kill the goblin", "grab the coin on the far side", "kill the
    other goblin"): the nearest, in steps walked on the level with the lava impassable, to where
    the step before left the player, among those no earlier step has killed or collected
    (:data:`TAKES`). The player starts at the level's start, stands at a step's actor after it,
    and lands across the lava after a jump.

    * chosen: distances on the default layout with the door open, because a plan's steps open it
      and enemies move only once the player is near.
    """
    params = env.default_params
    blocked = np.asarray(params.walls) | np.asarray(params.lava)
    cells = np.asarray(params.actor_pos)
    steps_from = lambda cell: np.asarray(_walking_steps(jnp.asarray(blocked), jnp.asarray(cell)))
    where, taken, out = np.asarray(params.start), set(), []
    for node in nodes:
        if node.actor is None:
            where = np.asarray(node.location) if node.location is not None else where
            out.append(node)
            continue
        ids = env.actor_ids(ACTOR_TYPES.index(node.actor))
        steps = steps_from(where)
        k = min(range(len(ids)), key=lambda k: (ids[k] in taken, steps[tuple(cells[ids[k]])], k))
        if (node.action, node.actor) in TAKES:
            taken.add(ids[k])
        target = cells[ids[k]]
        if node.action == "jump":  # the free cell beside the pit farthest from where we stood
            beside = [
                target + move
                for move in np.asarray(NSEW)
                if (0 <= target + move).all()
                and (target + move < blocked.shape).all()
                and not blocked[tuple(target + move)]
            ]
            target = max(beside, key=lambda cell: steps[tuple(cell)], default=target)
        where = target
        out.append(dataclasses.replace(node, instance=k))
    return tuple(out)


#: Reading by meaning (:mod:`jgtest.plans.meaning`): the (action, actor type) pairs a sentence may
#: be read as, those the level validates (:data:`CHECKS`) and getting to any actor (``None``), so
#: that no sentence becomes a step the level cannot check ("hit the switch" is never an attack).
READINGS = (*CHECKS, *((None, actor) for actor in ACTOR_TYPES))
#: Each action in a few canonical phrases, its object an "it" (the object is read apart).
ACTION_PHRASES = {
    "interact": (
        "press it",
        "use it",
        "activate it",
        "operate it",
        "switch it on",
        "flip it",
        "pull it",
        "toggle it",
    ),
    "attack": ("attack it", "kill it", "fight it", "take it out"),
    "jump": ("jump over it", "leap across it"),
    None: ("go to it", "walk up to it", "reach it", "approach it", "find it"),
}
#: What an action is called on one actor type only: getting to a coin is collecting it.
READING_PHRASES = {(None, "collectable"): ("pick it up", "collect it")}
#: Each actor type in a few canonical noun phrases, its role in the level among them.
ACTOR_PHRASES = {
    "switch": ("the switch", "the lever", "the button", "the switch that opens the door"),
    "door": ("the door", "the gate"),
    "lava": ("the lava", "the lava pit", "the gap to jump over"),
    "shrine": ("the shrine", "the altar", "the shrine that ends the level"),
    "enemy": ("the enemy", "the monster", "the goblin"),
    "collectable": ("the coin", "the gem", "the item to collect"),
}
