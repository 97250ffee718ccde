"""PPGTA's comparison on the park (Abdelfattah, Brown & Zhang): the agents and their shared campaign.

* :mod:`~jgtest.methods.park.inspector`: Inspector (PPO on RND curiosity, §VI-A's baseline) and the
  random agent;
* :mod:`~jgtest.methods.park.ppgta`: PPGTA's preference-conditioned explorer, its models trained
  first (:mod:`~jgtest.methods.park.models`: demonstrations, inverse dynamics, imitation, the
  detector and the texture oracle);
* :mod:`~jgtest.methods.park.ooi_testing`: the object-of-interest tests all three agents run;
* :mod:`~jgtest.methods.park.campaign`: the episodes, checkpoints, records and summary they share;
* :mod:`~jgtest.methods.park.bridged`: the agents trained on device, driving an Unreal game;
* :mod:`~jgtest.methods.park.compare`: the three over the same episodes and starts, and the tables.

Each agent's one entry is its module's ``run(config, out_dir)``.
"""
