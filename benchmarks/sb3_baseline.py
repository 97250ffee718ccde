"""Baseline side of the training-throughput benchmark: Stable-Baselines3 PPO (PyTorch, CPU)
on Gymnasium's CartPole-v1 with the rl-baselines3-zoo's tuned hyperparameters.

    from benchmarks.sb3_baseline import sb3_ppo_cartpole
    result = sb3_ppo_cartpole(100_000)

or ``python benchmarks/sb3_baseline.py [TOTAL_STEPS]``, which prints the result as JSON.

Hyperparameters are rl-baselines3-zoo ``hyperparams/ppo.yml`` ``CartPole-v1`` (marked
"Tuned" there): 8 envs, n_steps 32, batch_size 256, gae_lambda 0.8, gamma 0.98,
n_epochs 20, ent_coef 0.0, learning_rate lin_0.001, clip_range lin_0.2, MlpPolicy;
everything else is SB3's default. The training envs are SB3's ``DummyVecEnv`` (through
``make_vec_env``, which adds ``Monitor`` the way the zoo does).

Timing: ``wall_s`` is the wall-clock time of ``model.learn`` less the time spent in the
evaluation callback (model construction is excluded too), so it counts rollouts and
gradient updates only. ``time_to_target_s`` is on the same clock: training time elapsed
when the first evaluation whose mean return reached ``target`` began.

Requires ``torch`` (CPU build) and ``stable-baselines3``, neither of which jgtest depends on.
"""

from __future__ import annotations

import json
import sys
import time


def _linear(initial: float):
    """rl-zoo's ``lin_X``: ``progress_remaining * X``, going from X to 0 over training."""

    def schedule(progress_remaining: float) -> float:
        return progress_remaining * initial

    return schedule


#: rl-baselines3-zoo's tuned CartPole-v1 PPO (hyperparams/ppo.yml).
ZOO = dict(
    n_envs=8,
    n_steps=32,
    batch_size=256,
    gae_lambda=0.8,
    gamma=0.98,
    n_epochs=20,
    ent_coef=0.0,
    lr=0.001,
    clip=0.2,
)
#: jgtest's PPO defaults (PureJaxRL's CartPole settings), for a like-for-like steps/s comparison:
#: 4 envs x 128 steps, 4 minibatches of 128, 4 epochs, lr 2.5e-4 and clip 0.2 annealed linearly.
MATCHED = dict(
    n_envs=4,
    n_steps=128,
    batch_size=128,
    gae_lambda=0.95,
    gamma=0.99,
    n_epochs=4,
    ent_coef=0.01,
    lr=2.5e-4,
    clip=0.2,
)


def sb3_ppo_cartpole(
    total_steps: int,
    seed: int = 0,
    hyperparams: dict | None = None,
    eval_every: int = 10_000,
    eval_episodes: int = 10,
    target: float = 475.0,
    threads: int | None = None,
) -> dict:
    """Train SB3 PPO on CartPole-v1 for ``total_steps`` env steps, timing training only.

    Every ``eval_every`` env steps (checked after each vectorised step, so at the first
    multiple of 8 at or past the mark) the deterministic policy is run for
    ``eval_episodes`` episodes on a separate env, with the training clock paused. If the
    last evaluation did not fall on the final step count, one more is run after training.

    PPO collects whole rollouts of ``n_steps * n_envs = 256`` steps, so ``env_steps`` is
    ``total_steps`` rounded up to a multiple of 256 (100_000 -> 100_096).
    """
    import stable_baselines3
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.vec_env import DummyVecEnv

    if total_steps <= 0 or eval_every <= 0 or eval_episodes <= 0:
        raise ValueError("total_steps, eval_every and eval_episodes must be positive")

    previous_threads = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        hp = dict(ZOO if hyperparams is None else hyperparams)
        env = make_vec_env("CartPole-v1", n_envs=hp["n_envs"], seed=seed, vec_env_cls=DummyVecEnv)
        eval_env = make_vec_env(
            "CartPole-v1", n_envs=1, seed=seed + 10_000, vec_env_cls=DummyVecEnv
        )
        model = PPO(
            "MlpPolicy",
            env,
            n_steps=hp["n_steps"],
            batch_size=hp["batch_size"],
            gae_lambda=hp["gae_lambda"],
            gamma=hp["gamma"],
            n_epochs=hp["n_epochs"],
            ent_coef=hp["ent_coef"],
            learning_rate=_linear(hp["lr"]),
            clip_range=_linear(hp["clip"]),
            device="cpu",
            seed=seed,
            verbose=0,
        )

        curve: list[tuple[int, float]] = []
        clock = {"start": 0.0, "paused": 0.0}  # paused: seconds spent evaluating so far
        reached: dict = {"time": None, "steps": None}

        def train_time(now: float) -> float:
            return now - clock["start"] - clock["paused"]

        def evaluate(steps: int) -> None:
            began = time.perf_counter()
            mean_return, _ = evaluate_policy(
                model, eval_env, n_eval_episodes=eval_episodes, deterministic=True
            )
            curve.append((int(steps), float(mean_return)))
            if reached["time"] is None and mean_return >= target:
                reached["time"] = train_time(began)
                reached["steps"] = int(steps)
            clock["paused"] += time.perf_counter() - began

        class EvalCallback(BaseCallback):
            def __init__(self):
                super().__init__()
                self.next_eval = eval_every

            def _on_step(self) -> bool:
                if self.num_timesteps >= self.next_eval:
                    evaluate(self.num_timesteps)
                    while self.next_eval <= self.num_timesteps:
                        self.next_eval += eval_every
                return True

        clock["start"] = time.perf_counter()
        model.learn(total_timesteps=total_steps, callback=EvalCallback())
        end = time.perf_counter()
        wall_s = train_time(end)
        env_steps = int(model.num_timesteps)
        if not curve or curve[-1][0] != env_steps:
            evaluate(env_steps)  # after the clock stopped: not in wall_s
        env.close()
        eval_env.close()

        return {
            "env_steps": env_steps,
            "wall_s": wall_s,
            "steps_per_s": env_steps / wall_s,
            "time_to_target_s": reached["time"],
            "steps_to_target": reached["steps"],
            "final_eval_return": curve[-1][1],
            "eval_curve": curve,
            "hyperparams": hp,
            "torch_threads": torch.get_num_threads(),
            "sb3_version": stable_baselines3.__version__,
            "torch_version": torch.__version__,
        }
    finally:
        torch.set_num_threads(previous_threads)


if __name__ == "__main__":
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    print(json.dumps(sb3_ppo_cartpole(steps), indent=2))
