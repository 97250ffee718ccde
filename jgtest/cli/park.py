"""``jgtest run {inspector, ppgta, compare-explorers}`` (and ``random`` on the park): PPGTA's
comparison on ParkWorld-v0, or its trained agents driving an Unreal game (``--game
unreal:HOST:PORT``).
"""

from __future__ import annotations

from jgtest.cli.shared import fail, game_kwargs, method_parser, positive_int
from jgtest.seeds import check_seed

#: Games the park's agents play: the device twin, and Unreal games through UnrealCV.
PARK_GAME = "ParkWorld-v0"


def is_park_game(game: str) -> bool:
    """The device park, an Unreal game (``unreal:…``) or a real level (``vizdoom:WAD/MAP``)."""
    return game == PARK_GAME or game.startswith("unreal:") or is_level(game)


def is_level(game: str) -> bool:
    """A level of a WAD (``vizdoom:freedoom2/MAP01``): Inspector and random explore it with object
    tests (:mod:`jgtest.methods.park.level_campaign`); ViZDoom's scenarios are the random
    campaign's."""
    return game.startswith("vizdoom:") and "/" in game


#: PPGTA's own options: (flag, ``add_argument``'s keywords), listed only where PPGTA runs.
PPGTA_OPTIONS = (
    (
        "--models-seed",
        {
            "type": int,
            "default": None,
            "metavar": "SEED",
            "help": "the seed PPGTA's models are (or were) trained with (default: --seed; one set "
            "of models for several campaign seeds, as the paper trains once)",
        },
    ),
    (
        "--dagger-rounds",
        {
            "type": int,
            "default": 0,
            "metavar": "N",
            "help": "beyond the paper: N rounds of DAgger on PPGTA's path imitation, the path "
            "follower labelling the policy's own walks (default 0)",
        },
    ),
    (
        "--fe",
        {
            "default": "scratch",
            "metavar": "NAME",
            "help": "PPGTA's frame encoder: scratch (a CNN learned from scratch) or "
            "efficientnet-lite0 (ImageNet's, from the pretrained extra; §IV-A fine-tunes a "
            "pretrained AlexNet) (default %(default)s)",
        },
    ),
    (
        "--fe-tuning",
        {
            "default": "frozen",
            "metavar": "HOW",
            "help": "the pretrained encoder's trunk: frozen, or fine-tuned by inverse dynamics "
            "(default %(default)s)",
        },
    ),
    (
        "--detector",
        {
            "choices": ("ground-truth", "learned"),
            "default": "ground-truth",
            "help": "objects from the renderer or PPGTA's trained detector",
        },
    ),
)


def add_park_options(parser, title: str, explorer: bool = True, ppgta: bool = True) -> None:
    """The park agents' options: ``--episodes``, ``--quick`` and ``--ppgta-models``; with ``ppgta``,
    :data:`PPGTA_OPTIONS` (without, they keep their defaults, unlisted); with ``explorer``,
    ``--explorer-from`` (:func:`park_options_given` tells which a command line set)."""
    group = parser.add_argument_group(title)
    actions = [
        group.add_argument(
            "--episodes",
            type=positive_int,
            default=None,
            help="episodes of 2,000 steps (default: the paper's 45; 10 with --quick)",
        ),
        group.add_argument(
            "--quick", action="store_true", help="10 episodes (ppgta: small models)"
        ),
        group.add_argument(
            "--ppgta-models",
            default=None,
            metavar="DIR",
            help="PPGTA's trained models to load, or where to train them (default OUT/models); "
            "over unreal:…, every agent's object detector and texture oracle",
        ),
    ]
    if ppgta:
        actions += [group.add_argument(flag, **kwargs) for flag, kwargs in PPGTA_OPTIONS]
    else:
        parser.set_defaults(
            **{flag[2:].replace("-", "_"): kwargs["default"] for flag, kwargs in PPGTA_OPTIONS}
        )
    if explorer:
        actions.append(
            group.add_argument(
                "--explorer-from",
                default=None,
                metavar="RUN",
                help=(
                    "over unreal:…: the run directory of a ParkWorld-v0 campaign whose trained "
                    "explorer drives the game "
                    "(required for inspector; ppgta's default is the path policy its explorer "
                    "starts from)"
                ),
            )
        )
    parser.set_defaults(
        park_options={action.option_strings[0]: (action.dest, action.default) for action in actions}
    )


