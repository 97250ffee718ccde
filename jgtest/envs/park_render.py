"""First-person rendering of PPGTA's park on device: ray casting and billboards (§V-A).

:func:`render` draws one RGB frame and the detector's ground truth (each object's box and
pixels); a texture bug changes how its object is sampled (:func:`sample_texture`).

* chosen: column ray casting with billboards, because it runs on device in fixed shapes.
* chosen: each side of an object shows another face, because the paper's texture test walks
  around an object to see all its faces (§V-B).
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jgtest.envs.park_map import BLOCKAGE, GRASS, PATH, TREE, WATER

#: Object types (PPGTA §V-A: "rock pillars, barrels, tires, and chairs").
OOI_TYPES = ("rock_pillar", "barrel", "tire", "chair")
#: Texture bugs (§V-A: "low-resolution and stretched texture bugs"); 0 is a clean texture.
CLEAN, LOW_RES, STRETCHED = 0, 1, 2
TEXTURE_BUGS = ("clean", "low_resolution", "stretched")
#: Billboard (width, height) of each type, in cells.
OOI_SIZE = np.array([[0.5, 1.4], [0.6, 0.9], [0.8, 0.8], [0.7, 0.95]], np.float32)
TEXELS = 16
#: Low-resolution bug: the texture sampled in blocks of this many texels a side.
LOW_RES_BLOCK = 4
#: Stretched bug: the texture's rows cover this fraction of the object's height (stretched 1/x).
STRETCH = 0.3

SKY_TOP, SKY_HORIZON = np.array([70, 120, 200]), np.array([175, 205, 235])
FLOOR_RGB = {GRASS: (70, 140, 60), PATH: (190, 170, 125), WATER: (45, 95, 170)}
WALL_RGB = {TREE: (40, 85, 40), BLOCKAGE: (140, 95, 50)}
WALL_HEIGHT = {TREE: 1.6, BLOCKAGE: 0.7}
EYE_HEIGHT = 0.5


@dataclasses.dataclass(frozen=True)
class Camera:
    """Static camera settings.

    Attributes:
      res: frame height and width in pixels.
      fov_deg: horizontal field of view (90°: the Unreal shooter template's camera, the paper's
        character, §V-C).
      far: view distance in cells (walls, floor and objects beyond are fog).
      max_visible: objects drawn per frame (the nearest in front); also the size of the box
        arrays.
      pitch_step: horizon shift per look-up/down step, as a fraction of ``res``.
    """

    res: int = 64
    fov_deg: float = 90.0
    far: float = 20.0
    max_visible: int = 8
    pitch_step: float = 0.125

    @property
    def focal(self) -> float:
        return self.res / 2 / np.tan(np.radians(self.fov_deg) / 2)


def make_textures(seed: int = 0) -> np.ndarray:
    """``float32[4, T, T, 4]`` RGBA textures of the four types (procedural, deterministic)."""
    rng = np.random.default_rng(seed)
    t = TEXELS
    y, x = np.mgrid[:t, :t] / (t - 1)
    noise = rng.random((4, t, t))
    tex = np.zeros((4, t, t, 4), np.float32)
    # Rock pillar: grey stone, speckles and two dark vertical cracks.
    rock = 0.5 + 0.25 * noise[0] - 0.3 * ((np.abs(x - 0.3) < 0.05) | (np.abs(x - 0.72) < 0.04))
    tex[0, ..., :3] = rock[..., None] * np.array([0.95, 0.95, 1.0])
    tex[0, ..., 3] = 1.0
    # Barrel: vertical red-brown planks, two dark metal bands, rounded top.
    planks = 0.75 + 0.25 * np.sin(x * np.pi * 7) ** 2 + 0.1 * noise[1]
    bands = (np.abs(y - 0.25) < 0.06) | (np.abs(y - 0.75) < 0.06)
    tex[1, ..., :3] = np.where(
        bands[..., None], 0.15, planks[..., None] * np.array([0.6, 0.3, 0.15])
    )
    tex[1, ..., 3] = ~((y < 0.08) & ((x < 0.12) | (x > 0.88)))
    # Tire: a black ring with grey treads, the hole transparent.
    r = np.hypot(x - 0.5, y - 0.5)
    treads = (np.floor(np.arctan2(y - 0.5, x - 0.5) / (np.pi / 8)) % 2) * 0.25
    tex[2, ..., :3] = (0.08 + treads * (r > 0.38))[..., None] + 0.05 * noise[2][..., None]
    tex[2, ..., 3] = (r <= 0.5) & (r >= 0.22)
    # Chair: light wood, slatted back, a seat, four legs, gaps transparent.
    wood = 0.8 + 0.2 * np.sin(y * np.pi * 9) ** 2 + 0.1 * noise[3]
    tex[3, ..., :3] = wood[..., None] * np.array([0.85, 0.65, 0.35])
    back = (y < 0.5) & ((x < 0.12) | (x > 0.88) | ((np.floor(y * 8) % 2) == 0))
    seat = (y >= 0.5) & (y < 0.62)
    legs = (y >= 0.62) & ((x < 0.12) | (x > 0.88))
    tex[3, ..., 3] = back | seat | legs
    return np.clip(tex, 0.0, 1.0)


def sample_texture(
    textures: jax.Array, kind: jax.Array, bug: jax.Array, u: jax.Array, v: jax.Array, face=0.0
):
    """``(rgb, alpha)`` of object type ``kind`` at billboard coordinates ``u, v ∈ [0, 1)``.

    The shape (alpha) is sampled at ``u``; the colour wraps around the object:
    half the texture's width shows, starting at ``face`` (the viewer's bearing
    around the object over 2π), so that walking around an object shows all its
    faces. The colour is clean at full resolution, ``LOW_RES`` in blocks of
    ``LOW_RES_BLOCK`` texels (a blurry, blocky texture), ``STRETCHED`` with the
    rows squeezed into ``STRETCH`` of the height (the texture stretched over the object).
    """
    t = textures.shape[1]
    row = jnp.clip((v * t).astype(jnp.int32), 0, t - 1)
    alpha = textures[kind, row, jnp.clip((u * t).astype(jnp.int32), 0, t - 1), 3]
    col = jnp.clip((jnp.mod(u * 0.5 + face, 1.0) * t).astype(jnp.int32), 0, t - 1)
    block = LOW_RES_BLOCK
    low = lambda i: (i // block) * block + block // 2
    stretched_row = jnp.clip((v * STRETCH * t).astype(jnp.int32), 0, t - 1)
    row_c = jnp.where(bug == LOW_RES, low(row), jnp.where(bug == STRETCHED, stretched_row, row))
    col_c = jnp.where(bug == LOW_RES, low(col), col)
    return textures[kind, row_c, col_c, :3], alpha


def _cast_walls(solid_drawn: jax.Array, pos: jax.Array, ray: jax.Array, far: float):
    """DDA per column: ``(perpendicular distance, solid type hit (0: none), side, hit u)``."""
    size = solid_drawn.shape[0]
    safe = jnp.where(jnp.abs(ray) < 1e-6, 1e-6, ray)
    delta = jnp.abs(1.0 / safe)  # [W, 2] distance between grid lines along the ray, per axis
    step = jnp.where(ray < 0, -1, 1).astype(jnp.int32)
    cell = jnp.floor(pos).astype(jnp.int32)[None, :].repeat(ray.shape[0], axis=0)
    frac = pos - jnp.floor(pos)
    side_dist = jnp.where(ray < 0, frac, 1.0 - frac) * delta
    steps = int(2 * far + 2)

    def body(carry, _):
        cell, side_dist, hit, kind, side, dist = carry
        along_x = side_dist[:, 0] < side_dist[:, 1]
        axis = jnp.where(along_x, 0, 1)
        this_dist = jnp.where(along_x, side_dist[:, 0], side_dist[:, 1])
        moving = ~hit
        cell = cell + jnp.where(moving[:, None], jax.nn.one_hot(axis, 2, dtype=jnp.int32) * step, 0)
        side_dist = side_dist + jnp.where(moving[:, None], jax.nn.one_hot(axis, 2) * delta, 0.0)
        inside = (cell >= 0).all(axis=1) & (cell < size).all(axis=1)
        row, col = jnp.clip(cell[:, 1], 0, size - 1), jnp.clip(cell[:, 0], 0, size - 1)
        what = jnp.where(inside, solid_drawn[row, col], TREE)
        new_hit = moving & (what > 0) & (this_dist <= far)
        kind = jnp.where(new_hit, what, kind)
        side = jnp.where(new_hit, axis, side)
        dist = jnp.where(new_hit, this_dist, dist)
        return (cell, side_dist, hit | new_hit, kind, side, dist), None

    width = ray.shape[0]
    zeros = jnp.zeros(width, jnp.int32)
    init = (cell, side_dist, jnp.zeros(width, bool), zeros, zeros, jnp.full(width, far))
    (_, _, hit, kind, side, dist), _ = jax.lax.scan(body, init, None, length=steps)
    dist = jnp.maximum(dist, 1e-3)
    hit_point = pos[None, :] + ray * dist[:, None]
    u = jnp.where(side == 0, hit_point[:, 1], hit_point[:, 0])
    return dist, jnp.where(hit, kind, 0), side, u - jnp.floor(u)


class _View(NamedTuple):
    """The camera's rays: its direction, the screen plane, one ray per column ``[W, 2]``, the
    horizon's row and the pixel rows' centres."""

    direction: jax.Array
    plane: jax.Array
    ray: jax.Array
    horizon: jax.Array
    rows: jax.Array


class _Walls(NamedTuple):
    """The walls' columns: distance per column, which pixels they cover and their colours."""

    dist: jax.Array
    in_wall: jax.Array
    rgb: jax.Array


