"""The park of ``ParkWorld-v0``, generated once on the host from a map seed (PPGTA §V-A).

:func:`generate` builds "a big city park" with pathways, lakes and bridges, and corners
"unreachable due to invisible walls or pathway blockages" (§VI-A).

* chosen: pathways on a jittered grid of nodes, a spanning tree plus loops, because the paper
  shows its park only as Fig. 5.
* chosen: two sealed corner pockets, behind invisible walls or trees and crates, because they
  hold the paper's unreachable objects (§VI-A).
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy import ndimage

GRASS, PATH, WATER = 0, 1, 2
OPEN, TREE, BLOCKAGE, INVISIBLE = 0, 1, 2, 3


@dataclasses.dataclass(frozen=True)
class ParkMap:
    """A generated park (numpy arrays, ``[size, size]`` indexed ``[row, col]`` = ``[y, x]``).

    One cell is one unit of :class:`jgtest.envs.park.ParkWorld`'s coordinates.

    Attributes:
      floor: ``int8`` floor type per cell: :data:`GRASS`, :data:`PATH` or :data:`WATER` (lakes;
        a pathway over water is a bridge).
      solid: ``int8`` solid type per cell: :data:`OPEN`, :data:`TREE` (drawn, blocks),
        :data:`BLOCKAGE` (crates across a pathway: drawn, blocks) or :data:`INVISIBLE` (blocks,
        not drawn).
      main: ``bool``, the cells of the main walkable region (the largest connected one):
        where episodes start and what is reachable.
      ooi_slots: ``int32[S, 2]`` ``(row, col)`` of the cells where objects may stand: grass
        cells next to a pathway, in any region (pockets too).
    """

    floor: np.ndarray
    solid: np.ndarray
    main: np.ndarray
    ooi_slots: np.ndarray

    @property
    def size(self) -> int:
        return int(self.floor.shape[0])

    @property
    def walkable(self) -> np.ndarray:
        return walkable(self.floor, self.solid)

    @property
    def path(self) -> np.ndarray:
        """Pathway cells (bridges included) that are free to walk on."""
        return (self.floor == PATH) & (self.solid == OPEN)


def walkable(floor: np.ndarray, solid: np.ndarray) -> np.ndarray:
    """Cells a player can stand on: not water, nothing solid."""
    return (floor != WATER) & (solid == OPEN)


def reachable_from(walk: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """``bool[size, size]``: the walkable cells 4-connected to any of ``cells`` (``(row, col)``
    rows)."""
    labels, _ = ndimage.label(walk)
    ids = {int(labels[r, c]) for r, c in np.asarray(cells).reshape(-1, 2) if walk[r, c]}
    return np.isin(labels, list(ids)) if ids else np.zeros_like(walk)


def generate(
    size: int = 64,
    seed: int = 0,
    path_width: int = 2,
    tree_density: float = 0.03,
    node_spacing: float = 16.0,
    pocket_share: float = 1 / 6,
) -> ParkMap:
    """Generates a park. Deterministic in ``seed``.

    In order: 2–3 elliptic lakes; pathway nodes on a jittered grid joined by a spanning tree
    plus a few extra edges, each edge an L-shaped path ``path_width`` cells wide that crosses the
    lakes as bridges; trees scattered over the grass and the park's fence; then two **pockets**,
    corner regions sealed off from the rest of the park: one by a ring of invisible walls, one
    by a ring of trees with crates where its pathway enters. Whatever lies in a pocket is
    unreachable from the main park, and a flood fill (:func:`reachable_from`) says so.

    Args:
      size: the map's side in cells.
      seed: the map's seed.
      path_width: pathway width in cells.
      tree_density: share of the open grass with a tree.
      node_spacing: the pathway nodes' grid step in cells (at least 3 nodes a side): the
        pathway network's length is about ``size² / node_spacing``.
      pocket_share: each sealed corner pocket's side, as a share of ``size`` (at least 8 cells).

    Raises:
      ValueError: ``size`` below 32 (no room for the pockets and the pathway grid), ``path_width``
        below 1, ``tree_density`` outside [0, 1), ``node_spacing`` below ``path_width + 2``.
    """
    _check_generate_args(size, path_width, tree_density, node_spacing)
    rng = np.random.default_rng(seed)
    floor = np.full((size, size), GRASS, np.int8)
    solid = np.zeros((size, size), np.int8)
    pocket = max(8, int(size * pocket_share))  # side of a corner pocket
    _lakes(floor, rng, pocket)
    _pathways(floor, rng, node_spacing, path_width)
    _trees(floor, solid, rng, tree_density)

    # Pocket 1 (top-left): a spur of pathway into it, sealed by a ring of invisible walls.
    _pocket(floor, solid, (1, 1), pocket, ring=INVISIBLE, gate=INVISIBLE, path_width=path_width)
    # Pocket 2 (bottom-right): a ring of trees, crates across the pathway where it enters.
    corner = (size - 1 - pocket, size - 1 - pocket)
    _pocket(floor, solid, corner, pocket, ring=TREE, gate=BLOCKAGE, path_width=path_width)

    walk = walkable(floor, solid)
    labels, count = ndimage.label(walk)
    sizes = ndimage.sum(walk, labels, index=np.arange(1, count + 1))
    main = labels == 1 + int(np.argmax(sizes))
    near = ndimage.binary_dilation(floor == PATH, structure=np.ones((3, 3), bool))
    beside_path = near & (floor == GRASS) & walk
    slots = np.argwhere(beside_path).astype(np.int32)
    return ParkMap(floor=floor, solid=solid, main=main, ooi_slots=slots)


def _check_generate_args(size, path_width, tree_density, node_spacing) -> None:
    if size < 32:
        raise ValueError(f"the park needs size >= 32, got {size}")
    if path_width < 1:
        raise ValueError(f"path_width must be at least 1 cell, got {path_width}")
    if not 0.0 <= tree_density < 1.0:
        raise ValueError(f"tree_density must be in [0, 1), got {tree_density}")
    if node_spacing < path_width + 2:
        raise ValueError(
            f"node_spacing must be at least path_width + 2 = {path_width + 2} cells, "
            f"got {node_spacing}"
        )


def _lakes(floor: np.ndarray, rng, pocket: int) -> None:
    """2–3 elliptic lakes away from the corner pockets (the pathways drawn next cross them as
    bridges)."""
    size = floor.shape[0]
    rows, cols = np.mgrid[:size, :size]
    for _ in range(int(rng.integers(2, 4))):
        cy, cx = rng.uniform(pocket + 4, size - pocket - 4, 2)
        ry, rx = rng.uniform(size / 16, size / 8, 2)
        floor[((rows - cy) / ry) ** 2 + ((cols - cx) / rx) ** 2 <= 1.0] = WATER


def _trees(floor: np.ndarray, solid: np.ndarray, rng, tree_density: float) -> None:
    """Trees on the grass, off the pathways and their borders, and the park's fence of trees."""
    size = floor.shape[0]
    near_path = ndimage.binary_dilation(floor == PATH, iterations=1)
    trees = (rng.random((size, size)) < tree_density) & (floor == GRASS) & ~near_path
    solid[trees] = TREE
    solid[[0, -1], :] = TREE  # the park's fence
    solid[:, [0, -1]] = TREE