def park_options_given(args, ignore: tuple[str, ...] = ()) -> list[str]:
    """The options of :func:`add_park_options` given on the command line (away from their defaults),
    but ``ignore``'s."""
    return [
        flag
        for flag, (dest, default) in args.park_options.items()
        if flag not in ignore and getattr(args, dest) != default
    ]


def add_parsers(methods) -> None:
    for method, help_text, options in (
        (
            "inspector",
            "Inspector (PPO on RND curiosity) with object tests, on ParkWorld-v0, unreal:…, "
            "a level (vizdoom:WAD/MAP) or gym:…",
            {"ppgta": False},
        ),
        (
            "ppgta",
            "PPGTA: its models trained (or loaded), then its preference-conditioned explorer "
            "with object tests",
            {},
        ),
        (
            "compare-explorers",
            "PPGTA, Inspector and random over the same episodes and starts on ParkWorld-v0",
            {"explorer": False},
        ),
    ):
        parser = method_parser(methods, method, PARK_GAME, help_text)
        add_park_options(parser, f"{method} options", **options)
        parser.set_defaults(func=run)


def run(args) -> int:
    """Plays ``args.method`` on the park, or over the Unreal game ``--game`` names."""
    from jgtest.methods.park.console import (
        episodes_for,
        run_in_console,
        run_level_in_console,
        run_unreal_in_console,
    )

    options = game_kwargs(args)
    episodes = episodes_for(args.episodes, args.quick)
    detector = args.detector
    try:
        if is_level(args.game) or (args.method == "inspector" and args.game.startswith("gym:")):
            if args.method not in ("inspector", "random"):
                raise ValueError(
                    f"on a level, {args.method} is not wired: inspector and random explore "
                    "it (PPGTA needs models trained on ParkWorld-v0's demonstrations and "
                    "labelled objects)"
                )
            run_level_in_console(
                args.method,
                args.game,
                args.out,
                options,
                episodes,
                args.seed,
                args.quick,
                args.quiet,
                args.overwrite,
            )
            return 0
        models_options = [
            option
            for option in park_options_given(args)
            if option in ("--models-seed", "--dagger-rounds", "--fe", "--fe-tuning")
        ]
        if models_options and (
            args.game != PARK_GAME or args.method not in ("ppgta", "compare-explorers")
        ):
            raise ValueError(
                f"{models_options[0]} sets the models ppgta and compare-explorers train on "
                f"{PARK_GAME}; {args.method} on {args.game} does not train them"
            )
        if args.models_seed is not None:
            check_seed(args.models_seed, "--models-seed")
        if args.game.startswith("unreal:"):
            run_unreal_in_console(
                args.method,
                args.game,
                args.out,
                options,
                args.ppgta_models,
                getattr(args, "explorer_from", None),
                episodes,
                args.seed,
                detector,
                args.quick,
                resume=args.resume,
                overwrite=args.overwrite,
            )
            return 0
        if args.game != PARK_GAME:
            raise ValueError(
                f"{args.method} runs on {PARK_GAME} or unreal:HOST:PORT, got --game {args.game}"
            )
        run_in_console(
            args.method,
            args.out,
            options,
            episodes,
            args.seed,
            detector,
            args.ppgta_models,
            args.quick,
            args.quiet,
            args.resume,
            args.overwrite,
            models_seed=args.models_seed,
            dagger_rounds=args.dagger_rounds,
            fe=args.fe,
            fe_tuning=args.fe_tuning,
        )
    except ValueError as error:
        raise fail(error) from None
    return 0
