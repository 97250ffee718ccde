"""Replaying a bug record: re-run its action trace with the campaign's keys."""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np

from jgtest.envs.registration import make
from jgtest.report.records import BugRecord
from jgtest.rollout import replay_trace


@dataclasses.dataclass(frozen=True)
class ReplayResult:
    """Outcome of a replay: whether the recorded bug fired at the recorded step."""

    reproduced: bool
    fired_at_steps: tuple[int, ...]  # every step of the trace at which the bug fired
    record: BugRecord

    def describe(self) -> str:
        r = self.record
        where = f"{r.game} bug {r.bug_id} ({r.kind}), episode {r.episode} of slot {r.env_index}, seed {r.seed}"
        if self.reproduced:
            return f"reproduced: {where} fired at step {r.step} after {len(r.actions)} actions"
        seen = f"it fired at steps {list(self.fired_at_steps)}" if self.fired_at_steps else "it never fired"
        return f"NOT reproduced: {where} expected at step {r.step}; {seen}"


def replay(record: BugRecord) -> ReplayResult:
    """Replays ``record`` on the on-device game and checks that its bug fires at its step."""
    if record.bug_id < 0:
        raise ValueError("only records of injected bugs (bug_id >= 0) can be replayed on device")
    env, params = make(record.game, **record.game_kwargs)
    if record.bug_id >= env.num_bugs:
        raise ValueError(f"record names bug {record.bug_id} but {record.game} has {env.num_bugs} bugs")
    env.check_action(np.asarray(record.actions, np.int32), params)
    telemetry, _, _ = replay_trace(
        env, params, record.seed, record.env_index, record.episode, jnp.asarray(record.actions, jnp.int32)
    )
    fired = np.asarray(telemetry.bugs_fired[:, record.bug_id])
    steps = tuple(int(s) for s in np.flatnonzero(fired))
    return ReplayResult(reproduced=bool(fired[record.step]), fired_at_steps=steps, record=record)
