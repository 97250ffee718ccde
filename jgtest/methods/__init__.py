"""The test campaigns: each a frozen config plus a ``run(config, out_dir)`` function.

* :mod:`jgtest.methods.random_testing`: the random agent on any on-device game;
* :mod:`jgtest.methods.wuji`: Wuji's six strategies (Zheng et al., 2019);
* :mod:`jgtest.methods.reline`: RELINE and its baselines (Tufano et al., 2022);
* :mod:`jgtest.methods.park`: PPGTA, Inspector and the park's random agent (Abdelfattah, Brown & Zhang).

Explicit plans are in :mod:`jgtest.plans` (their runner, :mod:`jgtest.plans.suite`).
"""
