"""Fixtures of the scale tests."""

from __future__ import annotations

import pandas as pd
import pytest
from _scale_helpers import TABLES


@pytest.fixture(params=sorted(TABLES))
def table(request) -> tuple[str, pd.DataFrame]:
    return request.param, TABLES[request.param]().reset_index(drop=True)
