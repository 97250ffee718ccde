"""What a run leaves for people: reports, JUnit XML, replay, shrinking, regression runs, plots and
the reproduction pages. The bug records they read are :mod:`jgtest.records`."""
