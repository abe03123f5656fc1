"""Former name of :mod:`cjstats.estimators.bayes.gaussian`, kept so that older imports keep working (same module object)."""

import importlib
import sys

sys.modules[__name__] = importlib.import_module("cjstats.estimators.bayes.gaussian")
