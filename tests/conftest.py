"""Test-session set-up that must happen before JAX starts its CPU backend.

XLA's multi-threaded Eigen pool on CPU can wedge on vmapped graphs (seen here
as a rare hang of a repeated ``jit(vmap(train))`` call); a single-threaded
Eigen pool cannot deadlock, and pytest-xdist already uses both cores. CPU
asynchronous dispatch has its own reported hangs (jax-ml/jax#25861); tests wait
on every result anyway, so it is turned off too.
"""

import os

if "--xla_cpu_multi_thread_eigen" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false").strip()

import jax  # noqa: E402  (after XLA_FLAGS)

jax.config.update("jax_cpu_enable_async_dispatch", False)
