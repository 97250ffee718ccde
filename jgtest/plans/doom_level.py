"""A Doom level's map read from its WAD (the Doom Wiki's "WAD" page): the doors, switches, exits and
pickups a plan names (:class:`Level`), and the routes a walker follows (:class:`WalkGrid`).

* chosen: the WAD read with :mod:`struct`, because the engine does not report line specials.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import re
import struct

import numpy as np

#: Manual doors (the player uses the door itself), by special: who may open them.
OPEN_DOORS = frozenset({1, 31, 117, 118})
LOCKED_DOORS = {26: "blue", 27: "yellow", 28: "red", 32: "blue", 33: "red", 34: "yellow"}
#: Exit lines: used (a switch) or walked over.
USED_EXITS, CROSSED_EXITS = (11, 51), (52, 124)
#: Lines a player uses that move their tagged sectors: Doom's S1 specials (the first two rows) and
#: SR specials (the last row), the light switches left out.
SWITCHES = frozenset({
    7, 9, 14, 15, 18, 20, 21, 23, 29, 41, 49, 50, 55, 71, 101, 102, 103, 111, 112, 113, 122, 127,
    131, 133, 135, 137, 140,
    42, 43, 45, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 99, 114, 115, 116, 123, 132, 134, 136,
})  # fmt: skip
#: Lifts (lowered by a switch or a walk-over line, then back up): their tagged sectors.
LIFTS = frozenset({10, 21, 62, 88, 120, 121, 122, 123})
#: Things a player picks up, by Doom's editor number: the engine's (ZDoom's) class names.
PICKUPS = {
    2001: "Shotgun",
    82: "SuperShotgun",
    2002: "Chaingun",
    2003: "RocketLauncher",
    2004: "PlasmaRifle",
    2005: "Chainsaw",
    2006: "BFG9000",
    2007: "Clip",
    2048: "ClipBox",
    2008: "Shell",
    2049: "ShellBox",
    2010: "RocketAmmo",
    2046: "RocketBox",
    2047: "Cell",
    17: "CellPack",
    8: "Backpack",
    2011: "Stimpack",
    2012: "Medikit",
    2014: "HealthBonus",
    2015: "ArmorBonus",
    2018: "GreenArmor",
    2019: "BlueArmor",
    2013: "Soulsphere",
    83: "Megasphere",
    2022: "InvulnerabilitySphere",
    2023: "Berserk",
    2024: "BlurSphere",
    2025: "RadSuit",
    2026: "Allmap",
    2045: "Infrared",
    5: "BlueCard",
    6: "YellowCard",
    13: "RedCard",
    40: "BlueSkull",
    39: "YellowSkull",
    38: "RedSkull",
}
#: The key each key pickup gives.
KEY_COLOURS = {
    "BlueCard": "blue",
    "BlueSkull": "blue",
    "YellowCard": "yellow",
    "YellowSkull": "yellow",
    "RedCard": "red",
    "RedSkull": "red",
}
#: Solid decorations (pillars, lamps, trees…), by editor number: the player walks around them.
SOLID_THINGS = frozenset(
    {*range(25, 34), *range(35, 38), *range(41, 58), 70, *range(72, 79), 85, 86, 2028, 2035}
)
#: The player: 56 units tall, a radius of 16; Doom's highest step is 24 units.
PLAYER_HEIGHT, PLAYER_RADIUS, MAX_STEP = 56, 16, 24
#: The route grid's square side and how far its free squares keep from what blocks, in map units.
CELL, CLEARANCE = 8, 18
#: A skill's bit in a thing's flags (skills 1–5: ViZDoom's ``set_doom_skill``).
SKILL_BITS = {1: 1, 2: 1, 3: 2, 4: 4, 5: 4}
_MAP_NAME = re.compile(r"^(E\dM\d|MAP\d\d)$")
_NO_SIDE = 0xFFFF


@dataclasses.dataclass(frozen=True)
class Line:
    index: int
    start: tuple[float, float]
    end: tuple[float, float]
    special: int
    tag: int
    front: int  # the sector on the line's right side
    back: int | None  # on its left, None for a one-sided line
    impassable: bool

    @property
    def middle(self) -> tuple[float, float]:
        return ((self.start[0] + self.end[0]) / 2, (self.start[1] + self.end[1]) / 2)

    def before(self, distance: float, side: int = 1) -> tuple[float, float]:
        """The point ``distance`` units from the line's middle, on its right (front, ``side`` 1) or
        left (−1)."""
        (x1, y1), (x2, y2) = self.start, self.end
        length = math.hypot(x2 - x1, y2 - y1) or 1.0
        mx, my = self.middle
        return (
            mx + side * (y2 - y1) / length * distance,
            my - side * (x2 - x1) / length * distance,
        )


@dataclasses.dataclass(frozen=True)
class Thing:
    x: float
    y: float
    type: int
    flags: int


@dataclasses.dataclass(frozen=True)
class Door:
    """A door sector and the lines that open it (``key``: the colour it needs, or None)."""

    sector: int
    lines: tuple[Line, ...]
    key: str | None


class Level:
    """One map of a WAD: what it holds for a plan.

    * **doors**: the sectors behind manual door lines (:data:`OPEN_DOORS` open to anyone,
      :data:`LOCKED_DOORS` need the blue, yellow or red key), each with its door lines;
    * **switches**: the other lines a player uses (Doom's S1 and SR specials) that move their
      tagged sectors' floors or ceilings (doors, lifts, floors);
    * **exits**: the lines that end the level (11 and 51 used; 52 and 124 walked over);
    * **pickups**: the things at the chosen skill (a thing's flags say at which skills it is
      placed: :data:`SKILL_BITS`; bit 16 only in multiplayer) that a player picks up, by their
      engine (ZDoom) names: :data:`PICKUPS`.

    Attributes:
      name: ``WAD/MAP``; things, lines, floors, ceilings, tags: the map's lumps.
      start: the player 1 start ``(x, y)``.
    """

    def __init__(self, wad_path: str, map_name: str):
        lumps = _map_lumps(wad_path, map_name)
        self.name = f"{os.path.splitext(os.path.basename(wad_path))[0]}/{map_name}"
        vertices = [
            struct.unpack_from("<2h", lumps["VERTEXES"], i)
            for i in range(0, len(lumps["VERTEXES"]), 4)
        ]
        sides = [
            struct.unpack_from("<hh8s8s8sH", lumps["SIDEDEFS"], i)[5]
            for i in range(0, len(lumps["SIDEDEFS"]), 30)
        ]
        sectors = [
            struct.unpack_from("<hh8s8shhh", lumps["SECTORS"], i)
            for i in range(0, len(lumps["SECTORS"]), 26)
        ]
        self.floors = np.array([s[0] for s in sectors], np.float64)
        self.ceilings = np.array([s[1] for s in sectors], np.float64)
        self.tags = np.array([s[6] for s in sectors], np.int64)
        self.lines = []
        for index, offset in enumerate(range(0, len(lumps["LINEDEFS"]), 14)):
            v1, v2, flags, special, tag, right, left = struct.unpack_from(
                "<7H", lumps["LINEDEFS"], offset
            )
            self.lines.append(
                Line(
                    index,
                    vertices[v1],
                    vertices[v2],
                    special,
                    tag,
                    sides[right],
                    None if left == _NO_SIDE else sides[left],
                    bool(flags & 1),
                )
            )
        things = (
            struct.unpack_from("<5h", lumps["THINGS"], i)
            for i in range(0, len(lumps["THINGS"]), 10)
        )
        self.things = [Thing(x, y, kind, flags) for x, y, _angle, kind, flags in things]
        start = next((t for t in self.things if t.type == 1), None)
        if start is None:
            raise ValueError(f"{self.name} has no player start")
        self.start = (float(start.x), float(start.y))

    @functools.cached_property
    def doors(self) -> tuple[Door, ...]:
        """The level's manual doors, one per door sector, in sector order."""
        by_sector: dict[int, list[Line]] = {}
        for line in self.lines:
            if (
                line.special in OPEN_DOORS or line.special in LOCKED_DOORS
            ) and line.back is not None:
                by_sector.setdefault(line.back, []).append(line)
        return tuple(
            Door(sector, tuple(lines), LOCKED_DOORS.get(lines[0].special))
            for sector, lines in sorted(by_sector.items())
        )

    @functools.cached_property
    def door_sectors(self) -> dict[int, Door]:
        """The doors by their sector."""
        return {door.sector: door for door in self.doors}

    @functools.cached_property
    def switches(self) -> tuple[Line, ...]:
        return tuple(
            line
            for line in self.lines
            if line.special in SWITCHES and line.tag and np.any(self.tags == line.tag)
        )

    @functools.cached_property
    def exits(self) -> tuple[Line, ...]:
        return tuple(line for line in self.lines if line.special in USED_EXITS + CROSSED_EXITS)

    @functools.cached_property
    def lifts(self) -> frozenset[int]:
        """The sectors that lifts move (:data:`LIFTS`)."""
        return frozenset(
            int(s)
            for line in self.lines
            if line.special in LIFTS and line.tag
            for s in np.flatnonzero(self.tags == line.tag)
        )

    def pickups(self, skill: int) -> list[tuple[str, Thing]]:
        """The things placed at ``skill`` that a player picks up, with their engine names."""
        bit = SKILL_BITS[skill]
        return [
            (PICKUPS[t.type], t)
            for t in self.things
            if t.type in PICKUPS and t.flags & bit and not t.flags & 16
        ]

    def door_open_height(self, door: Door) -> float:
        """The ceiling a door rises to: the lowest ceiling around it less 4 units (Doom's
        ``P_FindLowestCeilingSurrounding``)."""
        around = {line.front for line in self.lines if line.back == door.sector} | {
            line.back for line in self.lines if line.front == door.sector
        }
        around.discard(None), around.discard(door.sector)
        return min(self.ceilings[s] for s in around) - 4 if around else self.ceilings[door.sector]


@functools.cache
def read_level(wad_path: str, map_name: str) -> Level:
    """The :class:`Level` of ``map_name`` in the WAD at ``wad_path``, read once.

    Raises:
      ValueError: the WAD holds no such map (the message lists its maps).
    """
    return Level(wad_path, map_name.upper())


def _map_lumps(wad_path: str, map_name: str) -> dict[str, bytes]:
    with open(wad_path, "rb") as file:
        data = file.read()
    _, count, directory = struct.unpack_from("<4sii", data, 0)
    entries = [struct.unpack_from("<ii8s", data, directory + 16 * i) for i in range(count)]
    names = [name.rstrip(b"\0").decode("ascii", "replace") for _, _, name in entries]
    if map_name not in names:
        raise ValueError(
            f"{os.path.basename(wad_path)} has no map {map_name}; maps: "
            f"{', '.join(n for n in names if _MAP_NAME.match(n))}"
        )
    first = names.index(map_name) + 1
    lumps = {}
    for (offset, size, _), name in zip(entries[first : first + 11], names[first : first + 11]):
        if _MAP_NAME.match(name):
            break
        lumps[name] = data[offset : offset + size]
    return lumps


class WalkGrid:
    """Routes over ``level`` for a player holding ``keys``.

    A grid of :data:`CELL`-unit squares: a square is blocked within :data:`CLEARANCE` units of a
    line the player cannot cross (one-sided, flagged impassable, a step of more than 24 units,
    Doom's ``MAXSTEP``, or an opening under the player's 56 units of height, with door sectors
    counted open, and locked doors closed unless their key is held; a lift's sector joins its
    neighbours whatever their floors) or of a solid thing. Shortest paths are scipy's Dijkstra over
    the free squares (8 neighbours; a diagonal only between two free squares).
    """

    def __init__(self, level: Level, keys: frozenset[str] = frozenset()):
        from scipy import sparse

        self.level = level
        xs = [p[0] for line in level.lines for p in (line.start, line.end)]
        ys = [p[1] for line in level.lines for p in (line.start, line.end)]
        self.origin = (min(xs) - 2 * CELL, min(ys) - 2 * CELL)
        self.shape = (
            int((max(ys) - self.origin[1]) // CELL) + 3,
            int((max(xs) - self.origin[0]) // CELL) + 3,
        )
        rows, cols = np.mgrid[0 : self.shape[0], 0 : self.shape[1]]
        centres = np.stack(
            [self.origin[0] + (cols + 0.5) * CELL, self.origin[1] + (rows + 0.5) * CELL], axis=-1
        )
        blocked = np.zeros(self.shape, bool)
        for line in level.lines:
            if self._blocks(line, keys):
                box = self._box(
                    min(line.start[0], line.end[0]),
                    min(line.start[1], line.end[1]),
                    max(line.start[0], line.end[0]),
                    max(line.start[1], line.end[1]),
                    CLEARANCE,
                )
                blocked[box] |= _distance_to_segment(centres[box], line.start, line.end) < CLEARANCE
        for thing in level.things:
            if thing.type in SOLID_THINGS and not thing.flags & 16:
                blocked[self._box(thing.x, thing.y, thing.x, thing.y, 20 + CLEARANCE)] = True
        self.blocked = blocked
        free = ~blocked.ravel()
        index = np.arange(blocked.size).reshape(self.shape)
        sources, targets, weights = [], [], []
        for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
            a = index[
                max(-dr, 0) : self.shape[0] - max(dr, 0), max(-dc, 0) : self.shape[1] - max(dc, 0)
            ].ravel()
            b = index[
                max(dr, 0) : self.shape[0] + min(dr, 0) or None,
                max(dc, 0) : self.shape[1] + min(dc, 0) or None,
            ].ravel()
            ok = free[a] & free[b]
            if dr and dc:  # a diagonal only between two free squares
                ok &= free[a + dc] & free[a + dr * self.shape[1]]
            (
                sources.append(a[ok]),
                targets.append(b[ok]),
                weights.append(np.full(ok.sum(), math.hypot(dr, dc) * CELL)),
            )
        self._graph = sparse.coo_matrix(
            (np.concatenate(weights), (np.concatenate(sources), np.concatenate(targets))),
            shape=(blocked.size,) * 2,
        ).tocsr()

    def _box(
        self, x1: float, y1: float, x2: float, y2: float, margin: float
    ) -> tuple[slice, slice]:
        """The grid's squares whose centres may lie within ``margin`` of the box
        ``(x1, y1)–(x2, y2)``."""
        to_col = lambda x: min(max(int((x - self.origin[0]) // CELL), 0), self.shape[1])
        to_row = lambda y: min(max(int((y - self.origin[1]) // CELL), 0), self.shape[0])
        return slice(to_row(y1 - margin), to_row(y2 + margin) + 1), slice(
            to_col(x1 - margin), to_col(x2 + margin) + 1
        )

    def _blocks(self, line: Line, keys: frozenset[str]) -> bool:
        level = self.level
        if line.back is None or line.impassable:
            return True
        a, b = line.front, line.back
        if a == b:
            return False
        doors = level.door_sectors
        if any(
            s in doors and doors[s].key is not None and doors[s].key not in keys for s in (a, b)
        ):
            return True
        ceiling = lambda s: level.door_open_height(doors[s]) if s in doors else level.ceilings[s]
        floor_a, floor_b = level.floors[a], level.floors[b]
        if a in level.lifts or b in level.lifts:  # a lift joins its floors whatever their heights
            return False
        return (
            abs(floor_a - floor_b) > MAX_STEP
            or min(ceiling(a), ceiling(b)) - max(floor_a, floor_b) < PLAYER_HEIGHT
        )

    def cell(self, x: float, y: float) -> int:
        row = min(max(int((y - self.origin[1]) // CELL), 0), self.shape[0] - 1)
        col = min(max(int((x - self.origin[0]) // CELL), 0), self.shape[1] - 1)
        return row * self.shape[1] + col

    def centre(self, cell: int) -> tuple[float, float]:
        row, col = divmod(int(cell), self.shape[1])
        return (self.origin[0] + (col + 0.5) * CELL, self.origin[1] + (row + 0.5) * CELL)

    def distances(self, x: float, y: float) -> tuple[np.ndarray, np.ndarray]:
        """Walking distances from ``(x, y)`` to every square, and each square's predecessor (scipy's
        Dijkstra), from the free square nearest ``(x, y)``: the player (radius 16) may stand closer
        to a wall than :data:`CLEARANCE`, in a blocked square."""
        from scipy.sparse.csgraph import dijkstra

        near = [c for c in self._around(x, y, 3 * CELL) if not self.blocked.flat[c]]
        start = (
            min(near, key=lambda c: math.dist(self.centre(c), (x, y))) if near else self.cell(x, y)
        )
        return dijkstra(self._graph, directed=False, indices=start, return_predecessors=True)

    def _around(self, x: float, y: float, near: float) -> list[int]:
        """The squares whose centres lie within ``near`` units of ``(x, y)`` along each axis."""
        return [
            self.cell(x + dx, y + dy)
            for dx in np.arange(-near, near + 1, CELL)
            for dy in np.arange(-near, near + 1, CELL)
        ]

    def route(
        self, start: tuple[float, float], goal: tuple[float, float], near: float = 3 * CELL
    ) -> tuple[float, list[tuple[float, float]]] | None:
        """The walking distance and waypoints (every 4th square's centre, then the last) from
        ``start`` to the reachable square nearest ``goal`` within ``near`` units, or ``None`` when
        none is reachable."""
        distance, previous = self.distances(*start)
        reachable = [c for c in self._around(*goal, near) if np.isfinite(distance[c])]
        if not reachable:
            return None
        end = min(reachable, key=lambda c: (math.dist(self.centre(c), goal), distance[c]))
        path = [end]
        while previous[path[-1]] >= 0:
            path.append(int(previous[path[-1]]))
        path.reverse()
        return float(distance[end]), [self.centre(c) for c in path[4::4]] + [self.centre(end)]


def _distance_to_segment(points: np.ndarray, start, end) -> np.ndarray:
    (ax, ay), (bx, by) = start, end
    dx, dy = bx - ax, by - ay
    t = np.clip(
        ((points[..., 0] - ax) * dx + (points[..., 1] - ay) * dy) / (dx * dx + dy * dy or 1.0),
        0.0,
        1.0,
    )
    return np.hypot(points[..., 0] - ax - t * dx, points[..., 1] - ay - t * dy)
