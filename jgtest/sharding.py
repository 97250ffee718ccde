"""Spreading a batch axis over every accelerator of the machine with ``jax.sharding``.

jgtest's on-device work is vmapped over a leading axis (a run's seeds, Wuji's population, a
campaign's games); :func:`shard_batch` places it on a one-dimensional mesh and XLA partitions the
jitted functions across the devices.

* chosen: a size that is not a multiple of the device count stays unsharded, because a run must
  never fail for it.
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
    """``tree`` with every leaf's leading axis spread over ``mesh`` (GSPMD); unchanged where
    :func:`batch_sharding` gives ``None``. Leaves must share the leading axis's size.

    Games, bug records, coverage and Wuji's scores come out bit for bit as on one device; trained
    networks agree to float tolerance (XLA orders a lane's reductions differently when it runs
    alone on its device)."""
    leaves = jax.tree.leaves(tree)
    if not leaves:
        return tree
    # typed PRNG keys too
    shapes = [tuple(getattr(leaf, "shape", np.shape(leaf))) for leaf in leaves]
    sizes = {shape[0] if shape else None for shape in shapes}
    if len(sizes) != 1 or None in sizes:
        raise ValueError(
            "shard_batch: every leaf needs the same leading axis, got sizes "
            f"{sorted(map(str, sizes))}"
        )
    sharding = batch_sharding(sizes.pop(), mesh)
    return tree if sharding is None else jax.device_put(tree, sharding)
