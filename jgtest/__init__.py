"""jgtest: automated video-game testing with learning agents, in JAX.

Public surface, loaded on first use (PEP 562) so that ``import jgtest`` does not start JAX::

    env, params = jgtest.make("BlockMaze-v0")     # or "gymnax:ID", "craftax:ID"
    jgtest.register("MyGame-v0", MyGame)
    env, params = jgtest.adapt(gymnax_env, gymnax_params, telemetry=fn)
"""

import importlib

__version__ = "0.1.0"

#: public name -> the module that defines it
_LAZY = {
    "BUG_KINDS": "jgtest.envs",
    "TestingEnv": "jgtest.envs",
    "make": "jgtest.envs",
    "register": "jgtest.envs",
    "registered_games": "jgtest.envs",
    "adapt": "jgtest.envs.adapter",
    "Telemetry": "jgtest.types",
    "coverage": None,
    "oracles": None,
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'jgtest' has no attribute {name!r}")
    module = _LAZY[name]
    value = (
        importlib.import_module(f"jgtest.{name}")
        if module is None
        else getattr(importlib.import_module(module), name)
    )
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
