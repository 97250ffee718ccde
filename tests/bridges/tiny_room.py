"""A tiny first-person Gymnasium game the project does not ship, for Inspector on a ``gym:`` game: a
square room of 24 × 24 units with four things in it, seen through a 90° view drawn column by column
(walls by ray casting, things as boxes). Its actions are named as a level's (``ACTION_NAMES``:
forward, turn left and right by 10°, strafe left and right by half a unit), and its telemetry
function reports the player's position, cell (2-unit squares, 144 cells), heading and the things in
view with their screen boxes, as ViZDoom's labels buffer gives them."""

import gymnasium
import numpy as np
from gymnasium import spaces

SIZE, CELL, HEIGHT, WIDTH, FOV = 24.0, 2.0, 120, 160, 90.0
ACTION_NAMES = "MOVE_FORWARD,TURN_LEFT,TURN_RIGHT,MOVE_LEFT,MOVE_RIGHT"
#: The things: name, id, (x, y), colour.
THINGS = (
    ("Barrel", 1, (6.0, 6.0), (200, 40, 40)),
    ("Lamp", 2, (18.0, 6.0), (230, 210, 60)),
    ("Crate", 3, (6.0, 18.0), (150, 100, 40)),
    ("Statue", 4, (18.0, 18.0), (90, 200, 220)),
)
# east, north, west, south
WALL_COLOURS = np.array([(120, 120, 140), (90, 140, 90), (140, 90, 90), (100, 100, 160)], np.uint8)
NUM_CELLS = int(SIZE / CELL) ** 2


class Room(gymnasium.Env):
    metadata = {"render_modes": ["rgb_array"], "render_fps": 35}

    def __init__(self, render_mode=None):
        self.render_mode = render_mode
        self.action_space = spaces.Discrete(5)
        self.observation_space = spaces.Box(0, 255, (HEIGHT, WIDTH, 3), np.uint8)
        self.x = self.y = self.heading = 0.0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.x, self.y = (float(v) for v in self.np_random.uniform(10.0, 14.0, 2))
        self.heading = float(self.np_random.integers(0, 36) * 10.0)
        return self.render(), {}

    def step(self, action):
        rad = np.radians(self.heading)
        forward, left = np.array([np.cos(rad), np.sin(rad)]), np.array([-np.sin(rad), np.cos(rad)])
        move = {0: 0.5 * forward, 3: 0.5 * left, 4: -0.5 * left}.get(int(action), np.zeros(2))
        self.heading = (self.heading + {1: 10.0, 2: -10.0}.get(int(action), 0.0)) % 360.0
        x, y = np.clip([self.x + move[0], self.y + move[1]], 0.5, SIZE - 0.5)
        if all(np.hypot(x - tx, y - ty) >= 0.8 for _, _, (tx, ty), _ in THINGS):  # things are solid
            self.x, self.y = float(x), float(y)
        return self.render(), 0.0, False, False, {}

    def things_in_view(self) -> list[tuple]:
        """``[(name, id, x, y, width, height)]``: each thing in the view with its screen box (the
        farthest first)."""
        seen = []
        for name, oid, (tx, ty), _ in THINGS:
            distance = float(np.hypot(tx - self.x, ty - self.y))
            bearing = (
                np.degrees(np.arctan2(ty - self.y, tx - self.x)) - self.heading + 180.0
            ) % 360.0 - 180.0
            if abs(bearing) < FOV / 2 and distance > 0.3:
                height = min(float(HEIGHT), HEIGHT / distance)
                width, centre = 0.6 * height, WIDTH / 2 - bearing / (FOV / 2) * WIDTH / 2
                seen.append(
                    (
                        distance,
                        (
                            name,
                            oid,
                            round(centre - width / 2),
                            round(HEIGHT / 2 - height / 2),
                            round(width),
                            round(height),
                        ),
                    )
                )
        return [box for _, box in sorted(seen, reverse=True)]

    def render(self):
        frame = np.zeros((HEIGHT, WIDTH, 3), np.uint8)
        frame[HEIGHT // 2 :] = (60, 60, 60)  # the floor
        angles = np.radians(self.heading + np.linspace(FOV / 2, -FOV / 2, WIDTH))
        dx, dy = np.cos(angles), np.sin(angles)
        with np.errstate(divide="ignore"):  # each column's ray to the four walls: the nearest ahead
            hits = np.stack(
                [(SIZE - self.x) / dx, (SIZE - self.y) / dy, -self.x / dx, -self.y / dy]
            )
        hits = np.where(hits > 0, hits, np.inf)
        wall, distance = hits.argmin(axis=0), hits.min(axis=0)
        half = np.minimum(HEIGHT / 2, 0.5 * HEIGHT / np.maximum(distance, 1e-3)).astype(int)
        rows = np.arange(HEIGHT)[:, None]
        on_wall = np.abs(rows - HEIGHT // 2) < half[None]
        frame[on_wall] = np.broadcast_to(WALL_COLOURS[wall][None], (HEIGHT, WIDTH, 3))[on_wall]
        for name, _, x, y, w, h in self.things_in_view():
            colour = next(c for n, _, _, c in THINGS if n == name)
            frame[max(y, 0) : max(y + h, 0), max(x, 0) : max(x + w, 0)] = colour
        return frame


gymnasium.register("TinyRoom-v0", entry_point=Room, max_episode_steps=200)


def telemetry(obs, info, env):
    """Position, cell, heading and the things in view, from the game's state."""
    room = env.unwrapped
    cell = int(room.y // CELL) * int(SIZE / CELL) + int(room.x // CELL)
    return {
        "position": (room.x, room.y),
        "cell": min(cell, NUM_CELLS - 1),
        "angle": room.heading,
        "objects": room.things_in_view(),
    }


telemetry.provides = ("position", "angle", "objects")


def telemetry_bad_objects(obs, info, env):
    return {**telemetry(obs, info, env), "objects": [("Barrel", 1, 0, 0, 10)]}


telemetry_bad_objects.provides = telemetry.provides


def telemetry_without_objects(obs, info, env):
    return {k: v for k, v in telemetry(obs, info, env).items() if k != "objects"}


telemetry_without_objects.provides = telemetry.provides
