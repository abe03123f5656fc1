"""Bad input on the newer surfaces (issue 24): each case ends in one sentence (CjstatsError) or one warning naming
the thing and the fix, on every public path that reaches it, never a traceback from numpy, scipy or zipfile.

- degenerate tables in the comparisons (constant scores, no residual variation);
- cjstats warnings survive a package that installs a blanket "ignore" filter (ppi_py does on import);
- reference (human) ratings that are constant, or on another scale for one criterion;
- the DuckDB engine names the right line of a bad value when it scans on several threads; a cut-short Inspect
  log; True/False scores;
- a judge that never scored a model: the advice names the subset that works.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import cjstats as cj
from cjstats import CjstatsError, CjstatsWarning

ROOT = Path(__file__).resolve().parents[1]


def _table(score=None, *, models=("A", "B", "C"), judges=("j1", "j2", "j3"), n=8, m=2, seed=0) -> pd.DataFrame:
    """A complete multi-model table; ``score(model, scenario, generation, judge, rng)`` gives each score."""
    rng = np.random.default_rng(seed)
    rows = [(p, i, g, j, float(rng.integers(1, 10)) if score is None else float(score(p, i, g, j, rng)))
            for p in models for i in range(n) for g in range(m) for j in judges]
    return pd.DataFrame(rows, columns=["model", "scenario", "generation", "judge", "score"])


DEGENERATE = {
    "constant": (lambda p, i, g, j, r: 5.0, r"is constant \(5 in every row of every model\)"),
    "each model constant": (lambda p, i, g, j, r: {"A": 1, "B": 2, "C": 3}[p], "has no residual variation"),
    "model + scenario + judge, no noise": (
        lambda p, i, g, j, r: {"A": 1, "B": 2, "C": 3}[p] + 0.5 * i + {"j1": 0, "j2": 1, "j3": 0.3}[j],
        "has no residual variation"),
}


class TestDegenerateComparisons:
    """Were LinAlgError (Cholesky of the rank covariance), ZeroDivisionError (REML Hessian) or a NaN root-finder
    ValueError; decompose already refused a constant table in one sentence."""

    @pytest.mark.parametrize("case", list(DEGENERATE))
    @pytest.mark.parametrize("call", ["compare anova", "compare reml", "fit_joint anova", "fit_joint reml",
                                      "self_preference anova", "self_preference reml"])
    def test_one_sentence(self, case, call):
        fn, text = DEGENERATE[case]
        df = _table(fn)
        what, method = call.split()
        with pytest.raises(CjstatsError, match=text):
            if what == "compare":
                cj.compare_models(df, method=method)
            elif what == "fit_joint":
                cj.fit_joint(df, method=method)
            else:
                cj.self_preference(df, {"j1": "A"}, method=method)

    @pytest.mark.parametrize("method", ["anova", "reml"])
    def test_duckdb_engine_too(self, tmp_path, method):
        path = tmp_path / "constant.csv"
        _table(DEGENERATE["constant"][0]).to_csv(path, index=False)
        with pytest.raises(CjstatsError, match="is constant"):
            cj.compare_models(str(path), method=method, engine="duckdb")

    def test_one_constant_model_among_varying_ones_still_fits(self):
        df = _table()
        df.loc[df["model"] == "A", "score"] = 0.0          # a model that fails every task: a real result
        res = cj.compare_models(df, method="anova")
        assert np.isfinite(res.differences["std_error"]).all()

    def test_decompose_says_the_same_for_a_constant_table(self):
        with pytest.raises(CjstatsError, match="is constant"):
            cj.estimate(cj.read_scores(_table(DEGENERATE["constant"][0]).query("model == 'A'")), "anova")


class TestJudgeNeverScoredAModel:
    """The ANOVA advised incomplete='drop' or method='reml'; drop then refused for losing every scenario and REML
    for the empty cell. Every path now names the subset that works, and that subset fits."""

    @staticmethod
    def _df():
        df = _table()
        return df[~((df["model"] == "C") & (df["judge"] == "j3"))].reset_index(drop=True)

    @pytest.mark.parametrize("call", [
        lambda d: cj.compare_models(d, method="anova"),
        lambda d: cj.compare_models(d, method="anova", incomplete="drop"),
        lambda d: cj.compare_models(d, method="reml"),
        lambda d: cj.fit_joint(d),
        lambda d: cj.self_preference(d, {"j1": "A"}),
        lambda d: cj.self_preference(d, {"j1": "A"}, incomplete="drop"),
        lambda d: cj.self_preference(d, {"j1": "A"}, method="reml"),
    ], ids=["anova", "anova-drop", "reml", "fit_joint", "self_pref", "self_pref-drop", "self_pref-reml"])
    def test_advice_names_the_subset_that_works(self, call):
        with pytest.raises(CjstatsError) as err:
            call(self._df())
        msg = str(err.value)
        assert "Judge 'j3' never scored model 'C'" in msg
        assert "incomplete='drop' to" not in msg and "use method='reml'" not in msg
        assert "scores.subset(judges=['j1', 'j2'])" in msg
        fit = cj.compare_models(cj.read_scores(self._df()).subset(judges=["j1", "j2"]), method="anova")
        assert fit.fit.judges == ("j1", "j2")

    def test_duckdb_engine_too(self, tmp_path):
        path = tmp_path / "never.csv"
        self._df().to_csv(path, index=False)
        with pytest.raises(CjstatsError, match=r"never scored model 'C'.*subset\(judges="):
            cj.compare_models(str(path), engine="duckdb")

    def test_a_judge_missing_only_some_scenarios_keeps_the_incomplete_advice(self):
        df = _table()
        df = df[~((df["model"] == "C") & (df["judge"] == "j3") & (df["scenario"] < 3))]
        with pytest.raises(CjstatsError, match="Pass incomplete='drop'"):
            cj.compare_models(df, method="anova")


# ------------------------------------------------------------------------------------------ warnings
def _run_fresh(code: str) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "PYTHONWARNINGS": ""}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          timeout=300, cwd=str(ROOT))


class TestWarningsSurviveABlanketIgnore:
    def test_fresh_interpreter_after_ppi_means(self):
        """import cjstats, call ppi_means, import ppi_py (which runs simplefilter("ignore")), then a package
        warning must still reach stderr, and a user's own CjstatsWarning filter must still silence it."""
        pytest.importorskip("ppi_py")
        out = _run_fresh("""
            import warnings
            import cjstats as cj
            cj.ppi_means(cj.datasets.load("mentalalign", humans=True), n_labels=40, seed=0, differences=False)
            import ppi_py  # noqa: F401 -- installs warnings.simplefilter("ignore") for the session
            assert warnings.filters[0][0] == "ignore" and warnings.filters[0][2] is Warning, warnings.filters[0]
            from cjstats._warnings import warn
            warn("PROBE-SHOWN", cj.CjstatsWarning)
            warnings.simplefilter("ignore", cj.CjstatsWarning)   # the user's own choice is kept
            warn("PROBE-SILENCED", cj.CjstatsWarning)
        """)
        assert out.returncode == 0, out.stderr
        assert "CjstatsWarning: PROBE-SHOWN" in out.stderr
        assert "PROBE-SILENCED" not in out.stderr

    def test_fresh_interpreter_real_warning_of_ppi_means(self):
        """A real package warning (too few labels) from ppi_means itself, after import ppi_py."""
        pytest.importorskip("ppi_py")
        out = _run_fresh("""
            import ppi_py  # noqa: F401
            import cjstats as cj
            cj.ppi_means(cj.datasets.load("mentalalign", humans=True), n_labels=4, seed=0, differences=False)
        """)
        assert out.returncode == 0, out.stderr
        assert "CjstatsWarning" in out.stderr and "too few human labels" in out.stderr

    def test_in_process_blanket_ignore(self):
        from cjstats._warnings import warn

        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("ignore")
            warn("shown", CjstatsWarning)
            warnings.simplefilter("ignore", UserWarning)
            warn("shown too", CjstatsWarning)
            warnings.filterwarnings("ignore", message="quiet")
            warn("quiet please", CjstatsWarning)             # a message filter is a deliberate choice
            warnings.simplefilter("ignore", cj.NotEstimableWarning)
            warn("not estimable", cj.NotEstimableWarning)
        assert [str(w.message) for w in rec] == ["shown", "shown too"]
        assert all(w.filename == __file__ for w in rec)     # stacklevel counts from the caller, as warnings.warn

    def test_error_filter_still_raises(self):
        from cjstats._warnings import warn

        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(CjstatsWarning):
                warn("boom", CjstatsWarning)

    def test_no_module_warns_past_the_helper(self):
        """Every cjstats warning goes through cjstats._warnings.warn: no ``warnings.warn(..., CjstatsWarning)``
        (or another cjstats category) called directly in the package."""
        cats = {"CjstatsWarning", "NotEstimableWarning"}
        bad = []
        for path in (ROOT / "cjstats").rglob("*.py"):
            if path.name == "_warnings.py":
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            aliased = any(isinstance(n, ast.ImportFrom) and n.module == "cjstats" and
                          any(a.name == "_warnings" and a.asname == "warnings" for a in n.names)
                          for n in ast.walk(tree))
            for n in ast.walk(tree):
                if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "warn"
                        and isinstance(n.func.value, ast.Name) and n.func.value.id == "warnings" and not aliased):
                    names = {x.id for x in ast.walk(n) if isinstance(x, ast.Name)}
                    if names & cats:
                        bad.append(f"{path.relative_to(ROOT)}:{n.lineno}")
        assert not bad, f"call cjstats._warnings.warn instead of warnings.warn at {bad}"


