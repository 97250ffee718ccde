"""The test methods: each a frozen config plus ``run(config, out_dir)``, the whole experiment.

* :mod:`jgtest.methods.random_testing`: the random agent, on device or on a bridged game;
* :mod:`jgtest.methods.wuji`: Wuji's strategies compared (Zheng et al., 2019);
* :mod:`jgtest.methods.reline`: RELINE and its baselines (Tufano et al., 2022);
* :mod:`jgtest.methods.park`: PPGTA and Inspector (Abdelfattah, Brown & Zhang), each agent's
  module with its own ``run`` (:func:`jgtest.methods.park.ppgta.run`,
  :func:`jgtest.methods.park.inspector.run`).

Explicit plans are in :mod:`jgtest.plans` (their runner, :mod:`jgtest.plans.suite`).
"""
