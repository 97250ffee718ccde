"""``jgtest run random``: the random agent, on device (:mod:`jgtest.methods.random_testing`), on the
park (:mod:`jgtest.cli.park`) or on a bridged game through the host loop
(:mod:`jgtest.methods.host_random`).
"""

from __future__ import annotations

from jgtest.cli import park
from jgtest.cli.shared import fail, game_kwargs, method_parser, positive_int, run_dir

#: The longest device call when ``--chunk`` is not given: the largest divisor of ``--steps`` up to
#: this, and up to a tenth of ``--steps``, so that the progress bar moves at least ten times.
DEFAULT_CHUNK = 200
#: The progress bar's updates, at least, when ``--chunk`` is not given.
MIN_UPDATES = 10


def add_parser(methods) -> None:
    parser = method_parser(
        methods,
        "random",
        "BlockMaze-v0",
        "the random agent (on ParkWorld-v0 and unreal:…, the park's random agent with object "
        "tests)",
    )
    group = parser.add_argument_group("random options (on-device games)")
    group.add_argument(
        "--envs",
        type=positive_int,
        default=None,
        help="parallel episode slots (default 256; on gym:…, copies of the game, default 1)",
    )
    group.add_argument(
        "--steps", type=positive_int, default=2000, help="steps per slot (default 2000)"
    )
    group.add_argument(
        "--chunk",
        type=positive_int,
        default=None,
        help=(
            "steps per device call, a divisor of --steps (default: the largest divisor up to "
            f"{DEFAULT_CHUNK} and up to a tenth of --steps)"
        ),
    )
    host = parser.add_argument_group(
        "random options (gym:…, ale:…, vizdoom:…; --episodes: episodes in all, default 16)"
    )
    host.add_argument(
        "--actors",
        type=lambda text: positive_int(text, minimum=0),
        default=0,
        help="a Ray game farm of N actors, one copy each (default: in process)",
    )
    park.add_park_options(
        parser, "random options (ParkWorld-v0, unreal:…)", explorer=False, ppgta=False
    )
    parser.set_defaults(func=run)


def run(args) -> int:
    from jgtest.methods.compatibility import HOST_RANDOM_PREFIXES

    if park.is_park_game(args.game):
        return park.run(args)
    host = args.game.startswith(HOST_RANDOM_PREFIXES)
    given = park.park_options_given(args, ignore=("--episodes",) if host else ())
    if given:
        raise fail(
            f"{', '.join(given)}: the park's options (ParkWorld-v0, unreal:…, "
            f"vizdoom:WAD/MAP), not the random agent's on --game {args.game}"
        )
    if host:
        return run_host(args)
    import jgtest
    from jgtest.methods import random_testing

    try:
        if args.game not in jgtest.registered_games():
            jgtest.make(args.game)
        config = random_testing.RandomCampaignConfig(
            game=args.game,
            num_envs=args.envs or 256,
            steps_per_env=args.steps,
            chunk_steps=args.chunk
            or random_testing.largest_divisor(
                args.steps, min(DEFAULT_CHUNK, max(1, args.steps // MIN_UPDATES))
            ),
            seed=args.seed,
            game_kwargs=game_kwargs(args),
        )
        jgtest.make(config.game, **config.game_kwargs)
    except ValueError as error:
        raise fail(error) from None
    random_testing.run_in_console(config, run_dir(args), quiet=args.quiet, resume=args.resume)
    return 0


def run_host(args) -> int:
    """The random agent on a Gymnasium, Atari or ViZDoom game
    (:mod:`jgtest.methods.host_random`)."""
    from jgtest.methods import host_random

    try:
        config = host_random.HostRandomConfig(
            game=args.game,
            episodes=args.episodes or 16,
            num_envs=args.envs or 1,
            seed=args.seed,
            actors=args.actors,
            game_kwargs=game_kwargs(args),
        )
    except ValueError as error:
        raise fail(error) from None
    host_random.run_in_console(config, run_dir(args), quiet=args.quiet, resume=args.resume)
    return 0
