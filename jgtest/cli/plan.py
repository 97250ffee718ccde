"""``jgtest plan``: explicit plans as functional tests (:mod:`jgtest.plans`).

``plan run PLAN.json`` runs a plan under N seeds (a ViZDoom level on the real engine,
:mod:`jgtest.plans.doom`) and exits 0 only when every run passed; ``plan suite DIR`` runs a
folder's plans; ``plan record``, ``plan from-text`` and ``plan train-navigator`` make plans from
play, from instructions, and train the learned navigator.
"""

from __future__ import annotations

import json
from pathlib import Path

from jgtest.cli.shared import add_junit_option, fail
from jgtest.errors import BadFile, BadInput
from jgtest.files import write_json_atomically, write_text


def add_parser(sub) -> None:
    plan = sub.add_parser(
        "plan", help="explicit plans: run a plan, or a folder of them, as functional tests"
    )
    commands = plan.add_subparsers(dest="plan_command", required=True)
    for name, what, help_text in (
        ("run", "plan", "run one plan (JSON) and validate every action"),
        ("suite", "folder", "run every plan in a folder"),
    ):
        cmd = commands.add_parser(name, help=help_text)
        cmd.add_argument(
            what, help="a plan JSON file" if what == "plan" else "a folder of plan JSON files"
        )
        cmd.add_argument(
            "--game",
            default=None,
            help=(
                "the game the plans must be for (default: the plans' own, e.g. Dungeon-v0 or "
                "vizdoom:freedoom1/E1M1)"
            ),
        )
        cmd.add_argument(
            "--variant",
            default="normal",
            help=(
                "the game's variant (Dungeon-v0: normal, switch_out_of_reach, door_stuck, "
                "shrine_out_of_reach, enemies_immortal, "
                "random_enemies, random_layout; bugs combine with +, e.g. "
                "shrine_out_of_reach+enemies_immortal)"
            ),
        )
        cmd.add_argument(
            "--navigator",
            choices=("scripted", "learned"),
            default="scripted",
            help="how the agent gets to its targets",
        )
        cmd.add_argument(
            "--navigator-from",
            default="runs/navigator",
            metavar="DIR",
            help="learned: the trained navigator (jgtest plan train-navigator)",
        )
        cmd.add_argument(
            "--seeds",
            type=int,
            default=None,
            help=(
                "runs per plan, seeds 0..N-1 (default: the Dungeon's 4, vectorized; a Doom "
                "level's 1)"
            ),
        )
        cmd.add_argument(
            "--max-steps",
            type=int,
            default=None,
            help="a run's step budget (default: the Dungeon's 200, a Doom level's 2,000)",
        )
        cmd.add_argument(
            "--out", default=None, help="where to write report.json (default: no file)"
        )
        add_junit_option(cmd, "a test case per validation, a failure per distinct failure")
        cmd.set_defaults(func=_run_plans)
    from jgtest.plans.text import READERS

    text = commands.add_parser(
        "from-text", help="a plan from QA-style instructions (one or more sentences per line)"
    )
    text.add_argument("steps", help="a text file of instructions")
    text.add_argument(
        "--game",
        default="Dungeon-v0",
        help="Dungeon-v0 or a ViZDoom level (vizdoom:freedoom1/E1M1)",
    )
    text.add_argument("-o", "--out", required=True, metavar="PLAN.json")
    text.add_argument(
        "--reader",
        choices=READERS,
        default=READERS[0],
        help="by meaning with the lexicon's words and spelling (default), by meaning alone, or by "
        "the lexicon alone (Dungeon-v0 only)",
    )
    text.add_argument(
        "--accept-best",
        action="store_true",
        help=(
            "take a line's best guess even below the confidence threshold (the plan lists each one)"
        ),
    )
    text.set_defaults(func=_from_text)
    nav = commands.add_parser(
        "train-navigator",
        help="train the learned navigator (PPO on DungeonNav-v0) and measure it on held-out plans",
    )
    nav.add_argument(
        "--steps", type=int, default=5_734_400, help="environment steps (28 minutes on 2 CPU cores)"
    )
    nav.add_argument("--seed", type=int, default=0)
    nav.add_argument("--out", default="runs/navigator")
    nav.set_defaults(func=_train_navigator)
    rec = commands.add_parser(
        "record", help="record a play session as a plan (positions every few steps, every action)"
    )
    rec.add_argument("--game", default="Dungeon-v0")
    rec.add_argument("--variant", default="normal")
    source = rec.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--actions",
        metavar="FILE",
        help="a recorded action file: one action name (or index) per line",
    )
    source.add_argument(
        "--keyboard",
        action="store_true",
        help="play from the keyboard: WASD move, E interact, F attack, space jump, . wait, Q stop",
    )
    rec.add_argument("--every", type=int, default=5, help="keep the player's cell every N steps")
    rec.add_argument("--seed", type=int, default=0)
    rec.add_argument("-o", "--out", required=True, metavar="PLAN.json")
    rec.set_defaults(func=_record)


