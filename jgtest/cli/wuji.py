"""``jgtest run wuji``: Wuji's evolutionary multi-objective search with A2C, one strategy or several
compared (:mod:`jgtest.methods.wuji`), on device or on a ViZDoom scenario.
"""

from __future__ import annotations

from jgtest.cli.shared import fail, game_kwargs, method_parser, positive_float, positive_int


def add_parser(methods) -> None:
    parser = method_parser(
        methods,
        "wuji",
        "BlockMaze-v0",
        "Wuji: evolutionary multi-objective search with A2C, or its strategies compared",
    )
    group = parser.add_argument_group("wuji options")
    group.add_argument(
        "--strategy",
        default="wuji",
        help=(
            "one of the paper's six, random, ea_s, ea_m, drl (one learner), ea_s+drl, wuji, or "
            "drl_30 (30 learners); "
            "several, comma-separated, run side by side (default wuji)"
        ),
    )
    group.add_argument(
        "--compare",
        action="store_true",
        help="all seven strategies (the paper's six and drl_30), same budget",
    )
    group.add_argument(
        "--generations", type=positive_int, default=None, help="generations per run (default 10)"
    )
    group.add_argument(
        "--budget-s", type=positive_float, default=None, help="wall-clock budget per run in seconds"
    )
    group.add_argument(
        "--budget-steps",
        type=positive_int,
        default=None,
        help="env-step budget per run (game steps played; machine-independent)",
    )
    group.add_argument(
        "--seeds",
        type=positive_int,
        default=1,
        help="runs (bug placements) per strategy, seeds --seed …",
    )
    group.add_argument(
        "--population",
        type=positive_int,
        default=30,
        help="population and offspring size (default: the paper's 30)",
    )
    parser.set_defaults(func=run)


def run(args) -> int:
    import jgtest
    from jgtest.host_loop import is_host_game
    from jgtest.methods import wuji
    from jgtest.methods.wuji.campaign import prepare_campaign_dir
    from jgtest.methods.wuji.console import run_in_console
    from jgtest.seeds import check_seed

    strategies = (
        wuji.STRATEGIES if args.compare else tuple(s.strip() for s in args.strategy.split(","))
    )
    try:
        budgeted = args.budget_s is not None or args.budget_steps is not None
        generations = (
            args.generations if args.generations is not None else (None if budgeted else 10)
        )
        config = wuji.WujiConfig(
            game=args.game,
            game_kwargs=tuple(game_kwargs(args).items()),
            strategy=strategies[0],
            population=args.population,
            generations=generations,
            budget_s=args.budget_s,
            budget_steps=args.budget_steps,
            seed=args.seed,
        )
        for strategy in strategies:
            wuji.WujiConfig(strategy=strategy)
        if not is_host_game(config.game):
            wuji.check_game_kwargs(
                *jgtest.make(config.game, **dict(config.game_kwargs)), config.game_kwargs
            )
        check_seed(
            args.seed + args.seeds - 1,
            f"the last seed (--seed {args.seed} + --seeds {args.seeds} - 1)",
        )
        out = prepare_campaign_dir(
            args.out, strategies, overwrite=args.overwrite, resume=args.resume
        )
    except ValueError as error:
        raise fail(error) from None
    run_in_console(config, out, strategies, args.seeds, quiet=args.quiet, resume=args.resume)
    return 0
