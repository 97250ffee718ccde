"""Spreading a batch axis over every accelerator of the machine with ``jax.sharding``.

jgtest's on-device work is vmapped over a leading axis: the seeds of a training run (and RELINE's
Table 1 models), Wuji's population, a campaign's parallel games. Placing that axis's arrays on a
one-dimensional device mesh (``NamedSharding(mesh, PartitionSpec("batch"))``) is all it takes: the
jitted, vmapped functions are then partitioned by XLA (GSPMD) across the devices, each device
running its slice, and their outputs stay sharded for the next call. Nothing else changes: every lane
of a vmap is independent, so a sharded campaign (games, bug records, coverage, Wuji's population and
scores) equals the single-device one bit for bit, and trained networks agree to float tolerance
(~1e-9: XLA fuses and orders a lane's reductions differently when it runs alone on its device).
``tests/scale/test_sharding.py`` checks both on 4 CPU devices
(``XLA_FLAGS=--xla_force_host_platform_device_count=4``).

Where the axis's size is not a multiple of the device count the arrays stay where they are
(:func:`shard_batch` says so with ``None`` from :func:`batch_sharding`): a run never fails for it.
"""

from __future__ import annotations

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

#: The mesh axis the batch is spread over.
BATCH_AXIS = "batch"


def batch_mesh(devices=None) -> Mesh:
    """A one-dimensional mesh over ``devices`` (default: all of JAX's default backend)."""
    return Mesh(np.asarray(jax.devices() if devices is None else devices), (BATCH_AXIS,))


def batch_sharding(size: int, mesh: Mesh | None = None) -> NamedSharding | None:
    """The sharding of a leading axis of ``size`` over ``mesh``; ``None`` on one device or when
    ``size`` is not a multiple of the device count."""
    mesh = batch_mesh() if mesh is None else mesh
    if mesh.size == 1 or size % mesh.size:
        return None
    return NamedSharding(mesh, PartitionSpec(BATCH_AXIS))


def shard_batch(tree, mesh: Mesh | None = None):
    """``tree`` with every leaf's leading axis spread over ``mesh`` (module docstring); unchanged where
    :func:`batch_sharding` gives ``None``. Leaves must share the leading axis's size."""
    leaves = jax.tree.leaves(tree)
    if not leaves:
        return tree
    shapes = [tuple(getattr(leaf, "shape", np.shape(leaf))) for leaf in leaves]  # typed PRNG keys too
    sizes = {shape[0] if shape else None for shape in shapes}
    if len(sizes) != 1 or None in sizes:
        raise ValueError(f"shard_batch: every leaf needs the same leading axis, got sizes {sorted(map(str, sizes))}")
    sharding = batch_sharding(sizes.pop(), mesh)
    return tree if sharding is None else jax.device_put(tree, sharding)
