"""One number-formatting policy (cjstats.results.format), used by text summaries, the HTML report, LaTeX, the CLI."""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import pandas as pd
import pytest

import cjstats as cj
from cjstats.results.format import (
    column_decimals, fixed, format_df, format_frame, format_interval, format_p, format_pm, se_decimals,
    value_decimals,
)


def _decimals(cell: str) -> int:
    m = re.search(r"\.(\d+)", cell)
    return len(m.group(1)) if m else 0


# ------------------------------------------------------------------------------------------------ units
@pytest.mark.parametrize("se, want", [(0.0213, 3), (0.5, 2), (3.2, 1), (0.0114, 3), (0.0099, 4), (12.0, 0)])
def test_significant_digits_come_from_the_standard_error(se, want):
    assert se_decimals(se) == want
    shown = fixed(se, want)
    assert len(shown.lstrip("0.").replace(".", "")) >= 2 or se >= 10     # two significant digits of the SE


@pytest.mark.parametrize("se", [0.0, -1.0, float("nan"), float("inf"), None])
def test_no_standard_error_no_decimals(se):
    assert se_decimals(se) is None


@pytest.mark.parametrize("p, want", [(0.0, "< 1e-300"), (1e-320, "< 1e-300"), (9.9e-301, "< 1e-300"),
                                     (1e-300, "1e-300"), (4.2e-87, "4.2e-87"), (0.0312, "0.031"), (1.0, "1")])
def test_p_values_never_print_zero(p, want):
    assert format_p(p) == want
    assert format_p(p) not in ("0", "0.0", "0.00")


def test_p_below_the_floor_in_latex_is_math():
    assert format_p(0.0, latex=True) == "$<10^{-300}$"
    assert format_p(float("nan")) == "–" and format_p(float("nan"), na="--") == "--"


@pytest.mark.parametrize("df, want", [(29790.0, "29790"), (29790, "29790"), (950.4, "950"), (12.34, "12.3"),
                                      (4.0, "4"), (float("inf"), "inf")])
def test_degrees_of_freedom_are_integers_not_scientific(df, want):
    assert format_df(df) == want
    assert "e+" not in format_df(df)


def test_an_interval_keeps_its_decimals_at_both_ends():
    assert format_interval(0.8602, 1.0, 3) == "[0.860, 1.000]"            # never "[0.8602, 1]"
    assert format_interval(-0.0004, 0.2, 3) == "[0.000, 0.200]"           # no "-0.000"
    assert format_interval(float("nan"), 1.0, 3) == "–"


def test_plus_minus_uses_one_decimals_setting_for_a_column():
    d = column_decimals([0.024, 0.05])
    cells = [format_pm(-9.6e-04, 0.024, d), format_pm(0.0044, 0.05, d)]
    assert cells == ["-0.001 ± 0.024", "0.004 ± 0.050"]                  # not "-9.6e-04 ± 0.024"
    assert all("e-" not in c for c in cells)


def test_a_float_column_without_se_gets_one_decimals_setting():
    assert value_decimals([1.59, 0.01376, 3.497]) == 3
    assert value_decimals([480.0, 96.0]) == 0
    assert fixed(-0.0001, 2) == "0.00"


def test_format_frame_columns_are_consistent():
    frame = pd.DataFrame({
        "model": ["a", "b", "c"], "estimate": [2.3609, 0.1009, 0.4082], "std_error": [0.0371, 0.0093, 0.2898],
        "lower": [2.2871, 0.0696, 0.1455], "upper": [2.4346, 0.1484, 3.3823], "df": [29790.0, 380.0, 12.25],
        "p_value": [0.0, 3e-6, 0.2], "n": [96, 1200, 5], "ok": [True, False, True],
        "ratio": [0.5, 12.25, 0.0301]})
    out = format_frame(frame, se_column="std_error", value_columns=("estimate", "std_error", "lower", "upper"))
    for c in ("estimate", "std_error", "lower", "upper", "ratio"):
        assert len({_decimals(v) for v in out[c]}) == 1, (c, list(out[c]))
    assert _decimals(out["estimate"][0]) == 4                   # the most precise row (se 0.0093) sets the column
    assert list(out["df"]) == ["29790", "380", "12.2"]
    assert list(out["p_value"]) == ["< 1e-300", "3e-06", "0.2"]
    assert list(out["n"]) == ["96", "1,200", "5"] and list(out["ok"]) == ["yes", "no", "yes"]


# ------------------------------------------------------------------------------- the formatter is used
@pytest.fixture(scope="module")
def fit():
    return cj.estimate(cj.datasets.load("hanna", composite=True, keep_sentinels=True).subset(models=["GPT", "Human"]), method="anova")


