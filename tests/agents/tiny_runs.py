"""A tiny PPO training run shared by the tests of training runs (tests/agents/test_runner.py) and of
resuming them (tests/test_checkpoint.py): the same config and seeds, so its functions compile once for
all of them (the session's persistent compilation cache, tests/conftest.py)."""

from jgtest.agents import ppo

#: 2 games × 16 steps × 4 periods on CartPoleBugs-v0.
PPO_TINY = ppo.PPOConfig(num_envs=2, num_steps=16, total_timesteps=2 * 16 * 4, num_evals=4, eval_episodes=2, num_minibatches=2, update_epochs=1)
#: Seeds of the shared run.
SEEDS = 2
