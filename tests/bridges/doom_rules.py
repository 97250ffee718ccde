"""A user's ViZDoom assertions, as a QA engineer would write them (``--game-arg
assertions=tests.bridges.doom_rules:RULES``)."""

#: Fails once the player walks east of x = -100 on Freedoom 2's MAP01 (the player starts at
#: x = -192).
RULES = {"player stays west of x = -100": lambda v: v["POSITION_X"] < -100}

#: Fails at the first kill: on the ``basic`` scenario, the monster shot (Wuji's winning objective's
#: goal).
NO_KILL = {"nobody is killed": lambda v: v["KILLCOUNT"] < 1}
