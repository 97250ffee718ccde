"""``jgtest train``: an agent trained on a game, on device, with checkpoints
(:mod:`jgtest.agents.runner`)."""

from __future__ import annotations

from jgtest.cli.shared import (
    add_tensorboard_option,
    fail,
    out_path,
    parse_key_values,
    positive_int,
    seed_number,
)

#: The algorithms of :data:`jgtest.agents.ALGORITHMS` (named here so that ``--help`` needs no JAX; a
#: test keeps them equal).
ALGORITHMS = ("a2c", "cem", "dqn", "ppo", "random")


def add_parser(sub) -> None:
    train = sub.add_parser(
        "train", help="train an agent on a game, on device, with checkpoints (resumes in --out)"
    )
    train.add_argument("algo", choices=ALGORITHMS)
    train.add_argument("--game", default="CartPoleBugs-v0")
    train.add_argument(
        "--steps",
        type=positive_int,
        default=None,
        help="env-step budget per seed (default: the algorithm's)",
    )
    train.add_argument(
        "--seeds", type=positive_int, default=1, help="seeds trained together under vmap"
    )
    train.add_argument("--seed", type=seed_number, default=0, help="0 <= SEED < 2**32 (default 0)")
    train.add_argument(
        "--out",
        type=out_path,
        default="runs/train",
        help="run directory (summary, curves, checkpoints)",
    )
    train.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="config field (JSON value), repeatable",
    )
    train.add_argument(
        "--game-arg",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="game option (JSON value), repeatable",
    )
    train.add_argument(
        "--hp",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="hyperparameter (the traced *Hyperparams: learning_rate, gamma, ...), repeatable",
    )
    train.add_argument("--quiet", action="store_true")
    add_tensorboard_option(train, "each period's metrics (returns, losses; the mean over seeds)")
    train.set_defaults(func=train_command)


def train_command(args) -> int:
    from rich.table import Table

    from jgtest.agents import make_config, make_hparams
    from jgtest.agents.runner import run_training
    from jgtest.envs.registration import make
    from jgtest.report import console
    from jgtest.run_dir import lock_run_dir

    overrides = parse_key_values(args.set, "--set")
    game_kwargs = parse_key_values(args.game_arg)
    try:
        _, env_params = make(args.game, **game_kwargs)
        if args.algo == "cem" and args.steps is not None:
            # CEM's budget is iterations of `episodes_per_iter` whole episodes; count an
            # episode as half the cap, and keep a whole number of iterations per evaluation.
            per_iter = 16 * max(1, int(env_params.max_steps_in_episode) // 2)
            evals = overrides.get("num_evals", 10)
            overrides.setdefault(
                "num_iterations", max(evals, (args.steps // per_iter) // evals * evals)
            )
        elif args.steps is not None and args.algo != "random":
            overrides["total_timesteps"] = args.steps
        if game_kwargs or args.game != "CartPoleBugs-v0":
            overrides["game_kwargs"] = tuple(sorted(game_kwargs.items()))
        config = make_config(args.algo, game=args.game, **overrides)
        hparams = make_hparams(args.algo, **parse_key_values(args.hp, "--hp"))
    except (ValueError, TypeError) as error:
        raise fail(error) from None
    curves = None
    if args.tensorboard:
        from jgtest.report.tensorboard import CurveWriter

        curves = CurveWriter(args.tensorboard)
    # one writer: a second training run into --out is refused while this one runs
    out = lock_run_dir(args.out)
    with console.progress(args.quiet, ("eval return", "ret")) as progress:
        task = progress.add_task(
            f"{args.algo} × {args.game} × {args.seeds} seeds", total=config.num_evals, ret="-"
        )

        def on_period(done, total, metrics):
            import numpy as np

            progress.update(
                task, completed=done, ret=f"{float(np.mean(metrics['eval_return_mean'])):.1f}"
            )
            if curves is not None:
                curves.scalars(metrics, step=done)

        try:
            summary = run_training(
                args.algo,
                config,
                out,
                num_seeds=args.seeds,
                seed=args.seed,
                hparams=hparams,
                on_period=on_period,
            )
        except ValueError as error:
            raise fail(error) from None
        finally:
            if curves is not None:
                curves.close()
    table = Table(title=f"{args.algo} on {args.game}")
    for column in ("seeds", "final return", "env steps", "steps/s", "wall s"):
        table.add_column(column, justify="right")
    table.add_row(
        str(args.seeds),
        f"{summary['final_return_mean']:.1f} ± {summary['final_return_std']:.1f}",
        f"{summary['env_steps']:,}",
        f"{summary['steps_per_s']:,.0f}",
        f"{summary['wall_s']:.1f}",
    )
    console.show(table)
    print(f"wrote {out / 'summary.json'}, {out / 'curves.json'} and {out / 'curves.png'}")
    return 0