def _run_plans(args) -> int:
    from jgtest.plans.suite import navigator_for, run_suite

    if args.plan_command == "run":
        paths = [Path(args.plan)]
    else:
        folder = Path(args.folder)
        if not folder.is_dir():
            raise BadFile(f"{folder}: {'not a folder' if folder.exists() else 'no such folder'}")
        paths = sorted(folder.glob("*.json"))
        if not paths:
            raise BadFile(f"{folder}: no *.json plans")
    try:
        navigator = navigator_for(args.navigator, args.navigator_from)
        passed = run_suite(
            paths,
            args.game,
            args.variant,
            args.seeds,
            args.max_steps,
            navigator,
            args.out,
            show_each=args.plan_command == "run",
            junit=args.junit,
            navigator_name=args.navigator,
        )
    except ValueError as error:  # an unknown game or variant
        raise fail(error) from None
    return 0 if passed else 1


def _record(args) -> int:
    import jgtest
    from jgtest.files import read_text
    from jgtest.plans.record import keyboard_actions, parse_actions, record_plan, render

    try:
        env, params = jgtest.make(args.game, variant=args.variant)
    except ValueError as error:
        raise fail(error) from None
    if args.keyboard:
        _, state = env.reset(__import__("jax").random.key(args.seed), params)
        print(
            render(env, state) + "\nWASD move, E interact, F attack, space jump, . wait, Q stop",
            flush=True,
        )
        actions = keyboard_actions(env)
        on_step = lambda state: print("\n" + render(env, state), flush=True)
    else:
        try:
            actions = parse_actions(read_text(args.actions).splitlines(), env.action_names)
        except BadInput as error:
            raise BadFile(f"{args.actions}: {error}") from None
        on_step = None
    plan = record_plan(env, params, actions, seed=args.seed, every=args.every, on_step=on_step)
    write_text(args.out, plan.to_json())
    print(
        f"wrote {args.out}: {len(plan.nodes)} nodes "
        f"({sum(n.action is not None for n in plan.nodes)} actions)"
    )
    return 0


def _from_text(args) -> int:
    import jgtest
    from jgtest.files import read_text
    from jgtest.plans.model import PlanError, plan_game
    from jgtest.plans.text import TextToPlan

    text = read_text(args.steps)
    vocab = plan_game(args.game)  # refuses a game plans do not run on, before the pipeline loads
    if args.reader == "lexicon" and not hasattr(vocab, "ACTION_WORDS"):
        raise PlanError(
            f"--game {args.game}: the lexicon reader has words for Dungeon-v0 only; read it by "
            "meaning (--reader combined)"
        )
    env = jgtest.make(args.game)[0] if args.game == "Dungeon-v0" else args.game
    readings = TextToPlan(reader=args.reader).read(text, vocab)
    for reading in readings:
        print(
            f"{reading.where}: {reading.best}"
            + (f"; runner-up {reading.runner_up}" if reading.runner_up else "")
            + ("" if reading.clear else "  [unsure]")
        )
    try:
        plan = TextToPlan.plan_from_readings(
            readings, env, name=Path(args.steps).stem, accept_best=args.accept_best
        )
    except PlanError as error:
        raise PlanError(f"{args.steps}: {error}") from None
    write_text(args.out, plan.to_json())
    guessed = (
        f", {len(plan.accepted_guesses)} best guesses taken (listed in the plan)"
        if plan.accepted_guesses
        else ""
    )
    print(f"wrote {args.out}: {len(plan.nodes)} nodes, {len(plan.rules)} rules{guessed}")
    return 0


def _train_navigator(args) -> int:
    from jgtest.files import make_folder
    from jgtest.plans.navigation import (
        NavigatorConfig,
        learned_navigator,
        plan_completion,
        train_navigator,
    )

    if args.steps < 40_960:
        raise BadInput(
            "--steps must be at least 40,960 (ten updates of 64 games x 64 steps), got "
            f"{args.steps}"
        )
    make_folder(args.out)  # a file there is refused now, not after the training
    print(f"training the navigator: PPO on DungeonNav-v0, {args.steps:,} steps", flush=True)
    network, params, metrics = train_navigator(
        NavigatorConfig(total_timesteps=args.steps, seed=args.seed), args.out
    )
    completion = plan_completion(learned_navigator(network, params))
    out = Path(args.out) / "navigator.json"
    saved = json.loads(out.read_text())
    write_json_atomically(out, {**saved, "held_out_completion": completion})
    print(
        f"held-out plans on random levels ({completion['runs']} runs): learned "
        f"{completion['learned']:.1%}, scripted {completion['scripted']:.1%}; wrote "
        f"{args.out}"
    )
    return 0
