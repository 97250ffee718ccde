"""Sharding over devices (jgtest.sharding): on 4 CPU devices
(XLA_FLAGS=--xla_force_host_platform_device_count=4, in a child process: the flag must precede JAX's
start), training seeds, a campaign's games, Wuji's population and plan executions' seeds spread
over the 4 devices give the single-device results: campaigns bit for bit, trained networks to float
tolerance (reductions reorder)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from jgtest.sharding import batch_sharding, shard_batch


def test_shard_batch_leaves_a_single_device_run_alone_and_checks_its_input():
    tree = {"a": np.zeros((4, 2)), "b": np.arange(4)}
    assert shard_batch(tree) is tree  # one device here: nothing moves
    assert batch_sharding(4) is None
    with pytest.raises(ValueError, match="same leading axis"):
        shard_batch({"a": np.zeros((4, 2)), "b": np.arange(3)})


# two processes' worth of compiles (sharded and not) of three runs: ~90 s on 2 cores
@pytest.mark.slow
def test_four_devices_give_the_one_device_results():
    env = {
        **os.environ,
        "XLA_FLAGS": "--xla_force_host_platform_device_count=4",
        "JAX_PLATFORMS": "cpu",
    }
    script = Path(__file__).with_name("sharded_runs.py")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    runs = json.loads(done.stdout.strip().splitlines()[-1])
    sharded, single = runs["sharded"], runs["one_device"]
    assert sharded["devices_used_by_training"] == [4] and single["devices_used_by_training"] == [1]
    # trained networks: to float tolerance (sharded, each device runs its seed's matmuls on its own,
    # and XLA fuses and orders those reductions differently from the 4-seed batch on one device:
    # ~1e-9 apart)
    for a, b in zip(sharded["params"], single["params"], strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-8)
    # campaigns: bit for bit (integer games and bookkeeping; Wuji's scores after its A2C rounds)
    for part in ("random", "wuji", "wuji_population"):
        assert sharded[part] == single[part], part
    # plan executions: each device plays its seeds on its own (shard_map), bit for bit
    assert sharded["plans"].pop("devices") == 4 and single["plans"].pop("devices") == 1
    assert sharded["plans"] == single["plans"]
    assert jax.device_count() == 1  # this process kept its one device
