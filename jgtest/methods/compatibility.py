"""Whether a method can test a game (the signals each reads and provides, :mod:`jgtest.signals`;
:func:`runs_on`), checked before anything compiles, and the docs' method × game table
(``python -m jgtest.methods.compatibility`` writes ``docs/games.md``)::

    >>> from jgtest.methods import compatibility
    >>> compatibility.check("reline", "BlockMaze-v0")
    Traceback (most recent call last):
    ...
    jgtest.methods.compatibility.MissingSignal: reline reads frame_time, which BlockMaze-v0 does
    not provide. To provide it: ...
"""

from __future__ import annotations

from jgtest.errors import BadInput
from jgtest.signals import HOW, NEEDS, SIGNALS


class MissingSignal(BadInput):
    """A method was asked to test a game that does not provide a signal it reads."""


class NotWired(BadInput):
    """A method that can read a game's signals but has no settings made for that game."""


def provided(game: str, options: dict | None = None) -> frozenset[str]:
    """The signals ``game`` provides: a twin's from the game built with its defaults (nothing
    compiles), a bridged game's from its class (no game starts).

    Raises:
      ValueError: an unknown game (the registry's or the bridges' message).
    """
    from jgtest.host_loop import host_game_signals, is_host_game

    if is_host_game(game):
        return host_game_signals(game, options or {})
    from jgtest.envs.registration import make

    return frozenset(make(game)[0].signals)


def missing(method: str, game: str, options: dict | None = None) -> tuple[str, ...]:
    """The signals ``method`` reads that ``game`` does not provide, in :data:`NEEDS`' order."""
    if method not in NEEDS:
        raise BadInput(f"unknown method {method!r}; methods: {', '.join(NEEDS)}")
    from jgtest.plans.doom import level_of

    if method == "plan" and level_of(game):
        # a level's plans read the engine's sectors and things (jgtest.plans.doom), not a twin's
        # events and actors
        return ()
    have = provided(game, options)
    return tuple(s for s in NEEDS[method] if s not in have)


def runs_on(method: str, game: str) -> tuple[str, str] | None:
    """``None`` where ``method`` has settings for ``game``; otherwise why not, short (a table cell)
    and in full (the refusal). Signals present, a method may still need settings made for the
    game."""
    from jgtest.host_loop import is_host_game

    if method == "reline":
        from jgtest.methods.reline.config import (
            GAMES,
            GENERIC_PREFIXES,
            HOST_GAMES,
            is_bridged,
        )

        known = GAMES + HOST_GAMES
        if game not in GAMES and not is_bridged(game):
            return "no RELINE settings", (
                "RELINE's per-game settings (reward, threshold, training budget) exist for "
                f"{', '.join(known)} "
                f"and {', '.join(p + '…' for p in GENERIC_PREFIXES)}"
            )
    elif method == "inspector" and game.startswith(("vizdoom:", "gym:")):
        if game.startswith("vizdoom:") and "/" not in game:
            return (
                "levels only",
                "Inspector explores a level with its 360° object tests, whose walk turns and "
                "strafes: a WAD's map (vizdoom:freedoom2/MAP01)",
            )
    elif method in ("ppgta", "compare-explorers") and game.startswith("vizdoom:"):
        return "no PPGTA models", (
            "PPGTA's models (path imitation, inverse dynamics, the object detector, the texture "
            "oracle) are trained "
            "on ParkWorld-v0: its path follower's demonstrations and its objects' textures with "
            "injected defects. On a "
            "level, a scripted walker over the walkable cells could record the demonstrations "
            "and the labels buffer "
            "could train the detector, but that training is not wired for levels"
        )
    elif method in ("inspector", "ppgta", "compare-explorers") or (
        method == "random" and game.startswith("unreal:")
    ):
        if game != "ParkWorld-v0" and not game.startswith("unreal:"):
            return "park agents only", (
                "the park's agents are trained on ParkWorld-v0 and drive it, an Unreal game "
                "(unreal:HOST:PORT) or, "
                "Inspector, a level (vizdoom:WAD/MAP) or a Gymnasium game reporting its objects "
                "(gym:ENV_ID)"
            )
    elif method == "plan":
        if game.startswith("vizdoom:") and "/" not in game:
            return (
                "levels only",
                "plans on ViZDoom name a level's doors, switches, pickups and exit, read from "
                "its WAD: a map (vizdoom:freedoom1/E1M1)",
            )
        if game != "Dungeon-v0" and not game.startswith("vizdoom:"):
            return (
                "no plan vocabulary",
                "plans have a vocabulary (actions, actors, validations) for Dungeon-v0 and "
                "ViZDoom's levels (vizdoom:WAD/MAP)",
            )
    elif (
        is_host_game(game)
        and not (method == "random" and game.startswith(HOST_RANDOM_PREFIXES))
        and method != "wuji"
    ):
        return "device games only", f"{method} runs on device games; {game} steps on the host"
    return None


