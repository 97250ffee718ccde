"""Test-session set-up that must happen before JAX starts its CPU backend.

Set in the environment, so that the processes the tests start (the CLI in a subprocess,
notebook kernels) inherit it:

* XLA's multi-threaded Eigen pool on CPU can wedge on vmapped graphs (seen here as a rare
  hang of a repeated ``jit(vmap(train))`` call); a single-threaded Eigen pool cannot
  deadlock, and pytest-xdist already uses both cores.
* LLVM optimisation level 0 instead of XLA's default 2: the tests' tiny configs spend more
  time compiling than running (measured on 2 cores: tests/agents + test_cli + test_api
  224 s at level 2, 167 s at level 1, 147 s at level 0). The main job's test, which runs
  longer than it compiles, runs the job in a process of its own at level 1 (at 0 it took
  255 s against 131 s).
* XLA's older CPU code generation (``--xla_cpu_use_fusion_emitters=false``) instead of its fusion
  emitters: it compiles about twice as fast and runs slower, which the tests' tiny configs gain from
  (the whole default run on 2 cores: 12:10 with the emitters, 9:31 without).
* One persistent compilation cache per test session, shared by the xdist workers and their
  subprocesses: a function compiled by one test (the same game, network and shapes, even
  behind a fresh ``jax.jit``) is loaded, not compiled, by the next (about 15% of the run).
  ``JGTEST_TEST_CACHE=0`` turns it off.

CPU asynchronous dispatch has its own reported hangs (jax-ml/jax#25861); tests wait on
every result anyway, so it is turned off too.
"""

import os

#: The tests' XLA optimisation level (module docstring).
FAST_COMPILE = "--xla_backend_optimization_level=0"

#: The tests' XLA code generation for CPU (module docstring).
FAST_CODEGEN = "--xla_cpu_use_fusion_emitters=false"

for flag in ("--xla_cpu_multi_thread_eigen=false", FAST_COMPILE, FAST_CODEGEN):
    if flag.split("=")[0] not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + flag).strip()


def xla_defaults_env() -> dict:
    """This process's environment with XLA's default optimisation and code generation: for a test
    that runs a user's long command in a process of its own, which runs longer than it compiles (and
    whose floats must match the command's committed figures)."""
    flags = " ".join(
        f for f in os.environ.get("XLA_FLAGS", "").split() if f not in (FAST_COMPILE, FAST_CODEGEN)
    )
    return {**os.environ, "XLA_FLAGS": flags}


if (
    os.environ.get("JGTEST_TEST_CACHE", "1") == "1"
    and "JAX_COMPILATION_CACHE_DIR" not in os.environ
):
    _run = os.environ.get("PYTEST_XDIST_TESTRUNUID") or str(os.getpid())
    os.environ["JAX_COMPILATION_CACHE_DIR"] = os.path.join(
        os.environ.get("TMPDIR", "/tmp"), f"jgtest-jax-cache-{_run}"
    )
    os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0.2"
    os.environ["JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"] = "0"

import jax  # noqa: E402  (after the environment)

jax.config.update("jax_cpu_enable_async_dispatch", False)


def pytest_sessionfinish(session, exitstatus):
    """The session's compilation cache goes with it (removed by the process that made it)."""
    import shutil

    if os.environ.get("PYTEST_XDIST_WORKER") is None and str(os.getpid()) in os.environ.get(
        "JAX_COMPILATION_CACHE_DIR", ""
    ):
        shutil.rmtree(os.environ["JAX_COMPILATION_CACHE_DIR"], ignore_errors=True)


#: Tests of a minute or more, started first so that neither xdist worker is left running one alone
#: at the end.
LONGEST_FIRST = (
    "tests/test_main_job.py",
    "tests/methods/park/test_ppgta.py",
    "tests/test_notebooks.py",
)


def pytest_collection_modifyitems(session, config, items):
    # stable: the rest keep their order
    items.sort(key=lambda item: not item.nodeid.startswith(LONGEST_FIRST))