def render(
    camera: Camera,
    floor: jax.Array,
    solid_drawn: jax.Array,
    textures: jax.Array,
    pos: jax.Array,
    yaw: jax.Array,
    pitch: jax.Array,
    eye: jax.Array,
    ooi_pos: jax.Array,
    ooi_type: jax.Array,
    ooi_bug: jax.Array,
):
    """One frame from the camera at ``pos`` (``(x, y)`` cells), ``yaw`` (radians), ``pitch``
    (steps), eye height ``eye``.

    Pure JAX (jit- and vmap-safe, fixed shapes), in four passes:

    1. **Walls** (trees, crates): per screen column a DDA walk over the grid (Amanatides & Woo,
       1987) up to ``far`` cells finds the first drawn solid cell; its perpendicular distance
       sets the wall span on screen and the column's depth (the z-buffer of the billboards).
       Invisible walls are not in the walk.
    2. **Floor and sky**: each pixel below the horizon is cast to the floor point it sees
       (grass, pathway or water, with a per-cell and per-sub-cell pattern so that motion shows);
       above the horizon a sky gradient. Looking up or down moves the horizon (y-shearing); a
       jump raises the camera. Distance fog toward the sky colour.
    3. **Objects of interest** as billboards: the ``max_visible`` nearest objects in front of
       the camera, drawn far to near, each texel tested against the column's wall depth;
       transparent texels (a tire's hole, a chair's gaps) show what is behind. A texture bug
       changes how an object's texture is sampled (:func:`sample_texture`).

    Args:
      camera: the static camera settings.
      floor: ``int[size, size]`` floor types (:mod:`jgtest.envs.park_map`).
      solid_drawn: ``int[size, size]`` the drawn solid cells (trees, crates; 0 elsewhere).
      textures: :func:`make_textures`.
      pos: ``float32[2]`` the camera's ``(x, y)``.
      yaw: radians.
      pitch: look-up/down steps (positive: looking down).
      eye: the camera's height.
      ooi_pos: ``float32[K, 2]`` the objects' ``(x, y)``.
      ooi_type: ``int32[K]`` the objects' types.
      ooi_bug: ``int32[K]`` the objects' texture bugs.

    Returns:
      ``(frame uint8[res, res, 3], objects)``: ``objects`` holds, for the
      ``max_visible`` objects drawn (nearest first), ``id`` (int32, −1 for an
      empty slot), ``box`` (int32[4] ``(row0, col0, row1, col1)``, half-open,
      clipped to the frame) and ``pixels`` (int32, how many of the frame's pixels
      show it); and ``mask`` (int32[res, res], the object each pixel shows, −1 none).
    """
    view = _view(camera, yaw, pitch)
    walls = _draw_walls(camera, view, solid_drawn, pos, eye)
    scene = _draw_floor_and_sky(camera, view, walls, floor, pos, eye)
    return _draw_objects(camera, view, walls, scene, textures, pos, eye, ooi_pos, ooi_type, ooi_bug)