def check(method: str, game: str, options: dict | None = None) -> None:
    """Refuses ``method`` on ``game`` before anything compiles.

    Raises:
      MissingSignal: a signal the method reads is not provided, named with how to provide it.
      NotWired: the signals are there but the method has no settings for the game.
      ValueError: an unknown game.
    """
    lacking = missing(method, game, options)
    if lacking:
        advice = "; ".join(f"{s}: {HOW[s]}" for s in lacking)
        raise MissingSignal(
            f"{method} reads {', '.join(lacking)}, which {game} does not provide. To provide it: "
            f"{advice}"
        )
    reason = runs_on(method, game)
    if reason is not None:
        raise NotWired(f"{method} cannot run on {game}: {reason[1]}")


def compatibility_table(games: tuple[str, ...], methods: tuple[str, ...] = tuple(NEEDS)) -> str:
    """The method × game table in Markdown: ✓ where :func:`check` passes, otherwise why not."""
    rows = [
        "| game | provides | " + " | ".join(methods) + " |",
        "|---|---|" + "---|" * len(methods),
    ]
    for game in games:
        cells = []
        for method in methods:
            lacking = missing(method, game)
            if lacking:
                cells.append("needs " + ", ".join(lacking))
            else:
                reason = runs_on(method, game)
                cells.append("✓" if reason is None else reason[0])
        have = ", ".join(s for s in SIGNALS if s in provided(game))
        rows.append(f"| `{game}` | {have} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


#: The bridged games the random campaign plays through the host loop
#: (:mod:`jgtest.methods.host_random`).
HOST_RANDOM_PREFIXES = ("gym:", "ale:", "vizdoom:")
#: The docs' method × game page (``python -m jgtest.methods.compatibility`` writes it; ``--check``
#: compares).
PAGE = "docs/games.md"
#: The bridged and adapted games the page lists beside the twins jgtest ships.
BRIDGED_EXAMPLES = (
    "ale:MsPacman",
    "ale:Pong",
    "ale:Enduro",
    "supertuxkart:scotland",
    "unreal:HOST:PORT",
    "vizdoom:basic",
    "vizdoom:freedoom2/MAP01",
    "gym:ENV_ID",
    "gymnax:CartPole-v1",
    "craftax:Craftax-Classic-Symbolic-v1",
)


def page() -> str:
    """The docs' page: the signals, what each method reads, and the method × game table."""
    from jgtest.envs import BUILT_IN_GAMES

    signal_rows = "\n".join(f"| `{s}` | {HOW[s]} |" for s in SIGNALS)
    need_rows = "\n".join(
        f"| `{m}` | {', '.join(f'`{s}`' for s in needs)} |" for m, needs in NEEDS.items()
    )
    return (
        "# Which method runs on which game\n\n"
        "<!-- generated by `python -m jgtest.methods.compatibility`; `--check` tells whether it "
        "is current -->\n\n"
        "Each game declares the signals it provides (`TestingEnv.signals`, `HostEnv.signals`) "
        "and each method "
        "the signals it reads (`jgtest.signals.NEEDS`). `jgtest run METHOD --game G` refuses a "
        "pair before anything "
        "compiles, naming the missing signal and how a game provides it.\n\n"
        "## Signals, and how a game provides each\n\n| signal | how a game provides it "
        "|\n|---|---|\n"
        f"{signal_rows}\n\n## What each method reads\n\n| method | reads "
        f"|\n|---|---|\n{need_rows}\n\n"
        "## Methods × games\n\n✓: runs. *needs X*: the game does not provide signal X. Otherwise "
        "the method has "
        "no settings for the game, and the cell says which it has them for.\n\n"
        f"{compatibility_table(BUILT_IN_GAMES + BRIDGED_EXAMPLES)}\n\n"
        "`gym:ENV_ID` as it is without `--telemetry`; a telemetry function adds the signals of "
        "the fields it declares "
        "(`provides`, default `position`): `position`, and `objects` with the player's `angle` "
        "for Inspector, whose walk also "
        "needs the game's actions named (`--game-arg "
        "action_names=MOVE_FORWARD,TURN_LEFT,TURN_RIGHT,MOVE_LEFT,…`).\n\n"
        f"{atari_cells()}\n"
    )


def atari_cells() -> str:
    """Which Atari games (``ale:GAME``) take their cells and position from the RAM, and which from a
    frame hash."""
    from jgtest.host_loop import atari_cell_sources

    sources = atari_cell_sources()
    ram = [g for g, source in sources.items() if source == "ram"]
    hashed = [g for g, source in sources.items() if source != "ram" and g != "MsPacman"]
    return (
        "## Atari games (`ale:GAME`)\n\nCells and position from the RAM (the player's "
        "coordinates as AtariARI annotates them; "
        f"`ale:MsPacman` through its own bridge): {', '.join(['MsPacman', *ram])}.\n\n"
        f"Cells from a coarse hash of the frame, and no position, for the other {len(hashed)} "
        f"games envpool ships: {', '.join(hashed)}.\n"
    )


def main(argv=None) -> int:
    import argparse
    from pathlib import Path

    parser = argparse.ArgumentParser(description="Writes the docs' method × game page.")
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if the page differs"
    )
    args = parser.parse_args(argv)
    path = Path(__file__).resolve().parents[2] / PAGE
    if args.check:
        current = path.read_text() == page() if path.exists() else False
        print(
            f"{PAGE} is "
            f"{'current' if current else 'stale: run python -m jgtest.methods.compatibility'}"
        )
        return 0 if current else 1
    path.write_text(page())
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