def _pathways(floor: np.ndarray, rng, node_spacing: float, path_width: int) -> None:
    """Pathway nodes on a jittered grid, a spanning tree over them plus extra edges, each edge an
    L-shaped pathway."""
    size = floor.shape[0]
    grid = max(3, int(size // node_spacing))
    step = (size - 2 * 3) / grid
    nodes = []
    for i in range(grid):
        for j in range(grid):
            jitter = rng.uniform(-step / 4, step / 4, 2)
            centre = np.round(3 + (np.array([i, j]) + 0.5) * step + jitter)
            nodes.append(np.clip(centre, 2, size - 3).astype(int))
    nodes = np.array(nodes)
    edges = _spanning_tree(nodes, rng) + _extra_edges(nodes, rng, count=grid)
    for a, b in edges:
        _draw_l_path(floor, nodes[a], nodes[b], path_width, rng)


def _spanning_tree(nodes: np.ndarray, rng) -> list[tuple[int, int]]:
    """A random spanning tree of the nodes: each new node joins its nearest already-joined node."""
    order = rng.permutation(len(nodes))
    edges = []
    for k in range(1, len(order)):
        joined = order[:k]
        d = np.abs(nodes[joined] - nodes[order[k]]).sum(axis=1)
        edges.append((int(order[k]), int(joined[np.argmin(d)])))
    return edges


def _extra_edges(nodes: np.ndarray, rng, count: int) -> list[tuple[int, int]]:
    """``count`` extra edges between near neighbours, so the network has loops."""
    edges = []
    for a in rng.choice(len(nodes), size=count, replace=False):
        d = np.abs(nodes - nodes[a]).sum(axis=1).astype(float)
        d[a] = np.inf
        edges.append((int(a), int(np.argsort(d)[int(rng.integers(1, 3))])))
    return edges


def _draw_l_path(floor: np.ndarray, a: np.ndarray, b: np.ndarray, width: int, rng) -> None:
    """An L-shaped pathway from ``a`` to ``b`` (``(row, col)``), ``width`` cells wide."""
    corner = (a[0], b[1]) if rng.random() < 0.5 else (b[0], a[1])
    for (r0, c0), (r1, c1) in ((a, corner), (corner, b)):
        rs, cs = sorted((r0, r1)), sorted((c0, c1))
        floor[rs[0] : rs[1] + width, cs[0] : cs[1] + width] = PATH


def _pocket(floor, solid, corner, side, ring, gate, path_width) -> None:
    """A ``side × side`` corner region at ``corner`` (top-left cell), cleared to grass with a
    pathway loop inside and a spur out of it, sealed by a ring of ``ring`` with ``gate`` across
    the spur."""
    r, c = corner
    region = (slice(r, r + side), slice(c, c + side))
    floor[region] = GRASS
    solid[region] = OPEN
    rr = slice(r + 2, r + side - 2 - path_width + 1)
    cc = slice(c + 2, c + side - 2 - path_width + 1)
    # The loop's four sides.
    floor[rr.start : rr.stop + path_width - 1, cc.start : cc.start + path_width] = PATH
    floor[rr.start : rr.stop + path_width - 1, cc.stop - 1 : cc.stop - 1 + path_width] = PATH
    floor[rr.start : rr.start + path_width, cc.start : cc.stop + path_width - 1] = PATH
    floor[rr.stop - 1 : rr.stop - 1 + path_width, cc.start : cc.stop + path_width - 1] = PATH
    ring_mask = np.zeros(floor.shape, bool)
    ring_mask[region] = True
    ring_mask[r + 1 : r + side - 1, c + 1 : c + side - 1] = False
    solid[ring_mask] = ring
    # The spur: from the loop's middle row out through the ring's inner side, crossed by the gate.
    mid = r + side // 2
    toward = 1 if c + side < floor.shape[1] // 2 else -1  # out towards the park's centre
    if toward > 0:
        edge, cols = c + side - 1, slice(cc.stop - 1, c + side + 3)
    else:
        edge, cols = c, slice(c - 3, cc.start + path_width)
    floor[mid : mid + path_width, cols] = PATH
    solid[mid : mid + path_width, edge] = gate