def _view(camera: Camera, yaw: jax.Array, pitch: jax.Array) -> _View:
    res, focal = camera.res, camera.focal
    direction = jnp.stack([jnp.cos(yaw), jnp.sin(yaw)])
    plane = jnp.stack([-jnp.sin(yaw), jnp.cos(yaw)]) * (res / 2 / focal)
    cam_x = 2.0 * (jnp.arange(res) + 0.5) / res - 1.0
    # [W, 2], unit component along direction
    ray = direction[None, :] + cam_x[:, None] * plane[None, :]
    # Looking down (pitch > 0) raises the horizon.
    horizon = res / 2 - pitch * camera.pitch_step * res
    rows = jnp.arange(res) + 0.5
    return _View(direction, plane, ray, horizon, rows)


def _draw_walls(camera: Camera, view: _View, solid_drawn, pos, eye) -> _Walls:
    """Pass 1 of :func:`render`: the walls' spans, colours and depths."""
    focal, rows, horizon = camera.focal, view.rows, view.horizon
    wall_dist, wall_kind, wall_side, wall_u = _cast_walls(solid_drawn, pos, view.ray, camera.far)
    wall_h = jnp.asarray([0.0, WALL_HEIGHT[TREE], WALL_HEIGHT[BLOCKAGE], 0.0])[wall_kind]
    wall_top = horizon + (eye - wall_h) * focal / wall_dist
    wall_bottom = horizon + eye * focal / wall_dist
    in_wall = (
        (wall_kind > 0)[None, :]
        & (rows[:, None] >= wall_top[None, :])
        & (rows[:, None] < wall_bottom[None, :])
    )
    colours = [[0, 0, 0], WALL_RGB[TREE], WALL_RGB[BLOCKAGE], [0, 0, 0]]
    wall_rgb = jnp.asarray(colours, jnp.float32)[wall_kind]
    stripes = 0.85 + 0.15 * jnp.sin(wall_u * 2 * jnp.pi * 3)
    wall_rgb = wall_rgb * (stripes * jnp.where(wall_side == 1, 0.75, 1.0))[:, None]
    wall_v = (rows[:, None] - wall_top[None, :]) / jnp.maximum(wall_bottom - wall_top, 1e-3)[
        None, :
    ]
    wall_rgb = wall_rgb[None, :, :] * (0.8 + 0.2 * (jnp.floor(wall_v * 6) % 2))[..., None]
    return _Walls(wall_dist, in_wall, wall_rgb)


