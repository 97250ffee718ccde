"""The docstring examples (``>>>``) of the pure modules run as doctests: each self-contained (its
own imports), each checking the values it shows."""

import doctest
import importlib
import importlib.util
import pkgutil

import pytest

#: The pure modules and packages: games, losses, Pareto tools and operators, coverage, rewards,
#: oracles, novelty, bug records, checkpoints, methods' compatibility with games (no processes,
#: files only where an example makes its own temporary folder).
PURE = (
    "jgtest.envs",
    "jgtest.losses",
    "jgtest.evo",
    "jgtest.oracles",
    "jgtest.novelty",
    "jgtest.coverage",
    "jgtest.rewards",
    "jgtest.envs.registration",
    "jgtest.records",
    "jgtest.checkpoint",
    "jgtest.methods.compatibility",
)


def _modules():
    names = []
    for name in PURE:
        module = importlib.import_module(name)
        names.append(name)
        if hasattr(module, "__path__"):
            names += [m.name for m in pkgutil.walk_packages(module.__path__, name + ".")]
    return sorted(set(names))


WITH_EXAMPLES = [
    name
    for name in _modules()
    if ">>>" in (importlib.util.find_spec(name).loader.get_source(name) or "")
]


def test_the_pure_modules_have_examples():
    assert {
        "jgtest.evo.pareto",
        "jgtest.losses.gae",
        "jgtest.losses.ppo",
        "jgtest.coverage",
        "jgtest.envs.blockmaze",
    } <= set(WITH_EXAMPLES)


@pytest.mark.parametrize("name", WITH_EXAMPLES)
def test_docstring_examples(name):
    result = doctest.testmod(
        importlib.import_module(name),
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
        extraglobs={"__name__": name},
        verbose=False,
    )
    assert result.attempted > 0 and result.failed == 0, (
        f"{name}: {result.failed} of {result.attempted} examples failed (run python -m pytest "
        f"--doctest-modules {name.replace('.', '/')}.py)"
    )
