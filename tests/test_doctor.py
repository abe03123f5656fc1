"""`cjstats doctor` and cjstats.results.diagnosis.diagnose (issue 23): the format is detected, the design counted
and the commands printed for every fixture of the eval-tool readers, for long, wide and covariate tables, and for
the bundled datasets."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cjstats.exceptions import CjstatsError
from cjstats.io.doctor import detect_format, score_kind
from cjstats.results.diagnosis import Diagnosis, diagnose
from cli_helpers import run_main

DATA = Path(__file__).parent / "data"
LM_SAMPLES = sorted((DATA / "lm_eval").rglob("samples_*.jsonl"))[0]


@pytest.mark.parametrize("path, fmt, models, judges, kind", [
    (DATA / "promptfoo" / "results.json", "promptfoo", 2, 2, "continuous"),   # `contains` is a check, no judge
    (DATA / "deepeval" / "test_run_model-a.json", "deepeval", 1, 2, "continuous"),
    (LM_SAMPLES, "lm-eval", 1, 2, "binary"),
])
def test_tool_files(path, fmt, models, judges, kind):
    diag = diagnose(path)
    assert diag.format == fmt
    assert len(diag.facts["models"]) == models and len(diag.facts["judges"]) == judges
    assert diag.facts["score_kind"] == kind
    assert diag.commands[0].startswith(f"cjstats doctor {path} -o ")   # a tool file is converted first
    assert any(c.startswith("cjstats decompose ") for c in diag.commands)
    assert ("cjstats compare" in " ".join(diag.commands)) == (models > 1)
    assert isinstance(pickle.loads(pickle.dumps(diag)), Diagnosis)


def _long(rng: np.random.Generator) -> pd.DataFrame:
    rows = [{"model": m, "scenario": s, "generation": 0, "judge": j,
             "score": float(rng.integers(1, 6)), "length": 100 + 10 * s + (m == "b"), "latency": rng.random()}
            for m in ("a", "b") for s in range(6) for j in ("j1", "j2", "j3")]
    return pd.DataFrame(rows)


def test_long_table_covariates_and_kind(tmp_path):
    df = _long(np.random.default_rng(0))
    path = tmp_path / "long.csv"
    df.to_csv(path, index=False)
    diag = diagnose(path)
    assert diag.format == "long"
    # length is constant within a (model, scenario, generation) item; latency varies by judge call
    assert diag.facts["covariates"] == ["length"]
    assert diag.facts["score_kind"] == "ordinal" and diag.facts["n_scenarios"] == 6
    assert diag.facts["ceiling_share"] == pytest.approx(np.mean(df["score"] == df["score"].max()))
    assert diag.commands[0] == f"cjstats decompose {path}"
    assert diag.to_frame().query("item == 'covariates'")["value"].item() == "length"


def test_wide_table_gets_judge_columns(tmp_path):
    df = _long(np.random.default_rng(1)).pivot_table(index=["model", "scenario", "generation"], columns="judge",
                                                     values="score").add_prefix("score_").reset_index()
    path = tmp_path / "wide.csv"
    df.to_csv(path, index=False)
    diag = diagnose(path)
    assert diag.format == "wide:score_*" and diag.facts["judges"] == ["j1", "j2", "j3"]
    assert "--judge-columns 'score_*'" in diag.commands[0]


def test_score_kinds():
    assert score_kind(np.array([0, 1, 1, 0])) == "binary"
    assert score_kind(np.array([1, 2, 3, 4, 5, 5])) == "ordinal"
    assert score_kind(np.arange(20)) == "continuous"
    assert score_kind(np.array([0.5, 0.7, 0.9])) == "continuous"


@pytest.mark.parametrize("name, kind, humans", [("hanna", "continuous", 3), ("mentalalign", "ordinal", 1)])
def test_bundled_datasets(name, kind, humans, tmp_path):
    out = tmp_path / f"{name}.csv"
    code, _, err = run_main(["datasets", "export", name, "-o", str(out)])
    assert code == 0, err
    diag = diagnose(out)
    assert diag.format == "long" and diag.facts["score_kind"] == kind
    assert len(diag.facts["reference_raters"]) == humans
    assert f"cjstats humans {out}" in diag.commands


def test_cli_writes_the_long_table_that_decompose_reads(tmp_path):
    out = tmp_path / "pf.csv"
    code, stdout, err = run_main(["doctor", str(DATA / "promptfoo" / "results.json"), "-o", str(out)])
    assert code == 0, err
    assert "Commands:" in stdout and f"cjstats decompose {out}" in stdout
    assert len(pd.read_csv(out)) == 24                # 12 results x 2 graders; the `contains` check left out
    code, stdout, err = run_main(["decompose", str(out)])
    assert code == 0, err


@pytest.mark.parametrize("content, name, phrase", [
    ('{"hello": 1}', "x.json", "is JSON but not a file cjstats reads"),
    ("a,b\n1,2\n", "x.csv", "has no column 'model'"),
])
def test_foreign_files_one_sentence(tmp_path, content, name, phrase):
    path = tmp_path / name
    path.write_text(content)
    code, stdout, err = run_main(["doctor", str(path)])
    assert code == 1 and "Traceback" not in err and phrase in err, err
    with pytest.raises(CjstatsError):
        detect_format(path) if name.endswith(".json") else diagnose(path)


def test_cli_dataset_and_data_options(tmp_path):
    code, stdout, err = run_main(["doctor", "--dataset", "hanna", "--criteria", "Coherence"])
    assert code == 0, err
    assert "--dataset hanna: long score table" in stdout
    assert "cjstats decompose --dataset hanna --criteria Coherence" in stdout
    df = _long(np.random.default_rng(2)).rename(columns={"judge": "rater"})
    path = tmp_path / "renamed.csv"
    df.to_csv(path, index=False)
    code, stdout, err = run_main(["doctor", str(path), "--columns", "rater=judge"])
    assert code == 0, err
    assert f"cjstats decompose {path} --columns rater=judge" in stdout and "covariate columns: length" in stdout


def test_cli_refuses_table_options_on_a_tool_file():
    code, _, err = run_main(["doctor", str(LM_SAMPLES), "--judges", "x"])
    assert code == 1 and "apply to score tables" in err and "Traceback" not in err


def test_diagnosis_plot_draws_each_judges_shares(tmp_path):
    pytest.importorskip("matplotlib")
    from cjstats.plots import diagnosis_plot

    diag = diagnose(DATA / "promptfoo" / "results.json")
    counts = diag.score_counts
    assert counts.groupby("judge")["count"].sum().to_dict() == {"judge-x": 12, "judge-y": 12}
    assert counts["value"].nunique() == 10            # continuous: every bin, empty ones too
    fig = diagnosis_plot(diag)
    ax = fig.axes[0]
    for judge in ("judge-x", "judge-y"):
        bars = [p for p in ax.patches if p.get_gid() == f"judge:{judge}"]
        assert len(bars) == 10 and sum(b.get_height() for b in bars) == pytest.approx(1.0)
    fig.savefig(tmp_path / "d.png")
    assert Diagnosis.load(diag.save(tmp_path / "saved") or tmp_path / "saved").score_counts.equals(counts)


def test_cli_finds_the_judge_columns_of_a_wide_table(tmp_path):
    df = _long(np.random.default_rng(3)).pivot_table(index=["model", "scenario", "generation"], columns="judge",
                                                     values="score").add_prefix("score_").reset_index()
    path = tmp_path / "wide.csv"
    df.to_csv(path, index=False)
    code, stdout, err = run_main(["doctor", str(path)])
    assert code == 0, err
    assert "judges:            3 (j1, j2, j3)" in stdout
    assert f"cjstats decompose {path} --judge-columns 'score_*'" in stdout
    code, _, err = run_main(["decompose", str(path), "--judge-columns", "score_*"])
    assert code == 0, err
