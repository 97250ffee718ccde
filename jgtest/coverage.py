"""Coverage: the cells of a game's state, and the distinct cells a run covers.

Wuji (Zheng et al., ASE 2019, §V-C) cuts each state feature into ``m`` equal intervals; state
coverage counts the distinct bucket tuples (:func:`bucket_id`, at most ``m**n``). A *cell set*
(:func:`cell_set`) is one pure ``init`` / ``add`` / ``contains`` / ``clear`` interface for episode
cells, campaign coverage and PPGTA's pathway coverage; Wuji's states are counted by hash
(:class:`DistinctStates`).

* chosen: ``add`` returns how many cells were new, because counts then stay incremental.
* chosen: a bit set or a hash set, whichever is smaller, because spaces reach ``m**n`` cells.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

#: Sort key of ignored cells in :func:`_first_occurrences` (no valid cell id reaches it).
_IGNORED = np.iinfo(np.int32).max
#: Knuth's multiplicative-hash constant, ``2**32 / golden ratio``.
_GOLDEN = 0x9E3779B1


# ----- cells ------------------------------------------------------------------------
def bucketize(features: jax.Array, low, high, num_buckets: int) -> jax.Array:
    """Bucket index of each feature: ``floor((f - low) / (high - low) * m)``.

    Values outside ``[low, high]`` are put in the first or last bucket.

    Args:
      features: ``[..., n]`` state features.
      low: lower bound per feature (broadcastable to ``[n]``).
      high: upper bound per feature (broadcastable to ``[n]``).
      num_buckets: ``m``, equal intervals per feature.

    Returns:
      ``int32[..., n]`` bucket indices in ``[0, m)``.
    """
    scaled = (features - low) / (jnp.asarray(high) - low) * num_buckets
    return jnp.clip(jnp.floor(scaled), 0, num_buckets - 1).astype(jnp.int32)


def bucket_id(features: jax.Array, low, high, num_buckets: int) -> jax.Array:
    """Flat id of the bucket tuple of a state, in ``[0, m**n)``.

    Raises:
      ValueError: ``m**n`` does not fit an ``int32`` cell id.

    Example:
      >>> int(bucket_id(jnp.array([0.1, 0.9]), 0.0, 1.0, 10))
      19
    """
    n = features.shape[-1]
    if num_buckets**n > _IGNORED:
        raise ValueError(
            f"{num_buckets}**{n} bucket tuples do not fit int32 cell ids; use fewer buckets "
            "or features"
        )
    idx = bucketize(features, low, high, num_buckets)
    strides = np.asarray([num_buckets ** (n - 1 - i) for i in range(n)], np.int32)
    return jnp.sum(idx * strides, axis=-1).astype(jnp.int32)


# ----- distinct cells -----------------------------------------------------------------
@struct.dataclass
class CellSetState:
    """The contents of a cell set.

    Attributes:
      table: ``uint32[words]`` bits (:class:`BitSet`) or ``int32[capacity, 2]``
        slots of ``(cell, generation)`` (:class:`HashSet`).
      size: ``int32``, distinct cells in the set.
      overflowed: ``bool``, a new cell was dropped because the set was full
        (never for a :class:`BitSet`); ``size`` is then a lower bound.
      generation: ``int32``, :class:`HashSet` slots stamped with it hold the
        set's cells; ``clear`` starts the next generation, so older slots count
        as empty (a :class:`BitSet` zeroes its words instead and keeps 0).
    """

    table: jax.Array
    size: jax.Array
    overflowed: jax.Array
    generation: jax.Array


def _valid_cells(cells, valid, num_cells: int | None):
    """``cells`` as ``int32`` and the mask of those to add: in range and ``valid``."""
    cells = jnp.asarray(cells, jnp.int32)
    ok = cells >= 0
    if num_cells is not None:
        ok &= cells < num_cells
    if valid is not None:
        ok &= jnp.broadcast_to(jnp.asarray(valid, bool), cells.shape)
    return cells, ok


def _first_occurrences(cells: jax.Array, ok: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Flattened cells (sorted when more than one) and the mask of each valid cell's first copy."""
    flat = jnp.where(ok, cells, _IGNORED).reshape(-1)
    if flat.shape[0] == 1:
        return flat, ok.reshape(-1)
    flat = jnp.sort(flat)
    first = jnp.concatenate([jnp.ones((1,), bool), flat[1:] != flat[:-1]])
    return flat, first & (flat != _IGNORED)


