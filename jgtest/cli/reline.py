"""``jgtest run reline``: RELINE against its RL baseline and a random agent
(:mod:`jgtest.methods.reline`)."""

from __future__ import annotations

from jgtest.cli.shared import fail, game_kwargs, method_parser, positive_int, run_dir


def add_parser(methods) -> None:
    parser = method_parser(
        methods,
        "reline",
        "CartPoleBugs-v0",
        "RELINE load testing: Table 1 on the toy games, low-FPS points on the karts and the levels",
    )
    group = parser.add_argument_group("reline options")
    group.add_argument(
        "--models",
        type=positive_int,
        default=None,
        help=(
            "models per agent, trained vmapped (default: the paper's, 10; 1 on the karts and the "
            "levels)"
        ),
    )
    group.add_argument(
        "--eval-episodes",
        type=positive_int,
        default=1000,
        help="evaluation episodes per model (default 1000)",
    )
    group.add_argument(
        "--agents", default="reline,rl-baseline,random", help="comma-separated agents"
    )
    group.add_argument(
        "--train-steps",
        type=positive_int,
        default=None,
        help="DQN training steps per model (default: the game's)",
    )
    group.add_argument("--quick", action="store_true", help="the small training budget (CPU)")
    group.add_argument(
        "--actors",
        type=lambda text: positive_int(text, minimum=0),
        default=0,
        help="on a bridged game: a Ray game farm of N actors (default: in process)",
    )
    group.add_argument(
        "--ray-address",
        default=None,
        help=(
            "with --actors: the Ray cluster to join ('auto' or host:port; default: start a local "
            "Ray)"
        ),
    )
    group.add_argument(
        "--elites",
        choices=("percentile", "rank"),
        default="percentile",
        help=(
            "CartPole's CEM elites: the replication package's percentile cut (default) or the "
            "paper's best 11 of 16"
        ),
    )
    group.add_argument(
        "--elite-percentile",
        type=float,
        default=None,
        help=(
            "with --elites percentile: the percentile of the batch's returns an episode must "
            "reach to be an elite, in (0, 100) (default 70, the package's)"
        ),
    )
    group.add_argument(
        "--evaluation",
        choices=("training", "frozen"),
        default="training",
        help=(
            "models keep learning through the episodes the tables count (the package's protocol, "
            "default) or are frozen first (the paper's text)"
        ),
    )
    for flag, field in (
        ("--threshold-episodes", "threshold_episodes"),
        ("--warmup-episodes", "warmup_episodes"),
        ("--replays", "replays"),
    ):
        group.add_argument(
            flag,
            type=positive_int,
            default=None,
            help=f"on a kart or a level: {field.replace('_', ' ')} (default: the paper's)",
        )
    parser.set_defaults(func=run)


def run(args) -> int:
    import jgtest
    from jgtest.methods import reline
    from jgtest.methods.reline.config import is_bridged
    from jgtest.methods.reline.console import run_in_console

    try:
        config = reline.RelineConfig(
            game=args.game,
            models=args.models,
            eval_episodes=args.eval_episodes,
            seed=args.seed,
            quick=args.quick,
            train_steps=args.train_steps,
            agents=tuple(args.agents.split(",")),
            game_kwargs=tuple(sorted(game_kwargs(args).items())),
            actors=args.actors,
            ray_address=args.ray_address,
            elites=args.elites,
            evaluation=args.evaluation,
            **{
                f: getattr(args, f)
                for f in ("elite_percentile", "threshold_episodes", "warmup_episodes", "replays")
                if getattr(args, f) is not None
            },
        )
        if not is_bridged(config.game):
            jgtest.make(config.game, **dict(config.game_kwargs))
    except ValueError as error:
        raise fail(error) from None
    run_in_console(config, run_dir(args), quiet=args.quiet, resume=args.resume)
    return 0
