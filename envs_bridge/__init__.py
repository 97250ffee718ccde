"""Host bridges: real games behind the host contract (:mod:`envs_bridge.protocol`), built by name.

``ale:GAME``, ``supertuxkart:<track>``, ``vizdoom:LEVEL``, ``gym:ENV_ID``, ``unreal:HOST:PORT``;
any of them as a Ray game farm (``actors=N``, :mod:`envs_bridge.pool`). Each backend is imported
only when its game is asked for (``pip install jgtest[bridges]``).

Example: ``env = envs_bridge.make("ale:MsPacman", num_envs=8)``.
"""

from __future__ import annotations

import functools

PREFIXES = ("ale", "supertuxkart", "unreal", "gym", "vizdoom")
#: The package each bridge drives its games through, from the ``bridges`` extra (Unreal's speaks
#: UnrealCV's protocol itself).
BACKENDS = {"ale": "envpool", "supertuxkart": "pystk2", "gym": "gymnasium", "vizdoom": "vizdoom"}


def is_host_game(name: str) -> bool:
    """Whether ``name`` names a bridged game (``prefix:game``) rather than an on-device one."""
    return name.split(":", 1)[0] in PREFIXES and ":" in name


def game_class(name: str) -> type:
    """The :class:`envs_bridge.protocol.HostEnv` class of the bridged game ``name``, imported but
    not started: what the game provides (``signals``, ``bug_kinds``) without launching it.

    Raises:
      ValueError: an unknown prefix or game.
      BadInput: the bridge's package is not installed (naming the extra).
    """
    prefix, _, game = name.partition(":")
    if prefix in BACKENDS:
        from jgtest.extras import require

        require(BACKENDS[prefix], "bridges", name)
    if prefix == "ale":
        if game == "MsPacman":
            from envs_bridge.ale import MsPacmanEnv

            return MsPacmanEnv
        from envs_bridge.atari import AtariEnv, known_games

        if game not in known_games():
            raise ValueError(
                f"unknown ALE game {game!r}; envpool ships: {', '.join(known_games())}"
            )
        return AtariEnv
    if prefix == "supertuxkart":
        from envs_bridge.supertuxkart import SuperTuxKartEnv

        return SuperTuxKartEnv
    if prefix == "unreal":
        from envs_bridge.unreal import UnrealEnv

        return UnrealEnv
    if prefix == "gym":
        from envs_bridge.gym import GymnasiumEnv

        return GymnasiumEnv
    if prefix == "vizdoom":
        from envs_bridge.vizdoom import VizDoomEnv

        return VizDoomEnv
    raise ValueError(
        f"unknown host game {name!r}; use one of: ale:GAME, supertuxkart:<track>, "
        "unreal:HOST:PORT, gym:ENV_ID, vizdoom:LEVEL"
    )


def game_factory(name: str, **options):
    """A picklable ``() -> HostEnv`` for one game of ``name`` (``options`` go to its constructor).

    Raises:
      ValueError: an unknown prefix or game.
    """
    cls = game_class(name)
    prefix, _, game = name.partition(":")
    if prefix == "supertuxkart":
        from envs_bridge.supertuxkart import DEFAULT_TRACK

        return functools.partial(cls, track=game or DEFAULT_TRACK, **options)
    if prefix == "unreal":
        from envs_bridge.unreal import unreal_game

        return functools.partial(unreal_game, game, **options)
    if prefix in ("gym", "vizdoom") or (prefix == "ale" and game != "MsPacman"):
        return functools.partial(cls, game, **options)
    return functools.partial(cls, **options)


def make(name: str, num_envs: int = 1, seed: int = 0, actors: int = 0, **options):
    """The host game ``name`` with ``num_envs`` games.

    Args:
      name: ``"ale:MsPacman"`` or ``"supertuxkart:<track>"``.
      num_envs: games stepped together. SuperTuxKart runs one race per
        process, so more than one race needs ``actors``.
      seed: seed of game 0 (game ``i`` gets ``seed + i``).
      actors: run the games as a Ray game farm with this many actors (one game
        each; ``num_envs`` is then ``actors``); 0 runs them in this process.
      options: the game's constructor options; with ``actors``, also
        ``ray_address``, ``timeout_s`` and ``on_crash`` for the farm.

    Raises:
      ValueError: unknown game, bad counts or options.
    """
    if actors < 0:
        raise ValueError(f"actors must be >= 0, got {actors}")
    farm_keys = ("ray_address", "timeout_s", "on_crash")
    farm_options = {k: options.pop(k) for k in farm_keys if k in options}
    if actors:
        from envs_bridge.pool import GameFarm

        return GameFarm(
            game_factory(name, num_envs=1, **options),
            actors=actors,
            seed=seed,
            name=name,
            **farm_options,
        )
    if farm_options:
        raise ValueError(f"{', '.join(farm_options)} only apply to a game farm (actors >= 1)")
    return game_factory(name, num_envs=num_envs, **options)(seed=seed)