def test_text_summary_prints_each_row_with_the_decimals_of_its_own_standard_error(fit):
    # Changed with the compact summary: a row no longer takes the decimals of the column's most precise row (the
    # issue's "4.8084562"); each estimate and interval has the decimals its own SE supports, in the compact
    # printout (models side by side) and in the long table (as_long_text) alike.
    from cjstats.results.format import format_interval, row_decimals

    for text in (fit.summary().as_text(), fit.summary().as_long_text()):
        comps, offsets = text.split("Judge offsets")
        for part, table in ((comps, fit.components), (offsets, fit.judge_offsets)):
            for r in table[table["lower"].notna()].itertuples(index=False):
                d = row_decimals(r.std_error, r.estimate, r.lower, r.upper)
                assert f"{fixed(r.estimate, d)}" in part and format_interval(r.lower, r.upper, d) in part, r
        assert "e-0" not in text and "e+0" not in text


def test_the_boundary_footnote_only_when_a_row_is_starred(fit):
    t = fit.components
    clean = dataclasses.replace(fit, components=t.assign(at_boundary=False))
    assert "* at the boundary" not in clean.summary().as_text()
    assert "at the boundary" not in cj.tables.as_latex(clean)
    starred = dataclasses.replace(fit, components=t.assign(at_boundary=t["component"] == "scenario"))
    assert "* at the boundary" in starred.summary().as_text()
    assert "$^*$ at the boundary" in cj.tables.as_latex(starred)


def test_cli_judge_test_prints_p_below_the_floor_and_integer_df():
    from cjstats.reporting.text import render_judges

    scores = cj.datasets.load("hanna", composite=True, keep_sentinels=True).subset(models=["GPT"])
    table = cj.judge_table(scores)
    tests = pd.DataFrame({"model": ["GPT"], "F": [108.0], "df1": [27], "df2": [29790.0], "p_value": [0.0],
                          "method": ["anova"]})
    text = render_judges(tests, table)
    row = next(line for line in text.splitlines() if line.strip().startswith("GPT") and "108" in line)
    assert "< 1e-300" in row and "29790" in row
    assert " 0\n" not in text and "e+04" not in text


def test_latex_frame_prints_p_below_the_floor_and_integer_df():
    tests = pd.DataFrame({"model": ["GPT"], "F": [108.0], "df1": [27], "df2": [29790.0], "p_value": [0.0]})
    tex = cj.tables.as_latex(tests)
    body = tex.split("\\midrule")[1]
    assert "$<10^{-300}$" in body and " 29790 " in body and "29790.000" not in body


def test_html_report_table_uses_the_formatter():
    from cjstats.reporting import format_table

    frame = pd.DataFrame({"estimate": [0.12345, 2.5], "std_error": [0.0213, 0.31], "df": [29790.0, 12.0],
                          "p_value": [0.0, 0.5]})
    t = format_table(frame, se_column="std_error", value_columns=("estimate", "std_error"))
    assert t["rows"] == [["0.123", "0.021", "29790", "< 1e-300"], ["2.500", "0.310", "12", "0.5"]]


def test_compare_text_uses_the_formatter():
    res = cj.compare_models(cj.datasets.load("hanna", composite=True, keep_sentinels=True).subset(models=["GPT", "GPT-2", "CTRL"]),
                            method="anova")
    text = res.as_text()
    d = column_decimals(res.differences["std_error"])
    part = text.split("Paired differences (a minus b)")[1].split("Significance")[0]
    for lo, hi in re.findall(r"\[([-\d.]+), ([-\d.]+)\]", part):
        assert _decimals(lo) == _decimals(hi) == d
    assert not re.search(r"\d\.\d+e[-+]\d\d\s+\[", part)       # no scientific estimate beside an interval
    assert math.isfinite(d)


def test_numbers_are_never_minus_zero():
    assert fixed(-1e-9, 3) == "0.000" and fixed(-0.0, 1) == "0.0" and fixed(np.float64(-0.0004), 3) == "0.000"


def test_known_standard_error_columns_set_their_estimates_decimals_and_probabilities_keep_three():
    frame = pd.DataFrame({"difference": [0.8941, 0.0504], "std_error": [0.0497, 0.0497], "lower": [0.79660, -0.02780],
                          "upper": [0.99170, 0.14790], "bias": [0.1, -0.25], "bias_se": [0.0273, 0.0259],
                          "bias_lower": [-0.358, -0.306], "bias_upper": [-0.25, -0.195], "p_best": [1.0, 0.0],
                          "ci_level": [0.95, 0.95]})
    out = format_frame(frame)
    assert list(out["lower"]) == ["0.797", "-0.028"] and list(out["difference"]) == ["0.894", "0.050"]
    assert list(out["bias_upper"]) == ["-0.250", "-0.195"]
    assert list(out["p_best"]) == ["1.000", "0.000"] and list(out["ci_level"]) == ["0.95", "0.95"]


def test_self_preference_text_uses_the_formatter():
    sp = cj.self_preference(cj.datasets.load("hanna", composite=True, keep_sentinels=True), {"ChatGPT": "GPT"})
    sp = dataclasses.replace(sp, test={**sp.test, "df2": 29790.0, "p_value": 0.0})
    text = sp.as_text()
    assert "on (40, 29790) df, p < 1e-300" in text
    assert "e+04" not in text and "p = 0\n" not in text + "\n"