def count_distinct(cells: jax.Array, valid: jax.Array | None = None) -> jax.Array:
    """Number of distinct non-negative cell ids in ``cells`` (any shape), sort-based.

    No table at all: ``O(N log N)`` for ``N`` cells, whatever the size of the
    cell space (for states given as feature vectors: :func:`count_distinct_states`).

    Example:
      >>> int(count_distinct(jnp.array([7, 3, 7, 10**9, 3])))
      3
    """
    cells, ok = _valid_cells(cells, valid, None)
    return jnp.sum(_first_occurrences(cells, ok)[1]).astype(jnp.int32)


def state_hashes(features: jax.Array, low, high, num_buckets: int) -> jax.Array:
    """``uint32[..., 2]``: two independent 32-bit hashes of each state's bucket tuple.

    Each of the ``n`` features (the last axis of ``features``) is cut into ``num_buckets`` equal
    intervals of ``[low, high]`` (:func:`bucketize`); a state is its tuple of buckets, one of
    ``m**n`` (far beyond any table for, say, 20 features). The tuple is hashed twice,
    ``Σ_i (b_i + 1)·a_i mod 2**32`` for two fixed vectors of random odd ``a_i``: two distinct tuples
    share both hashes with probability about ``2**-62``. The 64 bits stand for the state in
    :func:`count_distinct_states` (one run) and :class:`DistinctStates` (a campaign).
    """
    rows = bucketize(features, low, high, num_buckets).astype(jnp.uint32)
    multipliers = np.random.default_rng(0x5EED).integers(
        0, 2**31, size=(2, rows.shape[-1]), dtype=np.uint32
    ) * np.uint32(2) + np.uint32(1)
    return jnp.stack(
        [
            jnp.sum((rows + jnp.uint32(1)) * jnp.asarray(a), axis=-1, dtype=jnp.uint32)
            for a in multipliers
        ],
        axis=-1,
    )


def count_distinct_states(
    features: jax.Array, valid: jax.Array | None, low, high, num_buckets: int
) -> jax.Array:
    """Distinct bucket tuples among the states ``features [T, n]`` (Wuji §IV-B, §V-C), no table.

    The states' :func:`state_hashes` are sorted and the first copy of each counted:
    ``O(T log T + T n)``.

    Wuji's exploration score of a policy is the mean of this over its ``m`` runs
    (``jax.vmap`` over runs).

    Args:
      features: ``[T, n]`` state features of one run (a trailing observation
        shape is flattened).
      valid: ``bool[T]`` steps inside the run, or ``None``.
      low: the features' lower bounds (scalars or ``[n]``); values outside the range are
        clipped into the end buckets.
      high: the features' upper bounds.
      num_buckets: ``m`` buckets per feature.
    """
    hashes = state_hashes(jnp.reshape(features, (features.shape[0], -1)), low, high, num_buckets)
    h1, h2 = hashes[:, 0], hashes[:, 1]
    ok = jnp.ones(hashes.shape[0], bool) if valid is None else jnp.asarray(valid, bool)
    order = jnp.lexsort((h2, h1, ~ok))  # valid rows first, then by hash
    h1, h2, ok = h1[order], h2[order], ok[order]
    new = jnp.concatenate([jnp.ones((1,), bool), (h1[1:] != h1[:-1]) | (h2[1:] != h2[:-1])])
    return jnp.sum(new & ok).astype(jnp.int32)