# ------------------------------------------------------------------------------------------ humans
def _human_table(ref, *, crits=("a", "b"), n=30, seed=0) -> cj.Scores:
    rng = np.random.default_rng(seed)
    rows = []
    for c in crits:
        for p in ("A", "B"):
            for i in range(n):
                t = int(rng.integers(1, 6))
                rows += [(c, p, i, j, float(np.clip(t + rng.integers(-1, 2), 1, 5))) for j in ("j1", "j2")]
                rows.append((c, p, i, "human", float(ref(c, t))))
    df = pd.DataFrame(rows, columns=["criterion", "model", "scenario", "judge", "score"])
    return cj.read_scores(df, reference="human")


HUMAN_CASES = {
    "constant everywhere": (lambda c, t: 3, r"Every reference rating on criterion 'a' is 3 \(and on 1 more "
                                            r"criterion\)"),
    "constant on one criterion": (lambda c, t: 3 if c == "b" else t, "Every reference rating on criterion 'b' is 3"),
    "0-1 on one criterion": (lambda c, t: (t - 1) / 4 if c == "b" else t,
                             r"reference ratings on criterion 'b' range over \[0, 1\] but the judges' scores over "
                             r"\[1, 5\]"),
}


class TestReferenceRatings:
    """Constant ratings were reported as 'different scales' (pooled) or not at all (one criterion); a criterion
    on another scale was hidden by the ranges pooled over criteria."""

    @pytest.mark.parametrize("case", list(HUMAN_CASES))
    @pytest.mark.parametrize("call", ["judge_agreement", "judge_agreement by_model", "ppi_means",
                                      "ppi_means judge", "ppi_means n_labels"])
    def test_one_warning_naming_it(self, case, call):
        fn, text = HUMAN_CASES[case]
        s = _human_table(fn)
        with pytest.warns(CjstatsWarning, match=text) as rec:
            if call == "judge_agreement":
                cj.judge_agreement(s)
            elif call == "judge_agreement by_model":
                cj.judge_agreement(s, by_model=True)
            elif call == "ppi_means":
                cj.ppi_means(s)
            elif call == "ppi_means judge":
                cj.ppi_means(s, judge="j1")
            else:
                cj.ppi_means(s, n_labels=20, seed=0)
        assert not any("different scales" in str(w.message) for w in rec) or "0-1" in case
        assert all(w.filename == __file__ for w in rec if "reference" in str(w.message))

    def test_reference_named_from_the_judges_too(self):
        s = _human_table(lambda c, t: 3)
        df = s.to_frame()
        s2 = cj.read_scores(pd.concat([df, s.reference_frame()[df.columns]], ignore_index=True))
        with pytest.warns(CjstatsWarning, match="Every reference rating on criterion 'a' is 3"):
            cj.judge_agreement(s2, reference="human")

    def test_matching_scales_warn_nothing(self):
        s = _human_table(lambda c, t: t)
        with warnings.catch_warnings():
            warnings.simplefilter("error", CjstatsWarning)
            cj.judge_agreement(s)
            cj.ppi_means(s)


