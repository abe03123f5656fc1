"""cj.simulation_study: Morris et al. measures, reproducibility across jobs and resumes, coverage, bad input."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import cjstats as cj
import cjstats.studies.study as study_mod
from cjstats.exceptions import CjstatsError
from cjstats.studies.study import SUMMARY_COLUMNS, summarise_replicates

SMALL = cj.Design(n=12, m=2, k=4)


def _same(a: cj.StudyResult, b: cj.StudyResult) -> None:
    """Identical replicate tables apart from the measured fit times."""
    pd.testing.assert_frame_equal(a.replicates.drop(columns="seconds"), b.replicates.drop(columns="seconds"))


class TestSummaryMeasures:
    """The measures and Monte Carlo SEs of Morris, White & Crowther (2019), by hand on a tiny table."""

    @pytest.fixture
    def tiny(self) -> pd.DataFrame:
        est = [1.0, 2.0, 4.0, np.nan, 3.0]
        return pd.DataFrame({
            "design": "d", "method": "m", "model": "x", "component": "scenario",
            "truth": [2.0, 2.0, 2.0, 2.0, 3.0], "estimate": est,
            "lower": [0.5, 2.5, 1.0, np.nan, np.nan], "upper": [1.5, 3.0, 5.0, np.nan, np.nan],
            "at_boundary": [False, True, False, False, False], "seconds": [1.0, 2.0, 3.0, 4.0, 5.0],
            "error": ["", "", "", "ValueError: failed", ""],
        })

    def test_columns_are_the_issues(self, tiny):
        s = summarise_replicates(tiny)
        assert list(s.columns) == ["design", "method", "model", "component", *SUMMARY_COLUMNS]

    def test_bias_rmse_coverage_and_their_mcse_by_hand(self, tiny):
        row = summarise_replicates(tiny).iloc[0]
        d = np.array([-1.0, 0.0, 2.0, 0.0])  # estimate - truth over the 4 successful fits
        n = 4
        assert row["replicates"] == n
        assert row["truth"] == pytest.approx(np.mean([2, 2, 2, 3]))
        assert row["mean_estimate"] == pytest.approx(2.5)
        assert row["bias"] == pytest.approx(0.25)
        assert row["bias_mcse"] == pytest.approx(np.sqrt(np.sum((d - d.mean()) ** 2) / (n * (n - 1))))
        mse = np.mean(d**2)
        assert row["rmse"] == pytest.approx(math.sqrt(mse))
        mse_mcse = math.sqrt(np.sum((d**2 - mse) ** 2) / (n * (n - 1)))
        assert row["rmse_mcse"] == pytest.approx(mse_mcse / (2 * math.sqrt(mse)))
        # intervals exist for 3 fits; they cover the truth 2.0 in fits 1 ([0.5, 1.5]: no), 2 ([2.5, 3]: no),
        # 3 ([1, 5]: yes)
        assert row["coverage"] == pytest.approx(1 / 3)
        assert row["coverage_mcse"] == pytest.approx(math.sqrt((1 / 3) * (2 / 3) / 3))
        assert row["mean_width"] == pytest.approx(np.mean([1.0, 0.5, 4.0]))
        assert row["median_width"] == pytest.approx(1.0)
        assert row["boundary_rate"] == pytest.approx(1 / 4)
        assert row["failure_rate"] == pytest.approx(1 / 5)
        assert row["seconds_per_fit"] == pytest.approx(3.0)


class TestStudy:
    def test_result_has_one_summary_row_per_design_method_component(self):
        res = cj.simulation_study(cj.Truth.table3(["GPT"]), [SMALL, cj.Design(n=12, m=1, k=4)], ["anova", "reml"],
                                  5, seed=1)
        assert len(res.measures) == 2 * 2 * 7
        assert len(res.replicates) == 2 * 5 * 2 * 7
        # with m = 1 neither generation nor scenario_judge is identifiable: no truth, no estimate, left out
        s = res.measures
        unidentified = (s["design"] == "n=12 m=1 K=4") & s["component"].isin(["generation", "scenario_judge"])
        assert (s.loc[unidentified, "replicates"] == 0).all() and s.loc[unidentified, "truth"].isna().all()
        assert (s.loc[~unidentified, "replicates"] == 5).all()
        for text in (str(res), res.as_markdown(), res.as_latex()):
            assert "coverage" in text and "judge_panel".replace("_", "") in text.replace("_", "").replace("\\", "")

    def test_methods_are_paired_on_the_same_data(self):
        res = cj.simulation_study(cj.Truth.table3(["GPT"]), SMALL, ["anova", ("anova", {"interval": "satterthwaite"})],
                                  4, seed=2)
        r = res.replicates
        a = r[r["method"] == "anova"].reset_index(drop=True)
        b = r[r["method"] == "anova(interval=satterthwaite)"].reset_index(drop=True)
        np.testing.assert_array_equal(a["estimate"], b["estimate"])  # same data, same point estimates

    def test_a_failing_fit_is_recorded_never_fatal(self):
        cyc = cj.Design(n=12, m=1, k=4, k_per_item=2, strategy="cyclic")
        res = cj.simulation_study(cj.Truth.table3(["GPT"]), cyc, ["anova", "reml"], 3, seed=3)
        s = res.measures.set_index(["method", "component"])
        assert s.loc[("anova", "scenario"), "failure_rate"] == 1.0
        assert s.loc[("reml", "scenario"), "failure_rate"] == 0.0
        errs = res.replicates.loc[res.replicates["method"] == "anova", "error"]
        assert errs.str.contains("incomplete").all()


    def test_criteria_get_their_own_rows(self):
        t = cj.Truth.table3(["GPT"], criteria=["helpful", "safe"])
        res = cj.simulation_study(t, SMALL, ["anova"], 2, seed=8)
        assert list(res.measures.columns[:5]) == ["design", "method", "model", "criterion", "component"]
        assert set(res.measures["criterion"]) == {"helpful", "safe"} and len(res.measures) == 14
        assert res.replicates["truth"].notna().sum() == 2 * 2 * 7

    def test_progress_bar_goes_to_stderr_with_the_time_left(self, capsys):
        cj.simulation_study(cj.Truth.table3(["GPT"]), SMALL, ["anova"], 3, seed=9, progress=True)
        captured = capsys.readouterr()
        assert captured.out == ""
        assert "3/3" in captured.err and "rep" in captured.err


class TestReproducible:
    def test_same_replicates_with_one_and_two_jobs(self):
        t = cj.Truth.table3(["GPT"], judges="population")
        designs = [SMALL, cj.Design(n=12, m=1, k=4, k_per_item=2, strategy="random")]
        one = cj.simulation_study(t, designs, ["anova", "reml"], 6, seed=4, jobs=1)
        two = cj.simulation_study(t, designs, ["anova", "reml"], 6, seed=4, jobs=2, batch_size=2)
        _same(one, two)

    def test_a_study_interrupted_and_resumed_from_its_checkpoint_gives_the_same_replicates(self, tmp_path,
                                                                                         monkeypatch):
        t = cj.Truth.table3(["GPT"])
        fresh = cj.simulation_study(t, SMALL, ["anova"], 10, seed=5)
        path = tmp_path / "study.parquet"
        real, calls = study_mod._run_batch, []

        def dies_on_third_batch(*args):
            calls.append(1)
            if len(calls) == 3:
                raise KeyboardInterrupt
            return real(*args)

        monkeypatch.setattr(study_mod, "_run_batch", dies_on_third_batch)
        with pytest.raises(KeyboardInterrupt):
            cj.simulation_study(t, SMALL, ["anova"], 10, seed=5, checkpoint=path, batch_size=2)
        monkeypatch.setattr(study_mod, "_run_batch", real)
        assert pd.read_parquet(path)["replicate"].nunique() == 4
        resumed = cj.simulation_study(t, SMALL, ["anova"], 10, seed=5, checkpoint=path, batch_size=2)
        assert resumed.settings["resumed_replicates"] == 4
        _same(fresh, resumed)

    def test_a_checkpoint_of_a_different_study_is_refused_and_left_untouched(self, tmp_path):
        t = cj.Truth.table3(["GPT"])
        path = tmp_path / "study.parquet"
        cj.simulation_study(t, SMALL, ["anova"], 2, seed=6, checkpoint=path)
        before = path.read_bytes()
        for kwargs in ({"methods": ["anova", "reml"]}, {"designs": cj.Design(n=13, m=2, k=4)},
                       {"truth": cj.Truth.table3(["Qwen"])}):
            args = {"truth": t, "designs": SMALL, "methods": ["anova"], **kwargs}
            with pytest.raises(CjstatsError, match="written by a different study"):
                cj.simulation_study(args["truth"], args["designs"], args["methods"], 2, seed=6, checkpoint=path)
        assert path.read_bytes() == before

    def test_runs_on_a_local_dask_cluster(self):
        distributed = pytest.importorskip("distributed")
        t = cj.Truth.table3(["GPT"])
        local = cj.simulation_study(t, SMALL, ["anova"], 6, seed=7)
        with distributed.LocalCluster(n_workers=2, processes=False, threads_per_worker=1,
                                      dashboard_address=None) as cluster, distributed.Client(cluster) as client:
            on_client = cj.simulation_study(t, SMALL, ["anova"], 6, seed=7, jobs=client)
            on_current = cj.simulation_study(t, SMALL, ["anova"], 6, seed=7, jobs="dask")
        _same(local, on_client)
        _same(local, on_current)


class TestUnderThePapersModel:
    """Balanced design, judges drawn from a population (so judge_population has a truth), 400 replicates,
    fitted with the paper's model (``scenario_judge=False``; the data have no scenario x judge term).

    Coverage of every component must lie within nominal +/- 3 Monte Carlo SEs, with the SE computed at the
    nominal level: 3 sqrt(0.95 x 0.05 / 400) = 0.0327. With 12 checks the chance that one fails by Monte
    Carlo error alone is about 12 x 0.27% = 3%; the seed is fixed, so the outcome is deterministic.
    """

    REPS = 400
    METHODS = {"anova": "anova(scenario_judge=False)", "reml": "reml(scenario_judge=False)"}

    @pytest.fixture(scope="class")
    @classmethod
    def result(cls):
        t = cj.Truth.table3(["Qwen"], judges="population")
        methods = [(m, {"scenario_judge": False}) for m in cls.METHODS]
        return cj.simulation_study(t, cj.Design(n=20, m=2, k=5), methods, cls.REPS, seed=12)

    @pytest.mark.parametrize("method", ["anova", "reml"])
    def test_coverage_of_every_component_is_nominal_within_monte_carlo_error(self, result, method):
        s = result.measures[result.measures["method"] == self.METHODS[method]].set_index("component")
        assert s.loc["scenario_judge", "replicates"] == 0  # not fitted: left out of the measures
        s = s.drop(index="scenario_judge")
        band = 3 * math.sqrt(0.95 * 0.05 / self.REPS)
        assert (s["replicates"] == self.REPS).all()
        off = s[(s["coverage"] - 0.95).abs() > band]
        assert off.empty, f"{method} coverage outside 0.95 +/- {band:.4f}: {off['coverage'].to_dict()}"

    def test_reml_equals_anova_on_interior_fits(self, result):
        r = result.replicates
        r = r[r["component"] != "scenario_judge"]
        a = r[r["method"] == self.METHODS["anova"]].reset_index(drop=True)
        b = r[r["method"] == self.METHODS["reml"]].reset_index(drop=True)
        interior = ~a.groupby("replicate")["at_boundary"].transform("any")
        assert interior.mean() > 0.5
        np.testing.assert_allclose(b["estimate"][interior], a["estimate"][interior], rtol=1e-6, atol=1e-7)


class TestBadInput:
    def test_an_unknown_method_is_named(self):
        with pytest.raises(CjstatsError, match="'methods' argument of simulation_study must be one of"):
            cj.simulation_study(cj.Truth.table3(["GPT"]), SMALL, ["lmer"], 2, seed=1)

    def test_an_unknown_option_is_named_with_the_backends_options(self):
        with pytest.raises(CjstatsError, match="has no option 'ci' \\(options: interval"):
            cj.simulation_study(cj.Truth.table3(["GPT"]), SMALL, [("reml", {"ci": "bootstrap"})], 2, seed=1)

    def test_a_design_with_one_judge_is_refused(self):
        with pytest.raises(CjstatsError, match="'k' argument of Design"):
            cj.simulation_study(cj.Truth.table3(["GPT"]), {"n": 10, "m": 1, "k": 1}, ["anova"], 2, seed=1)

    def test_an_unknown_misspecification_is_named(self):
        with pytest.raises(CjstatsError, match="names 'heavy', which is not a misspecification"):
            cj.simulation_study(cj.Truth.table3(["GPT"]), {"n": 10, "m": 1, "k": 3, "misspec": {"heavy": 1}},
                                ["anova"], 2, seed=1)

    def test_bad_input_writes_no_checkpoint(self, tmp_path):
        path = tmp_path / "study.parquet"
        with pytest.raises(CjstatsError):
            cj.simulation_study(cj.Truth.table3(["GPT"]), SMALL, ["anova", "nope"], 2, seed=1, checkpoint=path)
        assert not path.exists()

    @pytest.mark.parametrize("jobs", [0, "threads", 1.5])
    def test_bad_jobs_is_named(self, jobs):
        with pytest.raises(CjstatsError, match="'jobs' argument of simulation_study"):
            cj.simulation_study(cj.Truth.table3(["GPT"]), SMALL, ["anova"], 2, seed=1, jobs=jobs)


class TestCli:
    ARGS = ["study", "--models", "GPT", "--n", "10", "--m", "2", "--k", "3", "--methods", "anova",
            "--replicates", "3", "--seed", "1"]

    def test_prints_the_summary_table(self, runner):
        from cjstats.cli import cli

        r = runner.invoke(cli, self.ARGS + ["--misspec", "none", "--misspec", "ordinal"])
        assert r.exit_code == 0, r.output
        assert r.output.startswith("Simulation study\n")
        assert "n=10 m=2 K=3 ordinal=10" in r.output

    @pytest.mark.parametrize("fmt", ["json", "csv"])
    def test_machine_formats_carry_the_summary_columns(self, runner, fmt):
        import io
        import json

        from cjstats.cli import cli

        r = runner.invoke(cli, self.ARGS + ["--format", fmt])
        assert r.exit_code == 0, r.output
        cols = list(json.loads(r.output)[0]) if fmt == "json" else list(pd.read_csv(io.StringIO(r.output)).columns)
        assert cols == ["design", "method", "model", "component", *SUMMARY_COLUMNS]

    def test_out_writes_a_checkpoint_the_library_resumes(self, runner, tmp_path):
        from cjstats.cli import cli

        path = tmp_path / "s.parquet"
        r = runner.invoke(cli, self.ARGS + ["--out", str(path)])
        assert r.exit_code == 0, r.output
        assert pd.read_parquet(path)["replicate"].nunique() == 3

    @pytest.mark.parametrize("extra,option", [
        (["--k", "1"], "--k"), (["--methods", "lmer"], "--methods"), (["--misspec", "ordinal=7"], "--misspec"),
        (["--misspec", "heavy"], "--misspec"), (["--methods", "reml:ci=bootstrap"], "--methods"),
        (["--jobs", "two"], "--jobs"), (["--truth", "nope.json"], "--truth"),
    ])
    def test_errors_name_the_option_typed(self, runner, extra, option):
        from cjstats.cli import cli

        r = runner.invoke(cli, self.ARGS + extra)
        assert isinstance(r.exception, CjstatsError), r.output
        assert str(r.exception).startswith(f"The option {option} ")

    def test_truth_from_a_components_json_or_a_score_file(self, runner, tmp_path, score_file):
        import json

        from cjstats.cli import cli

        comp = tmp_path / "truth.json"
        comp.write_text(json.dumps({"mine": {"mu": 5, "scenario": 1, "generation": 0.2, "residual": 1,
                                             "judge_panel": 0.3}}))
        base = ["study", "--n", "8", "--m", "2", "--k", "3", "--methods", "anova", "--replicates", "2",
                "--format", "json"]
        for truth, models in ((comp, {"mine"}), (score_file, {"Qwen", "GPT"})):
            r = runner.invoke(cli, base + ["--truth", str(truth)])
            assert r.exit_code == 0, r.output
            assert {row["model"] for row in json.loads(r.output)} == models
