"""Grid helpers shared by the grid games: ASCII layouts, cell geometry, shortest-path distances."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

#: Moves as (d_row, d_col) for actions N, S, E, W (Wuji's Block Maze, §V-A).
NSEW = np.array([[-1, 0], [1, 0], [0, 1], [0, -1]], np.int32)

UNREACHABLE = 1 << 20


def distance(a: jax.Array, b: jax.Array) -> jax.Array:
    """Manhattan distance between two ``(row, col)`` cells, ``int32``."""
    return jnp.sum(jnp.abs(a - b)).astype(jnp.int32)


def inside(pos: jax.Array, rows: int, cols: int) -> jax.Array:
    """Whether ``(row, col)`` lies on a ``rows x cols`` grid."""
    return (pos[0] >= 0) & (pos[0] < rows) & (pos[1] >= 0) & (pos[1] < cols)


def clip_pos(pos: jax.Array, rows: int, cols: int) -> jax.Array:
    """``(row, col)`` clipped onto a ``rows x cols`` grid (the nearest cell on its border)."""
    return jnp.stack([jnp.clip(pos[0], 0, rows - 1), jnp.clip(pos[1], 0, cols - 1)])


def parse_layout(layout: str) -> dict[str, np.ndarray]:
    """Parses an ASCII map: ``#`` wall, ``.`` floor, other letters mark cells.

    Returns ``{"walls": bool[H, W], <char>: int32[k, 2] positions of that char}``.

    Raises:
      ValueError: rows of different lengths or an empty layout.
    """
    rows = [r for r in layout.strip("\n").splitlines()]
    if not rows or any(len(r) != len(rows[0]) for r in rows):
        raise ValueError("layout rows must be non-empty and all the same length")
    grid = np.array([list(r) for r in rows])
    out: dict[str, np.ndarray] = {"walls": grid == "#"}
    for ch in set(grid.ravel()) - {"#", "."}:
        out[ch] = np.argwhere(grid == ch).astype(np.int32)
    return out


def grid_distances(walls: jax.Array, source: jax.Array) -> jax.Array:
    """Shortest-path step counts from ``source`` to every cell (4-neighbour moves), jittable.

    Walls and unreachable cells get ``UNREACHABLE``. A breadth-first search on bit boards (one
    ``uint32`` a row, :func:`_bitboard_distances`) for maps up to 32 columns wide, else
    Bellman-Ford relaxation (:func:`_relaxed_distances`); both give the same distances.

    * chosen: bit boards, because under ``vmap`` the search runs until the slowest game's has
      settled, and a layer of it is then about 80 integer operations instead of a pass over every
      cell (the plan runner's two searches a step were most of its time).

    Args:
      walls: ``bool[H, W]``.
      source: ``int32[2]`` (row, col).
    """
    if walls.shape[1] <= 32:
        return _bitboard_distances(walls, source)
    return _relaxed_distances(walls, source)


def _bitboard_distances(walls: jax.Array, source: jax.Array) -> jax.Array:
    """:func:`grid_distances` by breadth-first search on bit boards: bit ``c`` of row ``r``'s word
    is cell ``(r, c)``. Each layer grows the reached cells by a shift each way and keeps the open
    ones; the layer number of the cells it reaches is written into bit planes (bit ``b`` of every
    cell's distance in plane ``b``), read back into distances once at the end."""
    h, w = walls.shape
    planes_needed = int(np.ceil(np.log2(h * w + 1)))
    column_bit = jnp.left_shift(jnp.uint32(1), jnp.arange(w, dtype=jnp.uint32))
    open_rows = jnp.sum(jnp.where(walls, jnp.uint32(0), column_bit), axis=1, dtype=jnp.uint32)
    start = jnp.where(
        jnp.arange(h) == source[0],
        jnp.left_shift(jnp.uint32(1), source[1].astype(jnp.uint32)),
        jnp.uint32(0),
    )
    empty = jnp.zeros((1,), jnp.uint32)

    def grow(carry):
        reached, _, layer, planes = carry
        around = (
            jnp.left_shift(reached, 1)
            | jnp.right_shift(reached, 1)
            | jnp.concatenate([reached[1:], empty])
            | jnp.concatenate([empty, reached[:-1]])
        )
        new = around & open_rows & ~reached
        layer = layer + 1
        layer_bits = jnp.right_shift(layer, jnp.arange(planes_needed, dtype=jnp.uint32)) & 1
        planes = planes | jnp.where(layer_bits[:, None] == 1, new[None, :], jnp.uint32(0))
        return reached | new, new, layer, planes

    reached, _, _, planes = jax.lax.while_loop(
        lambda carry: jnp.any(carry[1] != 0),
        grow,
        (start, start, jnp.uint32(0), jnp.zeros((planes_needed, h), jnp.uint32)),
    )
    cell_bits = lambda rows: jnp.right_shift(rows[..., None], jnp.arange(w, dtype=jnp.uint32)) & 1
    weights = jnp.left_shift(1, jnp.arange(planes_needed))[:, None, None]
    dist = jnp.sum(cell_bits(planes).astype(jnp.int32) * weights, axis=0)
    return jnp.where((cell_bits(reached) == 1) & ~walls, dist, UNREACHABLE)


def _relaxed_distances(walls: jax.Array, source: jax.Array) -> jax.Array:
    """:func:`grid_distances` by Bellman-Ford relaxation (min-plus dilation until nothing
    changes), for maps of any width."""
    h, w = walls.shape
    dist = jnp.full((h, w), UNREACHABLE, jnp.int32).at[source[0], source[1]].set(0)

    def relax(d):
        padded = jnp.pad(d, 1, constant_values=UNREACHABLE)
        neighbours = jnp.stack(
            [padded[:-2, 1:-1], padded[2:, 1:-1], padded[1:-1, 2:], padded[1:-1, :-2]]
        )
        best = jnp.minimum(d, jnp.min(neighbours, axis=0) + 1)
        return jnp.where(walls, UNREACHABLE, jnp.minimum(best, UNREACHABLE))

    def not_settled(carry):
        d, previous = carry
        return jnp.any(d != previous)

    def body(carry):
        d, _ = carry
        return relax(d), d

    dist, _ = jax.lax.while_loop(not_settled, body, (relax(dist), dist))
    return dist


def check_cells(
    game: str, cells: dict[str, np.ndarray], walls: np.ndarray, wall_word: str = "wall"
) -> None:
    """Host-side check that every named ``(row, col)`` lies inside the map and off the walls.

    Raises:
      ValueError: naming the first offending cell, e.g. "bug 3 at (20, 4) is
        outside the 16x16 map".
    """
    rows, cols = walls.shape
    for what, cell in cells.items():
        r, c = (int(v) for v in np.asarray(cell).reshape(2))
        if not (0 <= r < rows and 0 <= c < cols):
            raise ValueError(f"{game}: {what} at ({r}, {c}) is outside the {rows}x{cols} map")
        if walls[r, c]:
            raise ValueError(f"{game}: {what} at ({r}, {c}) is on a {wall_word}")


def walk_distances(
    passable: jax.Array, pos: jax.Array, cells: jax.Array, field: jax.Array | None = None
) -> jax.Array:
    """``int32[A]``: steps from ``pos`` to stand on each of ``cells`` (when passable) or beside it
    (``UNREACHABLE`` when no path); ``field``: the distances from ``pos`` when already computed."""
    if field is None:
        field = grid_distances(~passable.at[pos[0], pos[1]].set(True), pos)
    h, w = passable.shape
    around = jnp.clip(cells[:, None] + jnp.asarray(NSEW)[None], 0, jnp.array([h - 1, w - 1]))
    beside = field[around[..., 0], around[..., 1]].min(-1)
    return jnp.where(passable[cells[:, 0], cells[:, 1]], field[cells[:, 0], cells[:, 1]], beside)