class ObservationStates:
    """A game's observations as Wuji's states: the game's state features
    (:meth:`jgtest.envs.base.TestingEnv.state_features`, by default the observation) each cut
    into ``num_buckets`` equal intervals of their bounds (Wuji Def. 3 "game state", §V-C).

    Wuji's state is "a fixed-length vector" of the game's aspects (position, health, ...) and, the
    GUI stripped, its policies' inputs are those vectors (§V-A4): the observation, or the part of
    it a game names as its state. The same states serve the exploration score of one run
    (:meth:`count_distinct`) and the state coverage of a campaign (:meth:`hashes` into
    :class:`DistinctStates`, Table V).

    Args:
      env: a jgtest game.
      params: its params (for the features' bounds).
      num_buckets: ``m``, intervals per feature.
    """

    def __init__(self, env, params, num_buckets: int):
        self.env, self.num_buckets = env, int(num_buckets)
        self.ndim = len(env.observation_space(params).shape)
        self.low, self.high = env.state_feature_bounds(params)

    def features(self, obs: jax.Array) -> jax.Array:
        """``[..., n]``: the state features of observations ``[..., *obs_shape]``."""
        return self.env.state_features(jnp.reshape(obs, (*obs.shape[: obs.ndim - self.ndim], -1)))

    def hashes(self, obs: jax.Array) -> jax.Array:
        """``uint32[..., 2]``: :func:`state_hashes` of observations ``[..., *obs_shape]``."""
        return state_hashes(self.features(obs), self.low, self.high, self.num_buckets)

    def count_distinct(self, obs: jax.Array, valid: jax.Array | None = None) -> jax.Array:
        """Distinct states among the observations ``[T, *obs_shape]`` of one run."""
        return count_distinct_states(
            self.features(obs), valid, self.low, self.high, self.num_buckets
        )


