"""`cjstats compare FILE --covariates COL`: the library's covariate comparison on the command line (issue 36)."""
import json
import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))
import cjstats as cj  # noqa: E402
from cli_helpers import run_main  # noqa: E402

DATA = Path(__file__).parent / "data" / "lme4_covariates"


@pytest.mark.parametrize("name", ["balanced", "missing_block", "two_covariates_b"])
def test_cli_equals_the_library(name):
    path = DATA / f"{name}.csv"
    df = pd.read_csv(path)
    covs = [c for c in df.columns if c not in ("model", "scenario", "generation", "judge", "score")]
    code, out, err = run_main(["compare", str(path), "--covariates", ",".join(covs), "--format", "json"])
    assert code == 0, err
    got = json.loads(out)
    lib = cj.compare_models(df, covariates=covs)
    want = lib.differences.set_index(["model_a", "model_b"])
    for row in got["differences"]:
        w = want.loc[(row["model_a"], row["model_b"])]
        assert row["difference"] == pytest.approx(w["difference"], abs=1e-10)
        assert row["std_error"] == pytest.approx(w["std_error"], abs=1e-10)
    assert {r["judge"] for r in got["slopes"]} == {*map(str, df["judge"].unique()), "(panel)"}


def test_text_output_prints_the_slopes_and_their_test():
    code, out, err = run_main(["compare", str(DATA / "balanced.csv"), "--covariates", "length"])
    assert code == 0, err
    assert "Judges' slopes" in out and "every judge has the same slope on length" in out
    assert "fit.slopes" not in out                     # the library's wording, rewritten for the command line


def test_data_options_apply_before_the_covariates():
    path = DATA / "balanced.csv"
    df = pd.read_csv(path)
    code, out, err = run_main(["compare", str(path), "--covariates", "length", "--exclude-judges", "j2",
                               "--format", "json"])
    assert code == 0, err
    lib = cj.compare_models(df[df["judge"] != "j2"], covariates=["length"])
    d = json.loads(out)["differences"][0]
    w = lib.differences.set_index(["model_a", "model_b"]).loc[(d["model_a"], d["model_b"])]
    assert d["difference"] == pytest.approx(w["difference"], abs=1e-10)


@pytest.mark.parametrize(("args", "match"), [
    (["--covariates", "lenght"], "names 'lenght', which is not a column of FILE"),
    (["--covariates", "length", "--method", "anova"], "fitted by REML only"),
    (["--covariates", "length", "--engine", "duckdb"], "--engine numpy"),
])
def test_refusals_are_one_sentence(args, match):
    code, out, err = run_main(["compare", str(DATA / "balanced.csv"), *args])
    assert code == 1 and match in err and "Traceback" not in err


def test_a_covariate_that_varies_within_an_item_is_refused(tmp_path):
    df = pd.read_csv(DATA / "balanced.csv")
    df.loc[0, "length"] = df.loc[0, "length"] + 1.0
    path = tmp_path / "t.csv"
    df.to_csv(path, index=False)
    code, out, err = run_main(["compare", str(path), "--covariates", "length"])
    assert code == 1 and "varies within one item" in err


def test_a_text_covariate_is_named(tmp_path):
    df = pd.read_csv(DATA / "balanced.csv")
    df["length"] = df["length"].astype(object)
    df.loc[3, "length"] = "long"
    path = tmp_path / "t.csv"
    df.to_csv(path, index=False)
    code, out, err = run_main(["compare", str(path), "--covariates", "length"])
    assert code == 1 and "'long'" in err


def test_doctor_names_the_covariate_command_and_it_runs():
    path = str(DATA / "balanced.csv")
    code, out, err = run_main(["doctor", path])
    assert code == 0, err
    line = next(x for x in out.splitlines() if "--covariates" in x)
    cmd = line.split(": cjstats ", 1)[1].rstrip(".").split()
    assert "<table>" not in line and cmd[:2] == ["compare", path]
    code, out, err = run_main(cmd)
    assert code == 0, err
    assert "Judges' slopes" in out
