"""Advice speaks the syntax of the surface that prints it, the library says what method='auto' would do, and a
self-preference panel with only family judges gets a caution (issue: "Right on real data, part 2", item 5)."""
import re
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))
import cjstats as cj  # noqa: E402
from cjstats.cli._app import as_flags  # noqa: E402
from cli_helpers import run_main  # noqa: E402

PYTHON_CALL = re.compile(r"\b[a-z_]+=['\"][\w-]+['\"]|\bcj\.\w+\(")


@pytest.mark.parametrize(("text", "want"), [
    ("use model_scenario='per_model' so that", "use --model-scenario per-model so that"),
    ("Use model_scenario='pooled' (one", "Use --model-scenario pooled (one"),
    ('use thresholds="shared"', "use --thresholds shared"),
    ("or use method='bayes', whose", "or use --method bayes, whose"),
    ('consider cj.estimate(scores, method="ordinal")', "consider cjstats decompose FILE --method ordinal"),
    ("try link='logit'", "try --link logit"),
])
def test_library_advice_becomes_flags(text, want):
    assert as_flags(text) == want
    assert not PYTHON_CALL.search(as_flags(text))


def _verdicts(tmp_path):
    rng = np.random.default_rng(1)
    rows = [("m", f"s{i}", f"j{l}", 1 if l == 0 else int(rng.normal() + 0.3 * l > 0)) for i in range(30)
            for l in range(4)]
    path = tmp_path / "v.csv"
    pd.DataFrame(rows, columns=["model", "scenario", "judge", "score"]).to_csv(path, index=False)
    return path


def _one_scenario_model(tmp_path):
    rng = np.random.default_rng(0)
    rows = [(m, f"s{i}", f"j{l}", rng.normal()) for m in "abc" for i in (range(20) if m != "c" else [0])
            for l in range(3)]
    path = tmp_path / "pm.csv"
    pd.DataFrame(rows, columns=["model", "scenario", "judge", "score"]).to_csv(path, index=False)
    return path


@pytest.mark.parametrize("case", ["separation", "per_model"])
def test_cli_output_names_no_python_argument(tmp_path, case):
    if case == "separation":
        code, out, err = run_main(["decompose", str(_verdicts(tmp_path)), "--method", "ordinal"])
        assert code == 0 and "separation" in err
    else:
        code, out, err = run_main(["compare", str(_one_scenario_model(tmp_path)), "--model-scenario", "per-model"])
        assert code == 1 and "--model-scenario pooled" in err
    assert not PYTHON_CALL.search(out + err), PYTHON_CALL.search(out + err)


def test_library_error_says_what_auto_would_do():
    rng = np.random.default_rng(0)
    rows = [(m, f"s{i}", f"j{l}", rng.normal()) for m in "ab" for i in range(10) for l in range(3)]
    df = pd.DataFrame(rows, columns=["model", "scenario", "judge", "score"]).drop(index=[3])
    for call in (cj.compare_models, cj.estimate):
        with pytest.raises(cj.CjstatsError, match="method='auto', the command line's default"):
            call(df)


def test_self_preference_with_only_family_judges_is_cautioned():
    rng = np.random.default_rng(0)
    rows = [(m, f"s{i}", f"j{l}", rng.normal()) for m in "abc" for i in range(15) for l in range(2)]
    df = pd.DataFrame(rows, columns=["model", "scenario", "judge", "score"])
    with pytest.warns(cj.CjstatsWarning, match="Every judge of the panel belongs to the family of 'a'"):
        cj.self_preference(df, {"j0": "a", "j1": "a"})
    with warnings.catch_warnings():
        warnings.simplefilter("error", cj.CjstatsWarning)
        cj.self_preference(df, {"j0": "a"})
