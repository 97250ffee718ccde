"""The agents of PPGTA's comparison on the park (Abdelfattah, Brown & Zhang, §VI-A).

:mod:`~jgtest.methods.park.ppgta` (with :mod:`~jgtest.methods.park.models`),
:mod:`~jgtest.methods.park.inspector` (Inspector and random), their object tests
(:mod:`~jgtest.methods.park.ooi_testing`) and campaign (:mod:`~jgtest.methods.park.campaign`),
over Unreal (:mod:`~jgtest.methods.park.bridged`) and on a level
(:mod:`~jgtest.methods.park.level_campaign`). Each agent's entry is its module's
``run(config, out_dir)``.
"""
