"""CartPole with RELINE's two injected performance bugs (Tufano et al., 2022, §3.1.1).

Gymnasium's ``CartPole-v1``, with bugs that "manifest when x ∈ [−0.50, −0.45] and x ∈ [0.45,
0.50]", "only the first time the agent visits each buggy position" (§3.1.1). Rules:
:class:`CartPoleBugs`.

* chosen: a bug's heavy-weight operation is a frame time raised by ``bug_delay_ms``, because the
  on-device game has no real frame to slow down.
* chosen: episodes of up to 1,000 steps, as in the paper (Gymnasium's default is 500).
* chosen: a runtime zero added to products and divisors (:func:`_rounded`), because it makes
  float64 trajectories bit-for-bit Gymnasium's.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct
from gymnax.environments import environment, spaces

from jgtest.coverage import bucket_id
from jgtest.envs import bitmask, rng
from jgtest.envs.base import TestingEnv, check_shape
from jgtest.signals import DEVICE_DEFAULT
from jgtest.types import Telemetry

#: Feature bounds used to bucket the state for coverage (x, x_dot, theta, theta_dot).
COVERAGE_LOW = (-2.4, -3.0, -0.21, -3.5)
COVERAGE_HIGH = (2.4, 3.0, 0.21, 3.5)


@struct.dataclass
class EnvState(environment.EnvState):
    x: jax.Array
    x_dot: jax.Array
    theta: jax.Array
    theta_dot: jax.Array
    time: int
    bugs_seen: jax.Array  # uint32: bit i set once bug i fired this episode (:mod:`bitmask`)


@struct.dataclass(kw_only=True)
class EnvParams(environment.EnvParams):
    gravity: float = 9.8
    masscart: float = 1.0
    masspole: float = 0.1
    total_mass: float = 0.1 + 1.0  # masspole + masscart, as Gymnasium computes it
    length: float = 0.5
    polemass_length: float = 0.1 * 0.5
    force_mag: float = 10.0
    tau: float = 0.02
    theta_threshold_radians: float = 12 * 2 * 3.141592653589793 / 360
    x_threshold: float = 2.4
    max_steps_in_episode: int = 1000
    bug_intervals: jax.Array = struct.field(
        default_factory=lambda: jnp.array([[-0.50, -0.45], [0.45, 0.50]], jnp.float32)
    )
    base_frame_ms: float = 16.7
    frame_noise_ms: float = 0.5
    bug_delay_ms: float = 40.0


def _rounded(value: jax.Array, zero: jax.Array) -> jax.Array:
    """``value + zero`` for a runtime zero, so float64 results round like NumPy's.

    XLA fuses ``a * b + c`` into a fused multiply-add on CPU and GPU, which rounds once instead of
    twice, and rewrites ``a / broadcast(c)`` as ``a * (1 / c)``; a product or divisor plus a
    runtime zero is neither, at the cost of one add.
    """
    return value + zero


class CartPoleBugs(TestingEnv):
    """CartPole-v1 with RELINE's two performance bugs.

    With ``jax_enable_x64`` on, the state is float64 and trajectories are bit-for-bit
    Gymnasium's for the same start state and actions; in float32 they agree to float32 rounding
    (which the unstable pole amplifies over hundreds of open-loop steps).

    A bug fires the first time per episode the cart's ``x`` enters its interval
    (``bug_intervals``); the step's ``telemetry.frame_time_ms`` is then raised by
    ``bug_delay_ms``. The reward is the game's own (``telemetry.game_reward``); RELINE's +50 a bug
    is :class:`jgtest.rewards.RelineReward`. State fields keep gymnax's CartPole names (``x``,
    ``x_dot``, ``theta``, ``theta_dot``, ``time``), so a test can place the cart with
    ``state.replace``. A traced action is read as "push right" when it equals 1, else "push left".

    Args:
      cell_buckets: buckets per state feature for the coverage cell id (Wuji
        §V-C); the cell grid is ``cell_buckets**4`` cells laid out as
        ``(m*m, m*m)`` for maps (rows: x, x_dot; cols: theta, theta_dot).
    """

    #: Signals (:mod:`jgtest.signals`): injected low-FPS places (RELINE §3.1.3) and their frame
    #: times.
    signals = DEVICE_DEFAULT | {"frame_time"}

    env_id = "CartPoleBugs-v0"
    num_actions = 2
    bug_kinds = ("low_fps", "low_fps")

    def __init__(self, cell_buckets: int = 8):
        super().__init__()
        if cell_buckets < 1:
            raise ValueError(f"cell_buckets must be at least 1, got {cell_buckets}")
        self.cell_buckets = int(cell_buckets)

    @property
    def default_params(self) -> EnvParams:
        return EnvParams()

    @property
    def map_shape(self) -> tuple[int, int]:
        return (self.cell_buckets**2, self.cell_buckets**2)

    def observation_space(self, params: EnvParams) -> spaces.Box:
        high = jnp.array(
            [
                params.x_threshold * 2,
                jnp.finfo(jnp.float32).max,
                params.theta_threshold_radians * 2,
                jnp.finfo(jnp.float32).max,
            ],
            jnp.float32,
        )
        return spaces.Box(-high, high, (4,), jnp.float32)

    def reset_env(self, key, params: EnvParams):
        init = rng.uniform(key, (4,), minval=-0.05, maxval=0.05)
        state = EnvState(
            x=init[0],
            x_dot=init[1],
            theta=init[2],
            theta_dot=init[3],
            time=0,
            bugs_seen=jnp.uint32(0),
        )
        return self.get_obs(state), state

    def step_env(self, key, state: EnvState, action, params: EnvParams):
        prev_terminal = self.is_terminated(state, params)
        zero = state.x * 0.0
        force = jnp.where(action == 1, params.force_mag, -params.force_mag) + zero
        costheta = jnp.cos(state.theta)
        sintheta = jnp.sin(state.theta)
        total_mass = _rounded(params.total_mass, zero)
        pml = params.polemass_length
        temp = (
            force + _rounded(pml * (state.theta_dot * state.theta_dot) * sintheta, zero)
        ) / total_mass
        thetaacc = (
            _rounded(params.gravity * sintheta, zero) - _rounded(costheta * temp, zero)
        ) / _rounded(
            params.length * (4.0 / 3.0 - params.masspole * (costheta * costheta) / total_mass), zero
        )
        xacc = temp - pml * thetaacc * costheta / total_mass
        tau = params.tau
        new = state.replace(
            x=state.x + _rounded(tau * state.x_dot, zero),
            x_dot=state.x_dot + _rounded(tau * xacc, zero),
            theta=state.theta + _rounded(tau * state.theta_dot, zero),
            theta_dot=state.theta_dot + _rounded(tau * thetaacc, zero),
            time=state.time + 1,
        )
        bounds = params.bug_intervals
        in_bug = bitmask.pack([(new.x >= lo) & (new.x <= hi) for lo, hi in bounds])
        fired = in_bug & ~state.bugs_seen
        new = new.replace(bugs_seen=state.bugs_seen | in_bug)

        game_reward = 1.0 - prev_terminal.astype(jnp.float32)
        noise = params.frame_noise_ms * rng.normal(key)
        frame_ms = params.base_frame_ms + noise + params.bug_delay_ms * (fired != 0)
        features = jnp.stack([new.x, new.x_dot, new.theta, new.theta_dot]).astype(jnp.float32)
        telemetry = Telemetry.make(
            position=jnp.stack([new.x, jnp.zeros_like(new.x)]),
            cell=bucket_id(
                features, jnp.array(COVERAGE_LOW), jnp.array(COVERAGE_HIGH), self.cell_buckets
            ),
            bugs_fired=bitmask.unpack(fired, 2),
            game_reward=game_reward,
            frame_time_ms=jnp.maximum(frame_ms, 0.0),
        )
        terminated = self.is_terminated(new, params)
        return (
            self.get_obs(new),
            new,
            jnp.float32(game_reward),
            terminated,
            {"telemetry": telemetry},
        )

    def get_obs(self, state: EnvState, params=None, key=None) -> jax.Array:
        return jnp.stack([state.x, state.x_dot, state.theta, state.theta_dot]).astype(jnp.float32)

    def is_terminated(self, state: EnvState, params: EnvParams) -> jax.Array:
        return (
            (state.x < -params.x_threshold)
            | (state.x > params.x_threshold)
            | (state.theta < -params.theta_threshold_radians)
            | (state.theta > params.theta_threshold_radians)
        )

    def validate_params(self, params: EnvParams) -> None:
        super().validate_params(params)
        intervals = check_shape(self.name, "bug_intervals", params.bug_intervals, (2, 2))
        limit = float(params.x_threshold)
        for i, (lo, hi) in enumerate(intervals):
            if not lo <= hi:
                raise ValueError(f"{self.name}: bug {i} interval [{lo}, {hi}] is empty")
            if lo < -limit or hi > limit:
                raise ValueError(
                    f"{self.name}: bug {i} interval [{lo}, {hi}] is outside the track "
                    f"[-{limit}, {limit}]"
                )