class DistinctStates:
    """The distinct states a campaign has seen, as the sorted ``uint64`` array of their hashes
    (host).

    Wuji's state coverage (§V-C, Table V) counts the bucket tuples covered over a whole
    campaign: millions of states out of ``m**n``, so they are kept as the 64-bit hashes of
    :func:`state_hashes` on the host, where each device call's new ones are merged in. New
    hashes wait in a small sorted array that is merged into the main one once it holds an
    eighth of it, so a call costs ``O(k log N)`` for ``k`` new states plus the small array's
    sort, not a pass over all ``N``.

    Example:
      >>> states = DistinctStates()
      >>> states.add(np.array([[1, 2], [1, 2], [3, 4]], np.uint32))
      >>> len(states)
      2
    """

    def __init__(self, hashes: np.ndarray | None = None):
        self._main = _sorted_unique(np.asarray([] if hashes is None else hashes, np.uint64))
        self._recent = np.zeros(0, np.uint64)

    @property
    def hashes(self) -> np.ndarray:
        """``uint64[N]``: every state's hash, sorted (what a checkpoint keeps)."""
        self._merge()
        return self._main

    def add(self, pairs: np.ndarray, valid: np.ndarray | None = None) -> None:
        """Adds states given as :func:`state_hashes` pairs ``uint32[..., 2]`` (those ``valid``)."""
        pairs = np.asarray(pairs, np.uint64)
        if valid is not None:
            pairs = pairs[np.asarray(valid, bool)]
        new = _sorted_unique((pairs[..., 0] << np.uint64(32)) | pairs[..., 1])
        new = _absent(_absent(new, self._main), self._recent)
        if len(new):  # two sorted runs: the stable sort merges them in linear time
            self._recent = np.sort(np.concatenate([self._recent, new]), kind="stable")
        if len(self._recent) > max(len(self._main) // 8, 1 << 16):
            self._merge()

    def _merge(self) -> None:
        if len(self._recent):
            self._main = np.sort(np.concatenate([self._main, self._recent]), kind="stable")
            self._recent = np.zeros(0, np.uint64)

    def __len__(self) -> int:
        return len(self._main) + len(self._recent)


def _absent(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """The sorted ``values`` not in ``sorted_set`` (binary search)."""
    if not len(sorted_set) or not len(values):
        return values
    at = np.minimum(np.searchsorted(sorted_set, values), len(sorted_set) - 1)
    return values[sorted_set[at] != values]


def _sorted_unique(values: np.ndarray) -> np.ndarray:
    """``np.unique`` of a flat integer array by one sort (numpy's ``unique`` took 30x longer on
    240k ``uint64``)."""
    values = np.sort(values.reshape(-1))
    return values[np.concatenate([np.ones(min(len(values), 1), bool), values[1:] != values[:-1]])]


@dataclasses.dataclass(frozen=True)
class BitSet:
    """Exact set of cells in ``[0, num_cells)``: one bit per cell, packed in uint32 words.

    Example:
      >>> cells = BitSet(100)
      >>> state, new = cells.add(cells.init(), jnp.array([5, 9, 5]))
      >>> int(new), int(state.size), bool(cells.contains(state, 9))
      (2, 2, True)
    """

    num_cells: int

    def __post_init__(self):
        if not isinstance(self.num_cells, (int, np.integer)) or not 0 < self.num_cells <= _IGNORED:
            raise ValueError(f"BitSet needs 0 < num_cells <= 2**31 - 1, got {self.num_cells!r}")

    @property
    def num_words(self) -> int:
        return -(-self.num_cells // 32)

    def init(self) -> CellSetState:
        return CellSetState(
            jnp.zeros((self.num_words,), jnp.uint32), jnp.int32(0), jnp.bool_(False), jnp.int32(0)
        )

    @staticmethod
    def _word_and_bit(cells):
        return cells >> 5, jnp.left_shift(jnp.uint32(1), (cells & 31).astype(jnp.uint32))

    def add(self, state: CellSetState, cells, valid=None) -> tuple[CellSetState, jax.Array]:
        """Adds ``cells`` (any shape); returns the new state and how many were new."""
        cells, first = _first_occurrences(*_valid_cells(cells, valid, self.num_cells))
        word, bit = self._word_and_bit(cells)
        is_new = first & ((state.table.at[word].get(mode="fill", fill_value=0) & bit) == 0)
        # New cells are distinct bits of words where they are unset, so adding them is or-ing them.
        table = state.table.at[word].add(jnp.where(is_new, bit, jnp.uint32(0)), mode="drop")
        num_new = jnp.sum(is_new).astype(jnp.int32)
        return state.replace(table=table, size=state.size + num_new), num_new

    def contains(self, state: CellSetState, cells) -> jax.Array:
        """``bool`` array like ``cells``: which cells are in the set."""
        cells, ok = _valid_cells(cells, None, self.num_cells)
        word, bit = self._word_and_bit(jnp.where(ok, cells, 0))
        return ok & ((state.table[word] & bit) != 0)

    def clear(self, state: CellSetState, where=True) -> CellSetState:
        """Empties the set where ``where`` (a scalar bool) is true: ``O(words)``."""
        where = jnp.asarray(where, bool)
        return state.replace(
            table=jnp.where(where, jnp.uint32(0), state.table),
            size=jnp.where(where, 0, state.size),
            overflowed=state.overflowed & ~where,
        )

    def members(self, state: CellSetState) -> np.ndarray:
        """Host-side sorted ``int64`` array of the cells in the set."""
        bits = np.unpackbits(
            np.asarray(state.table).astype("<u4").view(np.uint8), bitorder="little"
        )
        return np.flatnonzero(bits[: self.num_cells])


@dataclasses.dataclass(frozen=True)
class HashSet:
    """Set of any non-negative ``int32`` cells in ``capacity`` slots (open addressing).

    Linear probing from a multiplicative hash; exact while it holds at most
    ``capacity`` cells (keep the load at most 1/2 for short probes). A new
    cell that finds no free slot is dropped and ``overflowed`` is set.
    Several cells are added in parallel rounds: each pending cell reads its
    probe slot, claims it if free (one of the cells racing for a slot wins,
    the others probe on), and stops when it finds itself.

    Each slot holds ``(cell, generation)``; only slots of the set's current
    generation are occupied, so :meth:`clear` is ``O(1)`` (a per-env set
    cleared at every episode end costs nothing per step). Probing stays
    correct: within a generation slots are only ever filled, as in a fresh
    table.

    Example:
      >>> cells = HashSet(8)
      >>> state, new = cells.add(cells.init(), jnp.array([3, 10**9, 3]))
      >>> int(new), sorted(cells.members(state).tolist())
      (2, [3, 1000000000])
      >>> state = cells.clear(state)
      >>> int(state.size), cells.members(state).tolist()
      (0, [])
    """

    capacity: int

    def __post_init__(self):
        c = self.capacity
        if not isinstance(c, (int, np.integer)) or c < 2 or c & (c - 1) or c > 2**30:
            raise ValueError(f"HashSet capacity must be a power of two in [2, 2**30], got {c!r}")

    def init(self) -> CellSetState:
        table = jnp.full((self.capacity, 2), -1, jnp.int32)  # generation -1: never current
        return CellSetState(table, jnp.int32(0), jnp.bool_(False), jnp.int32(0))

    def _home(self, cells):
        bits = self.capacity.bit_length() - 1
        return (cells.astype(jnp.uint32) * jnp.uint32(_GOLDEN)) >> jnp.uint32(32 - bits)

    def _probe(self, state: CellSetState, home, probe):
        """Slot index, its cell and whether it is occupied, at ``probe`` steps from ``home``."""
        slot = ((home + probe.astype(jnp.uint32)) & jnp.uint32(self.capacity - 1)).astype(jnp.int32)
        entry = state.table[slot]
        return slot, entry[..., 0], entry[..., 1] == state.generation

    def add(self, state: CellSetState, cells, valid=None) -> tuple[CellSetState, jax.Array]:
        """Adds ``cells`` (any shape); returns the new state and how many were new."""
        cells, pending = _first_occurrences(*_valid_cells(cells, valid, None))
        home = self._home(cells)
        stamped = jnp.stack([cells, jnp.broadcast_to(state.generation, cells.shape)], axis=-1)
        if cells.shape[0] == 1:
            return self._add_one(state, cells, pending, home, stamped)

        def probe_round(carry):
            table, pending, probe, num_new, overflowed = carry
            slot, current, occupied = self._probe(state.replace(table=table), home, probe)
            found = pending & occupied & (current == cells)
            claim = pending & ~occupied
            table = table.at[jnp.where(claim, slot, self.capacity)].set(stamped, mode="drop")
            won = claim & (table[slot, 0] == cells)
            pending = pending & ~found & ~won
            full = pending & (probe + 1 >= self.capacity)
            pending = pending & ~full
            num_new = num_new + jnp.sum(won).astype(jnp.int32)
            return table, pending, probe + pending, num_new, overflowed | jnp.any(full)

        init = (
            state.table,
            pending,
            jnp.zeros(cells.shape, jnp.int32),
            jnp.int32(0),
            state.overflowed,
        )
        table, _, _, num_new, overflowed = jax.lax.while_loop(
            lambda c: jnp.any(c[1]), probe_round, init
        )
        return state.replace(table=table, size=state.size + num_new, overflowed=overflowed), num_new

    def _find(self, state: CellSetState, cells, searching, home):
        """Read-only probe of each ``searching`` cell up to itself or a free slot.

        Returns ``(slot, cell there, occupied)`` where each search stopped. The
        table stays out of the loop's carry: under ``vmap`` (a set per env) a
        loop carries each element through a select per round, which for the
        table would cost ``O(capacity)`` a round.
        """

        def go_on(probe):
            _, current, occupied = self._probe(state, home, probe)
            return searching & occupied & (current != cells) & (probe + 1 < self.capacity)

        probe = jax.lax.while_loop(
            lambda p: jnp.any(go_on(p)), lambda p: p + go_on(p), jnp.zeros(cells.shape, jnp.int32)
        )
        return self._probe(state, home, probe)

    def _add_one(self, state: CellSetState, cell, valid, home, stamped):
        """One cell: :meth:`_find` it or a free slot, then one write."""
        slot, current, occupied = self._find(state, cell, valid, home)
        is_new = valid & ~occupied
        table = state.table.at[jnp.where(is_new, slot, self.capacity)].set(stamped, mode="drop")
        overflowed = state.overflowed | jnp.any(valid & occupied & (current != cell))
        num_new = jnp.sum(is_new).astype(jnp.int32)
        return state.replace(table=table, size=state.size + num_new, overflowed=overflowed), num_new

    def contains(self, state: CellSetState, cells) -> jax.Array:
        """``bool`` array like ``cells``: which cells are in the set."""
        cells, ok = _valid_cells(cells, None, None)
        _, current, occupied = self._find(state, cells, ok, self._home(cells))
        return ok & occupied & (current == cells)

    def clear(self, state: CellSetState, where=True) -> CellSetState:
        """Empties the set where ``where`` (a scalar bool) is true: ``O(1)``, a new generation."""
        where = jnp.asarray(where, bool)
        return state.replace(
            size=jnp.where(where, 0, state.size),
            overflowed=state.overflowed & ~where,
            generation=state.generation + where.astype(jnp.int32),
        )

    def members(self, state: CellSetState) -> np.ndarray:
        """Host-side sorted ``int64`` array of the cells in the set."""
        table = np.asarray(state.table)
        return np.sort(table[table[:, 1] == int(state.generation), 0]).astype(np.int64)


CellSet = BitSet | HashSet


def cell_set(num_cells: int, max_distinct: int | None = None) -> CellSet:
    """The smaller exact set for cells in ``[0, num_cells)``, at most ``max_distinct`` of them.

    A :class:`BitSet` takes ``ceil(num_cells / 32)`` words; a :class:`HashSet`
    for ``max_distinct`` cells at load ≤ 1/2 takes the next power of two
    ``≥ 2 * max_distinct`` slots of two words. Without ``max_distinct`` it is a
    ``BitSet``.

    Example:
      >>> cell_set(4096, max_distinct=500)        # 128 words < 2 * 1,024
      BitSet(num_cells=4096)
      >>> cell_set(10**9, max_distinct=1000)      # 31,250,000 words > 2 * 2,048
      HashSet(capacity=2048)
    """
    bits = BitSet(num_cells)
    if max_distinct is None:
        return bits
    if max_distinct < 1:
        raise ValueError(f"max_distinct must be positive, got {max_distinct}")
    slots = 1 << max(1, math.ceil(math.log2(2 * max_distinct)))
    return bits if bits.num_words <= 2 * slots else HashSet(slots)


def fraction_covered(cells: CellSet, state: CellSetState, targets: jax.Array) -> jax.Array:
    """Share of the distinct ``targets`` cells that are in the set (PPGTA's pathway coverage).

    Args:
      cells: the set's representation.
      state: its contents.
      targets: ``int32[K]`` cells to cover (e.g. the pathway cells); repeats count once.
    """
    targets, ok = _valid_cells(targets, None, None)
    sorted_targets, first = _first_occurrences(targets, ok)
    hit = first & cells.contains(state, jnp.where(first, sorted_targets, 0))
    return jnp.sum(hit) / jnp.maximum(jnp.sum(first), 1)


# ----- visit counts (maps) ---------------------------------------------------------------
def visit_counts(cells: jax.Array, num_cells: int, mask: jax.Array | None = None) -> jax.Array:
    """How many times each cell id occurs in ``cells`` (any shape): a dense map.

    For bird's-eye maps and RELINE's low-FPS grid, where every cell has a
    count; to count distinct cells, use a cell set.

    Args:
      cells: integer cell ids.
      num_cells: number of cells (length of the result).
      mask: optional bool array like ``cells``; only ``True`` entries count.

    Returns:
      ``int32[num_cells]`` counts.
    """
    weights = jnp.ones(cells.shape, jnp.int32) if mask is None else mask.astype(jnp.int32)
    return jnp.zeros((num_cells,), jnp.int32).at[cells.reshape(-1)].add(weights.reshape(-1))


def visit_map(
    cells: jax.Array, map_shape: tuple[int, ...], mask: jax.Array | None = None
) -> jax.Array:
    """Bird's-eye visit counts: ``visit_counts`` reshaped to ``map_shape``."""
    return visit_counts(cells, math.prod(map_shape), mask).reshape(map_shape)