def _draw_floor_and_sky(camera: Camera, view: _View, walls: _Walls, floor, pos, eye) -> jax.Array:
    """Pass 2 of :func:`render`: floor, sky and walls with the distance fog (``[H, W, 3]``)."""
    res, focal, far, rows, horizon = camera.res, camera.focal, camera.far, view.rows, view.horizon
    below = rows > horizon
    floor_dist = jnp.where(below, eye * focal / jnp.maximum(rows - horizon, 1e-3), far)  # [H]
    point = pos[None, None, :] + view.ray[None, :, :] * floor_dist[:, None, None]  # [H, W, 2]
    size = floor.shape[0]
    cx = jnp.floor(point[..., 0]).astype(jnp.int32)
    cy = jnp.floor(point[..., 1]).astype(jnp.int32)
    on_map = (cx >= 0) & (cx < size) & (cy >= 0) & (cy < size)
    tile = jnp.where(on_map, floor[jnp.clip(cy, 0, size - 1), jnp.clip(cx, 0, size - 1)], GRASS)
    colours = [FLOOR_RGB[GRASS], FLOOR_RGB[PATH], FLOOR_RGB[WATER]]
    floor_rgb = jnp.asarray(colours, jnp.float32)[tile]
    sub = jnp.floor(point * 4).astype(jnp.int32)
    pattern = 0.88 + 0.08 * ((cx + cy) % 2) + 0.06 * ((sub[..., 0] + sub[..., 1]) % 2)
    floor_rgb = floor_rgb * pattern[..., None]
    t_sky = jnp.clip((horizon - rows) / res, 0.0, 1.0)[:, None]
    sky_rgb = SKY_HORIZON + (SKY_TOP - SKY_HORIZON) * t_sky  # [H, 3]
    scene = jnp.where(below[:, None, None], floor_rgb, sky_rgb[:, None, :])
    scene = jnp.where(walls.in_wall[..., None], walls.rgb, scene)
    depth = jnp.where(
        walls.in_wall, walls.dist[None, :], jnp.where(below[:, None], floor_dist[:, None], far)
    )
    fog = jnp.clip(depth / far, 0.0, 1.0) ** 2
    return scene * (1 - fog[..., None]) + SKY_HORIZON * fog[..., None]


