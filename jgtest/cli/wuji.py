"""``jgtest run wuji``: Wuji's evolutionary multi-objective search with A2C, one strategy or several
compared (:mod:`jgtest.methods.wuji`), on device or on a ViZDoom scenario.
"""

from __future__ import annotations

import dataclasses

from jgtest.cli.shared import (
    add_tensorboard_option,
    fail,
    game_kwargs,
    method_parser,
    nonnegative_float,
    positive_float,
    positive_int,
)

#: The knobs of a run, ``(flag, WujiConfig field, default, where in the authors' code)``: their
#: code (``NeteaseFuxiRL/wuji``; their A2C at commit 6661943) gives every default. A test checks
#: each against :class:`jgtest.methods.wuji.WujiConfig`'s.
HYPERPARAMETERS = (
    ("--evaluation", "evaluation", "greedy", "wuji/rl/pth/dqn/agent.py:33-34"),
    ("--selection-pool", "selection_pool", "authors", "P∪Q: ea/optimizer/__init__.py:231-233"),
    ("--runs-per-eval", "runs_per_eval", 3, "config.ini [sample] eval"),
    ("--crossover", "variation.crossover", "layers", "crossover/blob/pth/single_point.py:41-53"),
    ("--crossover-rate", "variation.crossover_rate", 1.0, "config.ini:48"),
    ("--mutation-rate", "variation.mutation_rate", 0.0, "config.ini:53, mutation.Useless"),
    ("--sigma", "variation.sigma", 0.005, "config.ini:73-74"),
    ("--learning-rate", "a2c_hparams.learning_rate", 2.5e-4, "rl/pth/wrap/__init__.py:204-213"),
    ("--entropy", "a2c_hparams.ent_coef", 1e-4, "config.ini:110-138"),
    ("--value-coef", "a2c_hparams.vf_coef", 1.0, "config.ini:110-138"),
    ("--gamma", "a2c_hparams.gamma", 0.99, "config.ini:110-138"),
    ("--action-floor", "a2c_hparams.min_action_prob", 0.01, "pg/agent/__init__.py:67-70; §V-A4"),
    ("--returns", "a2c.returns", "episode", "ac/__init__.py:36-44"),
    ("--a2c-envs", "a2c.num_envs", 1, "dqn/__init__.py:52-53"),
    ("--a2c-steps", "a2c.num_steps", 128, "pg/wrap/problem.py:55-63"),
    ("--steps-per-child", "a2c.steps_per_child", 10_000, "config.ini:40,60"),
)
_PARSERS = {str: str, int: positive_int, float: nonnegative_float}


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
    knobs = parser.add_argument_group(
        "wuji hyperparameters (defaults: the authors' code, NeteaseFuxiRL/wuji, their A2C at "
        "commit 6661943; --preset ours: ours where the paper is silent)"
    )
    knobs.add_argument(
        "--preset",
        choices=("authors", "ours"),  # jgtest.methods.wuji.config.PRESETS
        default="authors",
        help="the operators, selection pool, evaluation and A2C settings as a whole (default "
        "authors); the options below override single ones",
    )
    for flag, _, default, source in HYPERPARAMETERS:
        knobs.add_argument(
            flag, type=_PARSERS[type(default)], default=None, help=f"default {default} ({source})"
        )
    add_tensorboard_option(parser, "each run's bugs found per generation")
    parser.set_defaults(func=run)


def _with_hyperparameters(config, args):
    """``config`` under ``--preset`` with the single options given."""

    from jgtest.methods.wuji import preset

    config = preset(config, args.preset)
    for flag, field, *_ in HYPERPARAMETERS:
        value = getattr(args, flag[2:].replace("-", "_"))
        if value is None:
            continue
        *parents, name = field.split(".")
        if not parents:
            config = dataclasses.replace(config, **{name: value})
        else:
            inner = dataclasses.replace(getattr(config, parents[0]), **{name: value})
            config = dataclasses.replace(config, **{parents[0]: inner})
    return config


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
        config = _with_hyperparameters(config, args)
        for strategy in strategies:  # each strategy's settings, before any run starts
            dataclasses.replace(config, strategy=strategy)
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
    run_in_console(
        config,
        out,
        strategies,
        args.seeds,
        quiet=args.quiet,
        resume=args.resume,
        tensorboard=args.tensorboard,
    )
    return 0
