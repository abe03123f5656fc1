"""Awkward and bad inputs that must never give a silent wrong answer (issue 15, section 3).

Each test names the input and what the user must get: the right table, a warning naming the value, or one
sentence saying exactly what is wrong.
"""

from __future__ import annotations

import gzip
import warnings

import numpy as np
import pandas as pd
import pytest

from cjstats import CjstatsError, CjstatsWarning, read_scores


def _frame(n=4, m=1, k=3, model="A"):
    i, j, l = np.meshgrid(range(n), range(m), range(k), indexing="ij")
    rng = np.random.default_rng(0)
    return pd.DataFrame({"model": model, "scenario": i.ravel(), "generation": j.ravel(),
                         "judge": [f"J{x}" for x in l.ravel()], "score": rng.integers(1, 10, i.size).astype(float)})


def _one_sentence(exc) -> str:
    msg = str(exc.value)
    assert "\n" not in msg and msg.endswith(".")
    return msg


class TestColumnsAndMessages:
    def test_mapping_onto_an_existing_column_is_one_sentence(self):
        df = _frame().assign(rater=lambda d: d["judge"])
        with pytest.raises(CjstatsError) as exc:
            read_scores(df, columns={"rater": "judge"})
        msg = _one_sentence(exc)
        assert "'rater'" in msg and "'judge'" in msg and "already" in msg

    def test_messages_print_plain_values_not_numpy_reprs(self):
        df = pd.concat([_frame(), _frame().iloc[:1]], ignore_index=True)
        with pytest.raises(CjstatsError) as exc:
            read_scores(df)
        msg = _one_sentence(exc)
        assert "np.int64" not in msg and "np.float64" not in msg and "scenario 0" in msg


class TestLabels:
    def test_ids_that_look_like_decimals_stay_distinct(self, tmp_path):
        p = tmp_path / "s.csv"
        p.write_text("model,scenario,judge,score\n" + "".join(
            f"A,{s},{j},{v}\n" for s, v0 in (("1.1", 1), ("1.10", 5), ("2", 2)) for j, v in (("x", v0), ("y", v0 + 1))))
        s = read_scores(p)
        assert s.design["n_scenarios"].item() == 3
        assert set(s.to_frame()["scenario"]) == {"1.1", "1.10", "2"}

    def test_integer_ids_in_files_stay_integers(self, tmp_path):
        p = tmp_path / "s.csv"
        _frame().to_csv(p, index=False)
        assert read_scores(p).to_frame()["scenario"].tolist() == read_scores(_frame()).to_frame()["scenario"].tolist()

    def test_leading_zeros_are_kept(self, tmp_path):
        p = tmp_path / "s.csv"
        p.write_text("model,scenario,judge,score\nA,007,x,1\nA,007,y,2\nA,7,x,3\nA,7,y,4\n")
        assert read_scores(p).design["n_scenarios"].item() == 2

    def test_labels_differing_in_case_or_spaces_warn(self):
        df = _frame()
        df.loc[df["judge"] == "J1", "judge"] = "gpt-4"
        df.loc[df["judge"] == "J2", "judge"] = "GPT-4 "
        with pytest.warns(CjstatsWarning, match=r"Column 'judge' has labels that differ only in case or surrounding "
                                                r"spaces \('GPT-4 ' and 'gpt-4'\)"):
            read_scores(df)

    def test_mixed_int_and_str_labels_warn_and_merge(self):
        df = _frame()
        df["scenario"] = df["scenario"].astype(object)
        df.loc[(df["scenario"] == 3) & (df["judge"] == "J0"), "scenario"] = "3"
        with pytest.warns(CjstatsWarning, match=r"Column 'scenario' mixes numbers and text \(3 and '3'\)"):
            s = read_scores(df)
        assert s.design["n_scenarios"].item() == 4 and s.design["complete"].item()

    def test_clean_labels_do_not_warn(self):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            read_scores(_frame())


