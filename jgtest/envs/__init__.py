"""On-device games (gymnax 1.x environments with jgtest telemetry)."""

from jgtest.envs.base import BUG_KINDS, TestingEnv
from jgtest.envs.blockmaze import BlockMaze
from jgtest.envs.cartpole_bugs import CartPoleBugs
from jgtest.envs.combat import CombatArena
from jgtest.envs.dungeon import Dungeon
from jgtest.envs.dungeon_nav import DungeonNav
from jgtest.envs.kart import KartTrack
from jgtest.envs.nsh_arena import NSHArena
from jgtest.envs.pacmaze import PacMaze
from jgtest.envs.park import ParkWorld
from jgtest.envs.registration import make, register, registered_games

register("BlockMaze-v0", BlockMaze)
register("CartPoleBugs-v0", CartPoleBugs)
register("PacMaze-v0", PacMaze)
register("CombatArena-v0", CombatArena)
register("NSHArena-v0", NSHArena)
register("KartTrack-v0", KartTrack)
register("ParkWorld-v0", ParkWorld)
register("Dungeon-v0", Dungeon)
register("DungeonNav-v0", DungeonNav)

#: The games jgtest ships (the registry may hold a user's too).
BUILT_IN_GAMES = registered_games()

__all__ = [
    "BUG_KINDS",
    "BUILT_IN_GAMES",
    "TestingEnv",
    "BlockMaze",
    "CartPoleBugs",
    "CombatArena",
    "Dungeon",
    "DungeonNav",
    "KartTrack",
    "NSHArena",
    "PacMaze",
    "ParkWorld",
    "make",
    "register",
    "registered_games",
]
