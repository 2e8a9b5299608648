"""Settings for the whole pytest suite."""

from __future__ import annotations

import os

from hypothesis import settings

# The property tests are a steady gate in make test, as the fuzzers' fixed
# runs are: the same examples every run, so CI fails on a change, never on
# the draw (a new example found there once failed a submission that changed
# nothing near it). HYPOTHESIS_PROFILE=explore draws new ones; a failure it
# finds goes into the test as an @example.
settings.register_profile("gate", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "gate"))
