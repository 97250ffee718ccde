"""When a kart is stuck (RELINE §4.1.3, footnote 2: "we stopped an episode if the agent got stuck
against some obstacle").

* chosen: too little lap progress over :data:`STUCK_WINDOW` steps, as the paper gives no rule.
"""

from __future__ import annotations

import numpy as np

#: Stuck (footnote 2): path_done advanced less than this over the last STUCK_WINDOW steps.
STUCK_PROGRESS, STUCK_WINDOW = 1.0, 10


def until_stuck(delta_path_done: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """``valid`` cut where the kart got stuck (footnote 2 of §4.1.3: "we stopped an episode
    if the agent got stuck against some obstacle"; the paper gives no rule, ours: less than
    ``STUCK_PROGRESS`` path done over ``STUCK_WINDOW`` consecutive steps). The episode ends
    before the first such window, so none of its steps enter the render times."""
    steps = delta_path_done.shape[-1]
    done = np.cumsum(np.where(valid, delta_path_done, 0.0), axis=-1)
    before = np.concatenate(
        [np.zeros(done.shape[:-1] + (1,)), done[..., :-1]], axis=-1
    )  # path done before step i
    window = (
        done[..., STUCK_WINDOW - 1 :] - before[..., : steps - STUCK_WINDOW + 1]
    )  # steps i .. i + W - 1
    stuck = np.concatenate(
        [window < STUCK_PROGRESS, np.zeros(done.shape[:-1] + (STUCK_WINDOW - 1,), bool)], axis=-1
    )
    return valid & (np.cumsum(stuck, axis=-1) == 0)
