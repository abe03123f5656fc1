"""Former name of :mod:`cjstats.estimators.reml.core`, kept so that older imports keep working (same module object)."""

import importlib
import sys

sys.modules[__name__] = importlib.import_module("cjstats.estimators.reml.core")
