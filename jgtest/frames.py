"""Pure frame functions shared by the games' wrappers, the host loop and the learners: grayscale,
resize, frame stacks and PPGTA's object-detection mask (§3.2).

Every function is jit- and vmap-safe and keeps the frame's dtype (``uint8`` rounded), so an agent
sees the same observation on device (:mod:`jgtest.envs.wrappers`) and on a real game
(:class:`jgtest.envs.wrappers.ObservationPipeline`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

#: ITU-R BT.601 luma weights, as in OpenCV's and Pillow's RGB to grayscale.
LUMA = (0.299, 0.587, 0.114)


def grayscale(frame: jax.Array) -> jax.Array:
    """``[..., H, W, 3]`` RGB to ``[..., H, W]`` luma, same dtype (uint8 rounded)."""
    luma = jnp.tensordot(
        frame.astype(jnp.float32), jnp.asarray(LUMA, jnp.float32), axes=([-1], [0])
    )
    if jnp.issubdtype(frame.dtype, jnp.integer):
        return jnp.clip(jnp.round(luma), 0, 255).astype(frame.dtype)
    return luma.astype(frame.dtype)


def resize(frame: jax.Array, size: tuple[int, int]) -> jax.Array:
    """Resizes ``[H, W, C]`` (or ``[H, W]``) to ``size`` with antialiased bilinear
    interpolation (``jax.image.resize``), keeping the dtype."""
    shape = (*size, *frame.shape[2:])
    out = jax.image.resize(frame.astype(jnp.float32), shape, method="linear", antialias=True)
    if jnp.issubdtype(frame.dtype, jnp.integer):
        return jnp.clip(jnp.round(out), 0, 255).astype(frame.dtype)
    return out.astype(frame.dtype)


def gray_resized(frame: jax.Array, size: tuple[int, int]) -> jax.Array:
    """``[..., H, W, 1|3]`` frames to grayscale ``[..., *size, 1]`` (same dtype)."""
    gray = grayscale(frame) if frame.shape[-1] == 3 else frame[..., 0]
    if gray.shape[-2:] == tuple(size):
        return gray[..., None]
    return jax.vmap(lambda g: resize(g, size))(gray.reshape(-1, *gray.shape[-2:])).reshape(
        *gray.shape[:-2], *size, 1
    )


def stack_fill(frame: jax.Array, num_frames: int) -> jax.Array:
    """``[..., C]`` to ``[..., num_frames * C]``: the stack of an episode's first frame."""
    return jnp.tile(frame, (1,) * (frame.ndim - 1) + (num_frames,))


def stack_push(frames: jax.Array, frame: jax.Array) -> jax.Array:
    """``frames`` (``[..., K * C]``, oldest first) with ``frame`` appended and the oldest dropped.

    Computed as a shift of the flat buffer by ``C`` (every pixel's channels move
    down by one frame, contiguously) and the new frame written into the last
    ``C`` channels, which the shift filled with the next pixel's: the same
    result as concatenating along the minor axis, ≈ 1.7× faster on XLA's CPU
    backend (8 stacks of 84×84×4: 0.07 ms against 0.12).
    """
    c = frame.shape[-1]
    shifted = jnp.roll(frames.reshape(-1), -c).reshape(frames.shape)
    return jax.lax.dynamic_update_slice(
        shifted, frame.astype(frames.dtype), (0,) * (frames.ndim - 1) + (frames.shape[-1] - c,)
    )


def od_mask(frame: jax.Array, box: jax.Array) -> jax.Array:
    """PPGTA's object-detection mask: the frame in grayscale except inside ``box``.

    PPGTA (§3.2, masked inverse dynamics) keeps the colours of the object under
    test and greys out the rest of the frame.

    Args:
      frame: ``[H, W, 3]`` RGB frame.
      box: ``int32[4]`` ``(row0, col0, row1, col1)``, half-open pixel box.

    Returns:
      ``[H, W, 3]`` frame, colour inside the box, gray (replicated) outside.
    """
    h, w = frame.shape[:2]
    rows = jnp.arange(h)[:, None]
    cols = jnp.arange(w)[None, :]
    inside = (rows >= box[0]) & (rows < box[2]) & (cols >= box[1]) & (cols < box[3])
    gray = jnp.repeat(grayscale(frame)[..., None], 3, axis=-1)
    return jnp.where(inside[..., None], frame, gray)
