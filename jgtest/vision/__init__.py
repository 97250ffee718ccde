"""Learned vision from pixels: the object detector of PPGTA's park
(:mod:`jgtest.vision.detector`)."""