class TestScoreValues:
    def test_fastchat_sentinel_in_a_generic_table_warns(self):
        df = _frame()
        df.loc[5, "score"] = -1
        with pytest.warns(CjstatsWarning, match=r"Column 'score' has 1 value of -1 .*could not parse"):
            read_scores(df)

    def test_negative_scales_do_not_trigger_the_sentinel_warning(self):
        df = _frame()
        df["score"] = df["score"] - 5
        df.loc[0, "score"] = -1
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            read_scores(df)

    def test_scores_whose_squares_overflow_are_refused(self):
        df = _frame()
        df.loc[2, "score"] = 1e300
        with pytest.raises(CjstatsError) as exc:
            read_scores(df)
        msg = _one_sentence(exc)
        assert "1e+300" in msg and "row 2" in msg


class TestAwkwardFiles:
    def _rows(self):
        return [("A", s, j, float(s + 2 * (j == "y"))) for s in range(3) for j in ("x", "y")]

    @pytest.mark.parametrize("sep", [";", "\t"])
    def test_csv_with_another_separator_reads_correctly(self, tmp_path, sep):
        p = tmp_path / "s.csv"
        p.write_text(sep.join(["model", "scenario", "judge", "score"]) + "\n"
                     + "".join(sep.join(map(str, r)) + "\n" for r in self._rows()))
        s = read_scores(p)
        assert len(s) == 6 and s.design["n_judges"].item() == 2

    def test_header_with_spaces_after_commas_reads_correctly(self, tmp_path):
        p = tmp_path / "s.csv"
        p.write_text("model, scenario, judge, score\n" + "".join(", ".join(map(str, r)) + "\n" for r in self._rows()))
        s = read_scores(p)
        assert len(s) == 6 and s.judges == ["x", "y"]

    def test_truncated_gzip_says_the_file_is_cut_short(self, tmp_path):
        p = tmp_path / "s.csv.gz"
        body = "model,scenario,judge,score\n" + "".join(",".join(map(str, r)) + "\n" for r in self._rows() * 200)
        data = gzip.compress(body.encode())
        p.write_bytes(data[: len(data) // 2])
        with pytest.raises(CjstatsError) as exc:
            read_scores(p)
        assert "cut short" in _one_sentence(exc)

    def test_jsonl_with_a_broken_last_line_names_the_line(self, tmp_path):
        p = tmp_path / "s.jsonl"
        lines = [f'{{"model": "A", "scenario": {s}, "judge": "{j}", "score": {v}}}' for _, s, j, v in self._rows()]
        p.write_text("\n".join(lines) + '\n{"model": "A", "scen\n')
        with pytest.raises(CjstatsError) as exc:
            read_scores(p)
        msg = _one_sentence(exc)
        assert "is cut short at line 7" in msg          # the last line ends inside a value


class TestSparseJudgeUnderDrop:
    def test_judge_with_few_cells_warns_with_counts(self):
        from cjstats.io.scores import warn_sparse_judges

        df = _frame(n=16, k=3)
        df = df[~((df["judge"] == "J2") & (df["scenario"] >= 2))]
        g = next(read_scores(df).groups())
        with pytest.warns(CjstatsWarning, match=r"judge 'J2' scored 2 of 16 .* cells"):
            warn_sparse_judges(g)

    def test_judge_f_test_with_drop_warns_about_the_sparse_judge(self):
        from cjstats import judge_f_test

        df = _frame(n=16, k=3)
        df = df[~((df["judge"] == "J2") & (df["scenario"] >= 2))]
        with pytest.warns(CjstatsWarning, match=r"judge 'J2' scored 2 of 16"):
            judge_f_test(read_scores(df), incomplete="drop", max_drop=1.0)

    def test_estimate_with_drop_warns_about_the_sparse_judge(self):
        from cjstats import estimate

        df = _frame(n=16, k=3)
        df = df[~((df["judge"] == "J2") & (df["scenario"] >= 2))]
        with pytest.warns(CjstatsWarning, match=r"judge 'J2' scored 2 of 16 .* cells"):
            fit = estimate(read_scores(df), method="anova", incomplete="drop", max_drop=1.0)
        assert fit.diagnostics[fit.components["model"].iloc[0]]["dropped_cells"] == 14

    def test_the_sparse_judge_is_named_before_the_drop_limit_refuses(self):
        from cjstats import estimate

        df = _frame(n=16, k=3)
        df = df[~((df["judge"] == "J2") & (df["scenario"] >= 2))]
        with pytest.warns(CjstatsWarning, match=r"judge 'J2' scored 2 of 16"):
            with pytest.raises(CjstatsError, match=r"would remove 14 of 16 scenarios \(88%\).* max_drop=0\.88"):
                estimate(read_scores(df), method="anova", incomplete="drop")

    def test_complete_judges_do_not_warn(self):
        from cjstats.io.scores import warn_sparse_judges

        df = _frame(n=16, k=3).drop(index=[0])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            warn_sparse_judges(next(read_scores(df).groups()))


class TestSubsampleExactZero:
    def test_exact_zero_prediction_with_rounding_noise_is_agreement(self):
        from cjstats.decisions.subsample import subsample_strategies

        # one generation per scenario and budgets that are multiples of K: 'all' and 'cyclic' give every judge
        # every scenario, so the benchmark score is the same in every repetition and the predicted variance is
        # exactly 0; the empirical one is rounding noise (about 5e-32 here).
        y = np.random.default_rng(1).integers(1, 6, (30, 1, 4)).astype(float) / 3
        t = subsample_strategies(y, budgets=[4, 8], reps=200, strategies=["all", "cyclic"], seed=0)
        assert (t["predicted"] == 0).all()
        assert (t["z"] == 0).all()

    def test_a_real_discrepancy_with_zero_monte_carlo_error_stays_infinite(self):
        from cjstats.decisions.subsample import _z_score

        assert _z_score(0.5, 0.0, 0.0, scale=1.0) == np.inf
        assert _z_score(1e-32, 0.0, 0.0, scale=1.0) == 0.0
        assert _z_score(1.2, 1.0, 0.1, scale=1.0) == pytest.approx(2.0)


class TestSiblings:
    def test_plan_scenario_file_keeps_decimal_looking_labels_apart(self, tmp_path):
        import io

        from click.testing import CliRunner

        from cjstats.cli import cli

        p = tmp_path / "scen.csv"
        p.write_text("scenario\n1.1\n1.10\n2\n")
        r = CliRunner().invoke(cli, ["plan", "--scenarios", str(p), "--judges", "a,b,c", "--seed", "0",
                                     "--format", "csv"])
        assert r.exit_code == 0, r.output
        plan = pd.read_csv(io.StringIO(r.stdout), dtype=str)
        assert sorted(plan["scenario"]) == ["1.1", "1.10", "2"]

    def test_where_filtered_tables_keep_integer_ids(self, tmp_path):
        from cjstats.cli._app import DataOptions, load_scores

        p = tmp_path / "s.csv"
        _frame().assign(task="t").to_csv(p, index=False)
        data = DataOptions(columns=None, judge_columns=None, composite=False, incomplete=None, duplicates="error",
                           judges=None, exclude_judges=None, criteria=None, where=("task=t",))
        assert load_scores(str(p), data).to_frame()["scenario"].tolist() == \
            read_scores(p).to_frame()["scenario"].tolist()


class TestMoreAwkwardFiles:
    def test_byte_order_mark_is_not_part_of_the_first_column_name(self, tmp_path):
        p = tmp_path / "bom.csv"
        _frame().to_csv(p, index=False, encoding="utf-8-sig")
        assert len(read_scores(p)) == 12

    def test_a_header_naming_a_column_twice_is_refused(self, tmp_path):
        p = tmp_path / "twice.csv"
        p.write_text("model,scenario,judge,score,score\nA,1,x,1,2\nA,1,y,2,3\n")
        with pytest.raises(CjstatsError) as exc:
            read_scores(p)
        assert "names column 'score' twice" in _one_sentence(exc)

    def test_semicolon_file_with_decimal_commas_reads_the_numbers(self, tmp_path):
        p = tmp_path / "eu.csv"
        p.write_text("model;scenario;judge;score\n" + "".join(
            f"A;{s};{j};{s},{5 if j == 'y' else 0}\n" for s in range(3) for j in ("x", "y")))
        s = read_scores(p)
        assert sorted(s.to_frame()["score"]) == [0.0, 0.5, 1.0, 1.5, 2.0, 2.5]
        assert s.provenance["separator"] == ";" and s.provenance["decimal"] == ","

    def test_json_array_in_a_jsonl_file_says_one_record_per_line(self, tmp_path):
        p = tmp_path / "arr.jsonl"
        p.write_text('[{"model": "A", "scenario": 1, "judge": "x", "score": 1}]\n')
        with pytest.raises(CjstatsError) as exc:
            read_scores(p)
        assert "one record per line" in _one_sentence(exc)

    def test_a_gz_name_on_data_that_is_not_gzip_says_so_not_cut_short(self, tmp_path):
        p = tmp_path / "s.csv.gz"
        p.write_bytes(b"model,scenario,judge,score\nA,1,x,1\n")
        with pytest.raises(CjstatsError) as exc:
            read_scores(p)
        msg = _one_sentence(exc)
        assert "not gzip" in msg and "cut short" not in msg

    def test_a_file_that_is_not_utf8_says_which_encoding_to_save(self, tmp_path):
        p = tmp_path / "latin1.csv"
        p.write_bytes("model,scenario,judge,score\nA,1,é,1\nA,1,y,2\n".encode("latin-1"))
        with pytest.raises(CjstatsError) as exc:
            read_scores(p)
        assert "not UTF-8" in _one_sentence(exc)

    def test_ids_that_are_json_objects_are_one_sentence(self, tmp_path):
        p = tmp_path / "nested.jsonl"
        p.write_text('{"model": "A", "scenario": {"a": 1}, "judge": "x", "score": 1}\n'
                     '{"model": "A", "scenario": {"a": 2}, "judge": "y", "score": 1}\n')
        with pytest.raises(CjstatsError) as exc:
            read_scores(p)
        assert "Column 'scenario' holds" in _one_sentence(exc)


class TestWhereMessagesPoint:
    def test_file_errors_name_the_line_of_the_file(self, tmp_path):
        p = tmp_path / "s.csv"
        p.write_text("model,scenario,judge,score\nA,1,x,1\nA,1,y,oops\n")
        with pytest.raises(CjstatsError, match=r"first: 'oops' in line 3\)"):
            read_scores(p)

    def test_jsonl_errors_name_the_line_even_after_blank_lines(self, tmp_path):
        p = tmp_path / "s.jsonl"
        p.write_text('{"model": "A", "scenario": 1, "judge": "x", "score": 1}\n\n'
                     '{"model": "A", "scenario": 1, "judge": "y", "score": null}\n')
        with pytest.raises(CjstatsError, match=r"first in line 3\)"):
            read_scores(p)

    def test_dataframe_errors_name_the_row(self):
        df = _frame()
        df.loc[4, "score"] = np.nan
        with pytest.raises(CjstatsError, match=r"first in row 4\)"):
            read_scores(df)

    def test_duplicate_cells_in_a_file_name_its_lines(self, tmp_path):
        p = tmp_path / "dup.csv"
        pd.concat([_frame(), _frame().iloc[:1]], ignore_index=True).to_csv(p, index=False)
        with pytest.raises(CjstatsError, match=r"in lines 2 and 14\)"):
            read_scores(p)