# ------------------------------------------------------------------------------------------ engines, readers
N_BIG, BAD_ROW = 300_000, 249_000


@pytest.fixture(scope="module")
def big_csv(tmp_path_factory):
    """300k rows, a non-numeric score on row 249000 (line 249002)."""
    path = tmp_path_factory.mktemp("duck") / "scores.csv"
    i = np.arange(N_BIG)
    score = (i % 7).astype(str).astype(object)
    score[BAD_ROW] = "oops"
    body = "\n".join(f"m{a},{b},j{c},{d},{e}" for a, b, c, d, e in
                     zip(i % 2, i // 8, (i // 2) % 2, (i // 4) % 2, score))
    path.write_text("model,scenario,judge,generation,score\n" + body + "\n")
    return path


class TestDuckDBLineOnSeveralThreads:
    """With several threads DuckDB numbered the rows of a CSV in the order its threads finished: a wrong line,
    different on each run, for a bad value far down a large file (300k rows is enough to scan in parallel)."""

    N, BAD = N_BIG, BAD_ROW

    def test_right_line_every_run(self, big_csv):
        import duckdb

        from cjstats.stats import build_stats

        con = duckdb.connect()
        con.execute("SET threads = 4")
        for _ in range(3):
            with pytest.raises(CjstatsError, match=rf"first: 'oops' in line {self.BAD + 2}\)"):
                build_stats(str(big_csv), engine="duckdb", connection=con)
        assert con.execute("SELECT current_setting('threads')").fetchall()[0][0] == 4   # settings put back

    def test_line_of_the_second_file(self, tmp_path):
        from cjstats.stats import build_stats

        df = _table(n=4)
        df.iloc[: len(df) // 2].to_csv(tmp_path / "a.csv", index=False)
        b = df.iloc[len(df) // 2:].astype({"score": object}).reset_index(drop=True)
        b.loc[5, "score"] = "bad"
        b.to_csv(tmp_path / "b.csv", index=False)
        with pytest.raises(CjstatsError, match=r"first: 'bad' in line 7 of `.*b\.csv`\)"):
            build_stats(str(tmp_path), engine="duckdb", threads=4)


BOOL_SOURCES = ["frame bool", "frame object bools", "frame text", "csv", "jsonl", "parquet"]


class TestTrueFalseScores:
    @staticmethod
    def _source(kind, tmp_path):
        df = pd.DataFrame([(p, i, j, bool((i + len(j)) % 2)) for p in ("A", "B") for i in range(4)
                           for j in ("j1", "j2")], columns=["model", "scenario", "judge", "score"])
        if kind == "frame bool":
            return df
        if kind == "frame object bools":
            return df.assign(score=df["score"].astype(object))
        if kind == "frame text":
            return df.assign(score=df["score"].map({True: "true", False: "false"}))
        path = tmp_path / f"s.{kind}"
        {"csv": lambda: df.to_csv(path, index=False),
         "jsonl": lambda: df.to_json(path, orient="records", lines=True),
         "parquet": lambda: df.to_parquet(path)}[kind]()
        return str(path)

    @pytest.mark.parametrize("kind", BOOL_SOURCES)
    @pytest.mark.parametrize("engine", ["read_scores", "numpy", "duckdb", "dask"])
    def test_true_false_sentence(self, tmp_path, kind, engine):
        from cjstats.stats import build_stats

        src = self._source(kind, tmp_path)
        if engine == "numpy" and isinstance(src, str):
            pytest.skip("the numpy engine takes a table, not a path")
        if engine == "dask":
            pytest.importorskip("dask")
        if engine == "duckdb":    # out of core: numbers only, one sentence
            with pytest.raises(CjstatsError, match=r"^Column 'score' holds True/False values.*recode them as numbers"):
                build_stats(src, engine=engine)
            return
        # in memory (and dask, which reads its partitions with read_scores): verdicts, mapped and stated (issue 22)
        with pytest.warns(UserWarning, match=r"Column 'score' holds verdicts, read as (True|true) = 1, (False|false) = 0"):
            out = cj.read_scores(src) if engine == "read_scores" else build_stats(src, engine=engine)
        if engine == "read_scores":
            expected = self._source("frame bool", tmp_path)["score"].astype(float).sort_values().to_numpy()
            assert sorted(out.to_frame()["score"]) == list(expected)

    def test_other_text_keeps_the_non_numeric_sentence(self):
        df = pd.DataFrame({"model": "A", "scenario": [0, 1], "judge": "j", "score": ["3", "n/a"]})
        with pytest.raises(CjstatsError, match="1 non-numeric values"):
            cj.read_scores(df)


@pytest.fixture(scope="module")
def eval_log(tmp_path_factory):
    """A real .eval log written offline with the mockllm provider (as tests/test_inspect.py writes them)."""
    pytest.importorskip("inspect_ai")
    sys.path.insert(0, str(Path(__file__).parent))
    import test_inspect as ti
    from inspect_ai.scorer import model_graded_qa

    d = tmp_path_factory.mktemp("inspect_cut")
    ti._run([model_graded_qa(model=ti._mock("ga", ["GRADE: C"] * ti.N_SAMPLES * ti.EPOCHS))], "model-x", d)
    [log] = d.glob("*.eval")
    return log


class TestCutShortInspectLog:

    @pytest.mark.parametrize("keep", [0.3, 0.9, 0.999])
    def test_cut_short(self, eval_log, tmp_path, keep):
        data = eval_log.read_bytes()
        cut = tmp_path / "cut.eval"
        cut.write_bytes(data[: int(len(data) * keep)])
        with pytest.raises(CjstatsError, match=r"is cut short .*rerun the eval or copy the log again") as err:
            cj.read_inspect_log(cut)
        assert "EOCD" not in str(err.value)
        with pytest.raises(CjstatsError, match="is cut short"):
            cj.read_inspect_log(tmp_path)              # the folder path reaches it too

    def test_cut_short_json_log(self, eval_log, tmp_path):
        from inspect_ai.log import read_eval_log, write_eval_log

        full = tmp_path / "full.json"
        write_eval_log(read_eval_log(str(eval_log)), str(full), format="json")
        cut = tmp_path / "cut.json"
        cut.write_bytes(full.read_bytes()[:-200])
        with pytest.raises(CjstatsError, match="is cut short"):
            cj.read_inspect_log(cut)

    @pytest.mark.parametrize("content, text", [(b"", "is empty"), (b"hello" * 20, "not an Inspect .eval log")])
    def test_empty_or_not_a_log(self, tmp_path, content, text):
        pytest.importorskip("inspect_ai")
        path = tmp_path / "x.eval"
        path.write_bytes(content)
        with pytest.raises(CjstatsError, match=text):
            cj.read_inspect_log(path)
