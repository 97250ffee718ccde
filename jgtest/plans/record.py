"""Plans by recording a play session (the article: "recording the locations periodically, as well
as every action performed"): :func:`record_plan`, a skeleton to edit by hand.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator

import jax
import jax.numpy as jnp
import numpy as np

from jgtest.envs.grid import NSEW
from jgtest.errors import BadInput
from jgtest.plans.model import Node, Plan, plan_game

#: Keyboard keys of the recorder: WASD moves, E interacts, F attacks, space jumps, . waits, Q stops.
KEYS = {
    "w": "move_north",
    "s": "move_south",
    "d": "move_east",
    "a": "move_west",
    "e": "interact",
    "f": "attack",
    " ": "jump",
    ".": "wait",
}


def parse_actions(lines: Iterable[str], action_names: tuple[str, ...]) -> list[int]:
    """Game actions from lines of names or indices (``#`` comments, blank lines skipped).

    Raises:
      BadInput: naming the line of an unknown action."""
    actions = []
    for number, line in enumerate(lines, 1):
        word = line.split("#", 1)[0].strip()
        if not word:
            continue
        if word.isdigit() and int(word) < len(action_names):
            actions.append(int(word))
        elif word in action_names:
            actions.append(action_names.index(word))
        else:
            raise BadInput(
                f"line {number}: unknown action {word!r} (one of {', '.join(action_names)}, or "
                "its index)"
            )
    return actions


def keyboard_actions(env, stream=None, show=print) -> Iterator[int]:
    """Game actions read key by key from ``stream`` (default stdin, raw mode on a terminal) until
    ``q``; ``show`` is given the level as text before each key."""
    stream = stream or sys.stdin
    names = tuple(env.action_names)
    restore = _raw(stream)
    try:
        while True:
            key = stream.read(1)
            if not key or key.lower() == "q":
                return
            if key.lower() in KEYS:
                yield names.index(KEYS[key.lower()])
    finally:
        restore()


def _raw(stream):
    """Puts a terminal in raw mode (one key at a time, no echo); returns how to undo it."""
    if not hasattr(stream, "fileno") or not stream.isatty():
        return lambda: None
    import termios
    import tty

    fd = stream.fileno()
    saved = termios.tcgetattr(fd)
    tty.setcbreak(fd)
    return lambda: termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def render(env, state) -> str:
    """The level as text: ``#`` wall, ``~`` lava, ``P`` the player, actors by their layout mark."""
    marks = {0: "s", 1: "D", 2: "L", 3: "S", 4: "e", 5: "c"}
    grid = np.where(np.asarray(state.walls), "#", np.where(np.asarray(state.lava), "~", "."))
    for kind, pos, alive in zip(
        env.actor_types, np.asarray(state.actor_pos), np.asarray(state.alive)
    ):
        if alive and not (kind == 1 and bool(state.door_open)):
            grid[pos[0], pos[1]] = marks[int(kind)]
    grid[int(state.pos[0]), int(state.pos[1])] = "P"
    return "\n".join("".join(row) for row in grid)


def record_plan(
    env,
    params,
    actions: Iterable[int],
    seed: int = 0,
    every: int = 5,
    name: str = "recorded play session",
    on_step=None,
) -> Plan:
    """The plan of a play session on ``env`` from ``reset(seed)``; ``on_step(state)`` after each
    step.

    Keeps, as nodes: the player's cell every ``every`` steps (a location node, radius 0), and every
    plan action (interact, attack, jump) as a node on the actor it was done to (the event's actor,
    or the actor the player faces or stands beside), else at the cell ahead.

    Raises:
      BadInput: ``every`` below 1, or a session that recorded no node.
    """
    if every < 1:
        raise BadInput(f"--every must be at least 1, got {every}")
    vocab = plan_game(env.name)
    plan_actions = {index: name for name, index in vocab.ACTIONS.items()}
    step = jax.jit(env.step_env)
    _, state = env.reset(jax.random.key(seed), params)  # gymnax's reset: jitted
    nodes = []
    for t, action in enumerate(actions):
        before = state
        _, state, _, done, info = step(
            jax.random.fold_in(jax.random.key(seed), t), state, jnp.int32(action), params
        )
        if action in plan_actions:
            nodes.append(
                _action_node(env, vocab, before, int(info["event_actor"]), plan_actions[action])
            )
        elif (t + 1) % every == 0:
            nodes.append(Node(location=tuple(int(v) for v in state.pos), radius=0))
        if on_step is not None:
            on_step(state)
        if bool(done):
            break
    if not nodes:
        raise BadInput("the session recorded nothing: play at least one action or a few moves")
    return Plan(env.name, tuple(nodes), (), name)


def _action_node(env, vocab, state, event_actor: int, action: str) -> Node:
    """The node of an action done in ``state``: on the event's actor, else the actor ahead or
    beside, else the cell ahead."""
    ahead = np.asarray(state.pos) + NSEW[int(state.facing)]
    positions, present = np.asarray(state.actor_pos), np.asarray(state.alive)
    at_ahead = np.flatnonzero((positions == ahead).all(-1) & present)
    beside = np.flatnonzero((np.abs(positions - np.asarray(state.pos)).sum(-1) == 1) & present)
    actor = (
        event_actor
        if event_actor >= 0
        else (
            at_ahead[0]
            if at_ahead.size
            else (beside[0] if beside.size and action != "jump" else -1)
        )
    )
    if actor < 0:
        return Node(location=tuple(int(v) for v in ahead), action=action, radius=1)
    kind = int(env.actor_types[actor])
    instance = int(np.flatnonzero(env.actor_types == kind).tolist().index(actor))
    return Node(actor=vocab.ACTOR_TYPES[kind], instance=instance, action=action)
