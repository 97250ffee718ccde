"""``jgtest games``: the registered games, their actions, injected bugs and signals
(:mod:`jgtest.signals`)."""

from __future__ import annotations


def add_parser(sub) -> None:
    games = sub.add_parser("games", help="list the registered games")
    games.set_defaults(func=games_command)


def games_command(args) -> int:
    import jgtest

    for name in jgtest.registered_games():
        env, _ = jgtest.make(name)
        kinds = ",".join(sorted(set(env.bug_kinds))) or "-"
        print(
            f"{name:18s} actions={env.num_actions:<3d} bugs={env.num_bugs:<3d} "
            f"kinds={kinds:28s} signals={','.join(sorted(env.signals))}"
        )
    return 0