def _draw_objects(
    camera, view: _View, walls: _Walls, scene, textures, pos, eye, ooi_pos, ooi_type, ooi_bug
):
    """Pass 3 of :func:`render`: the ``max_visible`` nearest objects in front, far to near;
    ``(frame, objects)`` as :func:`render` returns them."""
    res, focal, far, k = camera.res, camera.focal, camera.far, camera.max_visible
    rows, horizon, plane = view.rows, view.horizon, view.plane
    rel = ooi_pos - pos[None, :]
    obj_depth = rel @ view.direction
    lateral = rel @ (plane / jnp.linalg.norm(plane))
    half_fov = res / 2 / focal
    in_front = (
        (obj_depth > 0.3) & (obj_depth < far) & (jnp.abs(lateral) < (half_fov * obj_depth + 1.0))
    )
    _, nearest = jax.lax.top_k(jnp.where(in_front, -obj_depth, -jnp.inf), k)
    nearest = nearest[::-1]  # far to near
    valid = in_front[nearest]
    ids = jnp.where(valid, nearest, -1)

    # One object over what is drawn so far (a scan, not k unrolled copies: a smaller program).
    def draw(carry, slot):
        frame, owner = carry
        i = nearest[slot]
        d = jnp.maximum(obj_depth[i], 1e-3)
        kind = ooi_type[i]
        width, height = jnp.asarray(OOI_SIZE)[kind, 0], jnp.asarray(OOI_SIZE)[kind, 1]
        centre = res / 2 + lateral[i] * focal / d
        half_w = width / 2 * focal / d
        top, bottom = horizon + (eye - height) * focal / d, horizon + eye * focal / d
        u = (jnp.arange(res) + 0.5 - (centre - half_w)) / (2 * half_w)  # [W]
        v = (rows - top) / jnp.maximum(bottom - top, 1e-3)  # [H]
        inside = (u >= 0)[None, :] & (u < 1)[None, :] & (v >= 0)[:, None] & (v < 1)[:, None]
        # The viewer's bearing around the object.
        face = jnp.arctan2(-rel[i, 1], -rel[i, 0]) / (2 * jnp.pi)
        rgb, alpha = sample_texture(textures, kind, ooi_bug[i], u[None, :], v[:, None], face)
        # Per pixel: an object shows above a low wall in front.
        occluded = walls.in_wall & (walls.dist < d)[None, :]
        shown = valid[slot] & inside & (alpha > 0.5) & ~occluded
        obj_fog = jnp.clip(d / far, 0.0, 1.0) ** 2
        colour = rgb * 255.0 * (1 - obj_fog) + SKY_HORIZON * obj_fog
        box = jnp.stack([top, centre - half_w, bottom, centre + half_w])
        box = jnp.stack([jnp.floor(box[0]), jnp.floor(box[1]), jnp.ceil(box[2]), jnp.ceil(box[3])])
        box = jnp.clip(box, 0, res)
        return (
            jnp.where(shown[..., None], _pixels(colour), frame),
            jnp.where(shown, slot, owner),
        ), box

    # Drawn as uint8 from the start: a billboard replaces pixels, it does not blend, so rounding
    # first gives the same frame with a quarter of the memory traffic.
    init = (_pixels(scene), jnp.full((res, res), -1, jnp.int32))
    (frame, owner), boxes = jax.lax.scan(draw, init, jnp.arange(k))
    # Counted by a histogram: comparing every pixel with every slot made a [k, H, W] array that
    # XLA's CPU backend wrote out in full before summing it.
    pixels = jnp.bincount(owner.ravel() + 1, length=k + 1)[1:].astype(jnp.int32)
    order = jnp.arange(k)[::-1]  # nearest first
    objects = {
        "id": ids[order],
        "box": boxes.astype(jnp.int32)[order],
        "pixels": pixels[order],
        "mask": jnp.where(owner >= 0, ids[jnp.maximum(owner, 0)], -1),
    }
    return frame, objects


def _pixels(rgb: jax.Array) -> jax.Array:
    """``uint8`` pixels of float RGB values: rounded and clipped to [0, 255]."""
    return jnp.clip(jnp.round(rgb), 0, 255).astype(jnp.uint8)
