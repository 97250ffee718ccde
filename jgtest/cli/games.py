"""``jgtest games``: the registered games, their actions, injected bugs and signals
(:mod:`jgtest.signals`), read from :data:`CATALOGUE` so that the listing imports no JAX.

``python -m jgtest.cli.games`` writes the catalogue again from the registry (:func:`catalogue`);
a test fails when it is out of date.

* chosen: a written catalogue, because building every game (ParkWorld's map, JAX's start) takes
  seconds, and the games it lists are the package's own.
"""

from __future__ import annotations

import json
from pathlib import Path

#: The games' catalogue, written by :func:`write_catalogue`.
CATALOGUE = Path(__file__).with_name("games.json")


def add_parser(sub) -> None:
    games = sub.add_parser("games", help="list the registered games")
    games.set_defaults(func=games_command)


def catalogue() -> list[dict]:
    """Each registered game's name, actions, injected bugs (on ParkWorld, the objects whose texture
    is bugged), bug kinds and signals, built from the registry."""
    import jgtest

    rows = []
    for name in jgtest.registered_games():
        env, params = jgtest.make(name)
        bugs, kinds = env.num_bugs, sorted(set(env.bug_kinds))
        if hasattr(env, "texture_bugs"):
            bugs, kinds = env.texture_bugs(params), ["texture"]
        rows.append(
            {
                "name": name,
                "actions": env.num_actions,
                "bugs": bugs,
                "kinds": kinds,
                "signals": sorted(env.signals),
            }
        )
    return rows


def write_catalogue() -> None:
    CATALOGUE.write_text(json.dumps(catalogue(), indent=1) + "\n")


def games_command(args) -> int:
    for game in json.loads(CATALOGUE.read_text()):
        kinds = ",".join(game["kinds"]) or "-"
        print(
            f"{game['name']:18s} actions={game['actions']:<3d} bugs={game['bugs']:<3d} "
            f"kinds={kinds:28s} signals={','.join(game['signals'])}"
        )
    return 0


if __name__ == "__main__":
    write_catalogue()
    print(f"wrote {CATALOGUE}")
