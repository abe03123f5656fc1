"""The docstrings' examples run and print what they say (they are the first code a reader copies)."""
from __future__ import annotations

import doctest
import importlib
import pkgutil
import warnings

import pytest

import cjstats

MODULES = sorted(m.name for m in pkgutil.walk_packages(cjstats.__path__, "cjstats.")
                 if ".cli" not in m.name and not m.name.endswith("__main__"))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    try:
        mod = importlib.import_module(name)
    except ImportError as exc:        # an optional extra's module
        pytest.skip(f"{name} needs an optional package: {exc}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed"
