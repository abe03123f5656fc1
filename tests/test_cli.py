"""The command line, run in-process with click's CliRunner: exit codes and output."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from cjstats.cli import cli



class TestDecompose:
    def test_table_output(self, runner, score_file):
        r = runner.invoke(cli, ["decompose", str(score_file)])
        assert r.exit_code == 0, r.output
        assert r.output.startswith("Method: anova (--method auto: every group is complete and balanced).\n"
                                   "Variance components (anova)\n")
        for comp in ("mu", "scenario", "generation", "residual", "judge_panel", "judge_population"):
            assert comp in r.output

    def test_json_is_an_array_of_rows_with_null_for_missing_numbers(self, runner, tmp_path):
        rng = np.random.default_rng(1)
        df = pd.DataFrame({"model": "a", "scenario": np.repeat(np.arange(6), 3), "judge": ["x", "y", "z"] * 6,
                           "score": rng.normal(size=18)})
        p = tmp_path / "m1.csv"
        df.to_csv(p, index=False)
        r = runner.invoke(cli, ["decompose", str(p), "--format", "json"])
        assert r.exit_code == 0, r.output
        rows = json.loads(r.output)
        assert [row["component"] for row in rows] == ["mu", "scenario", "generation", "scenario_judge", "residual",
                                                      "judge_panel", "judge_population"]
        gen = rows[2]
        assert gen["estimate"] is None and gen["lower"] is None and gen["identifiable"] is False
        assert gen["note"].startswith("not identifiable: one generation per scenario")

    def test_csv_output_parses(self, runner, score_file, tmp_path):
        r = runner.invoke(cli, ["decompose", str(score_file), "--format", "csv"])
        assert r.exit_code == 0
        out = tmp_path / "out.csv"
        out.write_text(r.output)
        assert len(pd.read_csv(out)) == 2 * 7        # 2 models x 7 components (COMPONENTS)

    def test_offsets(self, runner, score_file):
        r = runner.invoke(cli, ["decompose", str(score_file), "--offsets", "--format", "json"])
        assert r.exit_code == 0
        assert {row["judge"] for row in json.loads(r.output)} == {"judge_0", "judge_1", "judge_2", "judge_3"}

    def test_column_mapping_option(self, runner, tmp_path, small_balanced_frame):
        p = tmp_path / "renamed.csv"
        small_balanced_frame.rename(columns={"judge": "rater"}).to_csv(p, index=False)
        r = runner.invoke(cli, ["decompose", str(p), "--columns", "rater=judge", "--format", "json"])
        assert r.exit_code == 0, r.output


class TestUserErrors:
    """A user error exits 1 with one sentence on stderr and nothing else."""

    def _run(self, args):
        import subprocess
        import sys

        return subprocess.run([sys.executable, "-c", "from cjstats.cli import main; main()", *args],
                              capture_output=True, text=True)

    def test_missing_file(self, tmp_path):
        r = self._run(["decompose", str(tmp_path / "nope.csv")])
        assert r.returncode == 1 and r.stdout == ""
        assert r.stderr == f"The score file `{tmp_path / 'nope.csv'}` does not exist.\n"

    def test_misnamed_column(self, tmp_path, small_balanced_frame):
        p = tmp_path / "bad.csv"
        small_balanced_frame.rename(columns={"judge": "rater"}).to_csv(p, index=False)
        r = self._run(["decompose", str(p)])
        assert r.returncode == 1 and r.stdout == "" and "Traceback" not in r.stderr
        assert r.stderr.startswith("scores has no column 'judge'") and r.stderr.count("\n") == 1

    def test_bad_columns_option(self, tmp_path, score_file):
        r = self._run(["decompose", str(score_file), "--columns", "rater"])
        assert r.returncode == 1 and "name=value pairs" in r.stderr and r.stderr.count("\n") == 1

    def test_incomplete_design_under_anova_names_the_flags(self, tmp_path, small_balanced_frame):
        p = tmp_path / "holey.csv"
        small_balanced_frame.drop(index=[3]).to_csv(p, index=False)
        r = self._run(["decompose", str(p), "--method", "anova"])
        assert r.returncode == 1 and r.stdout == "" and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
        assert "--incomplete drop" in r.stderr and "--method reml" in r.stderr
        assert "incomplete='drop'" not in r.stderr and "method='reml'" not in r.stderr

    def test_one_missing_call_runs_reml_by_default_and_says_so(self, tmp_path, small_balanced_frame):
        p = tmp_path / "holey.csv"
        small_balanced_frame.drop(index=[3]).to_csv(p, index=False)
        r = self._run(["decompose", str(p)])
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith("Method: reml (--method auto: model 'Qwen' is not complete and balanced, 1 of "
                                   "144 judge calls missing).\nVariance components (reml)")

    def test_debug_shows_traceback(self, tmp_path):
        import os
        import subprocess
        import sys

        r = subprocess.run([sys.executable, "-c", "from cjstats.cli import main; main()", "decompose",
                            str(tmp_path / "nope.csv")], capture_output=True, text=True,
                           env={**os.environ, "CJSTATS_DEBUG": "1"})
        assert r.returncode == 1 and "Traceback" in r.stderr


class TestJudges:
    def test_table(self, runner, score_file):
        r = runner.invoke(cli, ["judges", str(score_file)])
        assert r.exit_code == 0, r.output
        assert "F = MS_J / MS_W" in r.output and "Does the top model change across single judges?" in r.output

    def test_json(self, runner, score_file):
        r = runner.invoke(cli, ["judges", str(score_file), "--format", "json"])
        doc = json.loads(r.output)
        assert set(doc) == {"f_test", "per_judge"}
        tests = doc["f_test"]
        # m = 3 generations scored by the same judges: the scenario x judge interaction is fitted, and the judge
        # effect is tested against it, on (n - 1)(K - 1) = 11 x 3 df
        assert len(tests) == 2 and all(x["df1"] == 3 and x["df2"] == 11 * 3 for x in tests)


class TestDemo:
    def test_demo_runs_on_bundled_data(self, runner):
        r = runner.invoke(cli, ["demo"])
        assert r.exit_code == 0, r.output
        for text in ("cjstats demo: 'hanna'", "Design: 11 models x 96 scenarios x 1 generation(s) x 5 judges",
                     "Judge offsets gamma[l]", "F-test", "Top model by judge",
                     "Which model is better", "Judges against the human raters", "Human ceiling"):
            assert text in r.output
        # the comparison and the human section carry the library's numbers, not a rendering of their own
        import cjstats as cj

        from cjstats.estimators import auto_method

        composite = cj.datasets.load("hanna", composite=True)   # 5 calls missing (parse failures): REML
        ranks = cj.compare_models(composite, method=auto_method(composite, joint=True)[0]).ranks
        top = ranks.iloc[0]
        assert f"{top['model']} {top['mean']:.3f}     1        [{top['rank_lower']}, {top['rank_upper']}]" in r.output
        agree = cj.judge_agreement(cj.datasets.load("hanna", composite=True, humans=True)).table
        panel = agree[agree["judge"] == "panel"].iloc[0]
        assert f"panel {panel['bias']:+.3f} [{panel['bias_lower']:+.3f}, {panel['bias_upper']:+.3f}]" in r.output


class TestOptionParsing:
    def test_duplicate_mapping_key_is_one_sentence(self):
        from cjstats import CjstatsError
        from cjstats.cli._app import parse_mapping

        with pytest.raises(CjstatsError, match=r"names 'a' twice \(a=1 and a=2\)"):
            parse_mapping("a=1,b=3,a=2", option="--costs")

    def test_unwritable_output_is_one_sentence(self, tmp_path):
        import subprocess
        import sys

        r = subprocess.run([sys.executable, "-c", "from cjstats.cli import main; main()", "plan", "--scenarios", "4",
                            "--judges", "a,b", "--out", str(tmp_path / "no" / "dir" / "plan.csv")],
                           capture_output=True, text=True)
        assert r.returncode == 1 and "Traceback" not in r.stderr and r.stderr.count("\n") == 1
        assert r.stderr.startswith("Could not use")
