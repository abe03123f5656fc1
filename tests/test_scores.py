"""Score tables: reading, validation messages, design summary, composite, the MT-Bench loader."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pandas as pd
import pytest

import cjstats as cj
from cjstats import CjstatsError, Scores, read_mtbench_judgments, read_scores


def _frame(n=3, m=2, k=3, model="A"):
    i, j, l = np.meshgrid(range(n), range(m), range(k), indexing="ij")
    rng = np.random.default_rng(0)
    return pd.DataFrame({"model": model, "scenario": i.ravel(), "generation": j.ravel(),
                         "judge": [f"J{x}" for x in l.ravel()], "score": rng.normal(5, 1, i.size)})


class TestReading:
    @pytest.mark.parametrize("suffix", [".csv", ".csv.gz", ".tsv", ".parquet", ".jsonl"])
    def test_every_file_type_reads_the_same_table(self, tmp_path, suffix):
        df = _frame()
        path = tmp_path / f"scores{suffix}"
        if suffix.startswith(".csv"):
            df.to_csv(path, index=False)
        elif suffix == ".tsv":
            df.to_csv(path, index=False, sep="\t")
        elif suffix == ".parquet":
            df.to_parquet(path)
        else:
            df.to_json(path, orient="records", lines=True)
        s = read_scores(path)
        assert len(s) == len(df)
        assert s.to_frame()["score"].sum() == pytest.approx(df["score"].sum())
        assert s.provenance["source"] == str(path)

    def test_columns_mapping_renames(self):
        df = _frame().rename(columns={"judge": "rater", "scenario": "item"})
        s = read_scores(df, columns={"rater": "judge", "item": "scenario"})
        assert s.design.loc[0, "n_judges"] == 3

    def test_missing_generation_column_means_one_generation(self):
        df = _frame(m=1).drop(columns="generation")
        s = read_scores(df)
        assert s.design.loc[0, "generations"] == 1
        assert "m = 1" in s.provenance["generation"]

    def test_input_frame_is_not_modified(self):
        df = _frame()
        before = df.copy(deep=True)
        read_scores(df)
        pd.testing.assert_frame_equal(df, before)

    def test_arrays_are_read_only(self):
        g = next(read_scores(_frame()).groups())
        with pytest.raises(ValueError):
            g.y[0] = 1.0


class TestDesignSummary:
    def test_balanced_complete_design(self):
        d = read_scores(_frame(4, 3, 5)).design.iloc[0]
        assert (d["n_scenarios"], d["generations"], d["n_judges"], d["n_rows"]) == (4, 3, 5, 60)
        assert d["complete"] and d["balanced"] and d["n_missing"] == 0 and d["n_duplicates"] == 0

    def test_missing_cells_are_counted_and_listed(self):
        df = _frame(4, 2, 3).drop(index=[0, 7]).reset_index(drop=True)
        s = read_scores(df)
        d = s.design.iloc[0]
        assert d["n_missing"] == 2 and not d["complete"] and not d["balanced"]
        miss = s.missing_cells()
        assert list(miss.columns) == ["model", "scenario", "generation", "judge"]
        assert set(zip(miss["scenario"], miss["generation"], miss["judge"])) == {(0, 0, "J0"), (1, 0, "J1")}

    def test_unequal_generations_are_complete_but_unbalanced(self):
        df = _frame(3, 2, 2)
        df = df[~((df["scenario"] == 2) & (df["generation"] == 1))]
        d = read_scores(df).design.iloc[0]
        assert d["complete"] and not d["balanced"] and pd.isna(d["generations"])
        assert (d["generations_min"], d["generations_max"]) == (1, 2)

    def test_duplicates_averaged_on_request_and_counted(self):
        df = _frame()
        dup = pd.concat([df, df.iloc[[0, 1]].assign(score=[0.0, 0.0])], ignore_index=True)
        s = read_scores(dup, duplicates="mean")
        assert s.design.iloc[0]["n_duplicates"] == 2 and s.provenance["duplicate_cells_averaged"] == 2
        cell = s.to_frame().query("scenario == 0 and generation == 0 and judge == 'J0'")["score"].item()
        assert cell == pytest.approx(df.loc[0, "score"] / 2)

    def test_per_criterion_groups(self, criterion_scores):
        d = criterion_scores.design
        assert list(d.columns[:2]) == ["model", "criterion"] and len(d) == 2

    def test_composite_averages_criteria_per_cell(self, criterion_scores):
        comp = criterion_scores.composite()
        assert not comp.has_criterion and len(comp) == len(criterion_scores) // 2
        f = criterion_scores.to_frame()
        first = f[(f["scenario"] == 0) & (f["generation"] == 0) & (f["judge"] == "judge_0")]["score"].mean()
        got = comp.to_frame().query("scenario == 0 and generation == 0 and judge == 'judge_0'")["score"].item()
        assert got == pytest.approx(first)
        assert comp.provenance["composite_of"] == ["helpful", "safe"]


class TestBadInput:
    """Every bad input gives one clear sentence naming the column, the value and the fix."""

    def _one_sentence(self, exc):
        msg = str(exc.value)
        assert "\n" not in msg and msg.endswith(".") and "Traceback" not in msg
        return msg

    def test_misnamed_column_suggests_mapping(self):
        df = _frame().rename(columns={"judge": "rater", "scenario": "item"})
        with pytest.raises(CjstatsError) as e:
            read_scores(df)
        msg = self._one_sentence(e)
        assert msg.startswith("scores has no column 'scenario' (found: model, item, generation, rater, score)")
        assert msg.endswith("Map yours with read_scores(path, columns={'item': 'scenario', 'rater': 'judge'}).")

    def test_missing_column_without_a_guess(self):
        with pytest.raises(CjstatsError, match=r"no column 'judge' .*columns=\{'<your column>': 'judge'\}"):
            read_scores(_frame().drop(columns="judge"))

    def test_mapping_an_absent_column(self):
        with pytest.raises(CjstatsError, match="columns maps 'rater', but scores has no column 'rater'"):
            read_scores(_frame(), columns={"rater": "judge"})

    def test_non_numeric_scores_name_first_value_and_row(self):
        df = _frame().astype({"score": object})
        df.loc[4, "score"] = "N/A"
        df.loc[9, "score"] = "bad"
        with pytest.raises(CjstatsError) as e:
            read_scores(df)
        assert self._one_sentence(e) == ("Column 'score' has 2 non-numeric values (first: 'N/A' in row 4). "
                                         "Drop or recode them before read_scores().")

    def test_nan_scores(self):
        df = _frame()
        df.loc[3, "score"] = np.nan
        with pytest.raises(CjstatsError, match=r"Column 'score' has 1 missing \(NaN\) values \(first in row 3\)"):
            read_scores(df)

    def test_infinite_scores(self):
        df = _frame()
        df.loc[2, "score"] = np.inf
        with pytest.raises(CjstatsError, match="1 infinite values"):
            read_scores(df)

    def test_boolean_scores(self):
        df = _frame().assign(score=True)      # verdicts: read as 1, the mapping stated (issue 22)
        with pytest.warns(UserWarning, match="holds verdicts, read as True = 1"):
            assert (read_scores(df).to_frame()["score"] == 1.0).all()

    def test_missing_judge_label(self):
        df = _frame()
        df.loc[5, "judge"] = None
        with pytest.raises(CjstatsError, match=r"Column 'judge' has 1 missing values \(first in row 5\)"):
            read_scores(df)

    def test_duplicate_cells(self):
        df = pd.concat([_frame(), _frame().iloc[[3]]], ignore_index=True)
        with pytest.raises(CjstatsError) as e:
            read_scores(df)
        msg = self._one_sentence(e)
        assert "1 duplicate cells" in msg and "rows 3 and 18" in msg and "duplicates='mean'" in msg

    def test_one_judge(self):
        df = _frame(k=1)
        with pytest.raises(CjstatsError) as e:
            cj.estimate(df)
        assert self._one_sentence(e).startswith("Model 'A' has only one judge ('J0')")

    def test_one_scenario(self):
        with pytest.raises(CjstatsError, match="Model 'A' has only one scenario"):
            cj.estimate(_frame(n=1))

    def test_constant_scores(self):
        with pytest.raises(CjstatsError, match=r"Column 'score' is constant \(7 in every row\) for model 'A'"):
            cj.estimate(_frame().assign(score=7.0))

    def test_empty_table(self):
        with pytest.raises(CjstatsError, match="scores is empty"):
            read_scores(_frame().iloc[:0])

    def test_empty_file(self, tmp_path):
        p = tmp_path / "empty.csv"
        p.write_text("")
        with pytest.raises(CjstatsError, match="is empty: it has no header and no rows"):
            read_scores(p)

    def test_header_only_file(self, tmp_path):
        p = tmp_path / "head.csv"
        p.write_text("model,scenario,generation,judge,score\n")
        with pytest.raises(CjstatsError, match="scores is empty"):
            read_scores(p)

    def test_unknown_file_type(self, tmp_path):
        p = tmp_path / "scores.xlsx"
        p.write_bytes(b"PK")
        with pytest.raises(CjstatsError, match=r"Unknown file type of `.*scores.xlsx`: read_scores reads"):
            read_scores(p)

    def test_missing_file(self, tmp_path):
        with pytest.raises(CjstatsError, match="does not exist"):
            read_scores(tmp_path / "nope.csv")

    def test_not_a_table(self):
        with pytest.raises(CjstatsError, match="takes a DataFrame or a file path. Got list instead"):
            read_scores([1, 2, 3])

    def test_bad_duplicates_option(self):
        with pytest.raises(CjstatsError, match="'duplicates' argument of read_scores must be one of"):
            read_scores(_frame(), duplicates="first")

    def test_subset_unknown_value(self):
        with pytest.raises(CjstatsError, match="Column 'model' has no value 'Z'"):
            read_scores(_frame()).subset(models=["Z"])


class TestMTBenchLoader:
    def _write(self, path, records):
        with open(path, "w") as fh:
            for r in records:
                fh.write(json.dumps(r) + "\n")

    def _records(self):
        recs = []
        for q in (81, 82, 83):
            for model in ("alpaca-13b", "vicuna-13b"):
                for judge, base in (("gpt-4", 6.0), ("claude-v1", 7.0)):
                    for turn in (1, 2):
                        recs.append({"question_id": q, "model": model, "judge": [judge, "single-v1"],
                                     "user_prompt": "...", "judgment": "[[x]]", "score": base + turn + q % 2,
                                     "turn": turn, "tstamp": 0})
        recs[0]["score"] = -1  # unparsed
        return recs

    def test_turns_are_averaged_and_unparsed_dropped(self, tmp_path):
        p = tmp_path / "gpt-4_single.jsonl"
        self._write(p, self._records())
        s = read_mtbench_judgments(p)
        assert s.provenance["dropped_unparsed"] == 1 and s.provenance["partial_turn_cells"] == 1
        f = s.to_frame()
        assert len(f) == 3 * 2 * 2
        got = f.query("scenario == 82 and model == 'vicuna-13b' and judge == 'claude-v1'")["score"].item()
        assert got == pytest.approx(7.0 + 1.5)
        # the first cell lost turn 1: only turn 2 is left
        first = f.query("scenario == 81 and model == 'alpaca-13b' and judge == 'gpt-4'")["score"].item()
        assert first == pytest.approx(6.0 + 2 + 1)

    def test_turns_can_be_kept_as_criteria(self, tmp_path):
        p = tmp_path / "j.jsonl.gz"
        with gzip.open(p, "wt") as fh:
            for r in self._records():
                fh.write(json.dumps(r) + "\n")
        s = read_mtbench_judgments(p, turns="separate")
        assert s.criteria == ["turn 1", "turn 2"]

    def test_not_a_judgment_file(self, tmp_path):
        p = tmp_path / "x.jsonl"
        self._write(p, [{"a": 1}])
        with pytest.raises(CjstatsError, match="Line 1 of .* has no field 'question_id'"):
            read_mtbench_judgments(p)

    def test_invalid_json_line(self, tmp_path):
        p = tmp_path / "x.jsonl"
        p.write_text('{"question_id": 1, "model": "a", "judge": ["g", "t"], "score": 3}\n{oops\n')
        with pytest.raises(CjstatsError, match="Line 2 of .* is not valid JSON"):
            read_mtbench_judgments(p)


class TestBundledData:
    def test_hanna_loads_without_its_parse_failure_sentinels(self):
        s = cj.datasets.load("hanna")
        d = s.design
        assert len(d) == 11 * 6 and set(d["n_scenarios"]) == {96} and set(d["n_judges"]) == {5}
        assert set(d["generations"]) == {1}
        # no score outside the 1-5 rubric; the 346 sentinels are missing judge calls, counted in the provenance
        assert s.to_frame()["score"].between(1, 5).all()
        assert s.provenance["dropped_sentinels"] == 346 and len(s.to_frame()) == 31_680 - 346
        assert int(d["n_missing"].sum()) == 346 and not d["complete"].all()
        assert cj.datasets.load("hanna", composite=True).provenance["dropped_sentinels"] == 346
        assert cj.datasets.load("hanna", eval_prompt="as_generation").provenance["dropped_sentinels"] == 1_051

    def test_keep_sentinels_loads_hanna_as_shipped_complete_and_balanced(self):
        s = cj.datasets.load("hanna", keep_sentinels=True)
        d = s.design
        assert len(d) == 11 * 6 and d["complete"].all() and d["balanced"].all()
        assert s.provenance["dropped_sentinels"] == 0 and s.to_frame()["score"].min() == -1
        assert int((s.to_frame()["score"] < 1).sum()) == 346

    def test_the_sentinels_are_the_out_of_scale_rows_of_the_source(self):
        raw = cj.datasets.load_frame("hanna")
        assert int((~raw["in_scale"]).sum()) == 1_051 == int((~raw["score"].between(1, 5)).sum())
        kept = cj.datasets.table("hanna")
        assert kept["score"].between(1, 5).all() and kept.attrs["dropped_sentinels"] == 346

    def test_mentalalign_has_no_sentinel(self):
        assert cj.datasets.load("mentalalign").provenance["dropped_sentinels"] == 0

    def test_prompt_variants_as_generation_pool(self):
        d = cj.datasets.load("hanna", eval_prompt="as_generation", composite=True, keep_sentinels=True).design
        assert set(d["generations"]) == {4} and len(d) == 11

    def test_unknown_dataset(self):
        with pytest.raises(CjstatsError, match="no bundled dataset 'mtbench'"):
            cj.datasets.load("mtbench")

    def test_licence_notice_ships(self):
        from importlib import resources

        text = (resources.files("cjstats.datasets") / "data" / "LICENSE-hanna.txt").read_text()
        assert "MIT License" in text and "dig-team" in text


class TestPickleAndCopy:
    """A Scores table (and its GroupDesign / GroupData) survives pickle and deepcopy with equal frames, whether
    the Arrow route built it (its long frame made lazily) or the pandas route did (duplicates, reference raters)."""

    @staticmethod
    def _sources(tmp_path):
        df = pd.concat([_frame(n=4, model="A"), _frame(n=3, model="B")], ignore_index=True)
        crit = pd.concat([df.assign(criterion="c1"), df.assign(criterion="c2", score=df["score"] + 1)],
                         ignore_index=True)
        dup = pd.concat([df, df.iloc[:2]], ignore_index=True)
        human = pd.concat([df, df[df["judge"] == "J0"].assign(judge="H1")], ignore_index=True)
        path = tmp_path / "scores.csv"
        df.to_csv(path, index=False)
        return {
            "arrow_frame": lambda: read_scores(df),
            "criteria": lambda: read_scores(crit),
            "duplicates_mean": lambda: read_scores(dup, duplicates="mean"),
            "reference": lambda: read_scores(human, reference="H1"),
            "csv_file": lambda: read_scores(path),
            "subset": lambda: read_scores(crit).subset(models=["B"]),
            "composite": lambda: read_scores(crit).composite(),
        }

    @staticmethod
    def _assert_same(a, b):
        assert type(a) is type(b) and repr(a) == repr(b)
        pd.testing.assert_frame_equal(a.to_frame(), b.to_frame())
        pd.testing.assert_frame_equal(a.design, b.design)
        assert dict(a.provenance) == dict(b.provenance)
        assert a.has_reference == b.has_reference and a.reference_judges == b.reference_judges
        pd.testing.assert_frame_equal(a.reference_frame(), b.reference_frame())
        for ga, gb in zip(a.groups(), b.groups(), strict=True):
            assert ga.design == gb.design and ga.key == gb.key and ga.judge_labels == gb.judge_labels
            for name in ("y", "scenario", "cell", "judge", "cell_scenario", "scenario_labels",
                         "cell_generation_labels"):
                x, y = getattr(ga, name), getattr(gb, name)
                np.testing.assert_array_equal(x, y)
                assert x.dtype == y.dtype
                assert not y.flags.writeable, f"{name} of a copied group is writable"

    @pytest.mark.parametrize("case", ["arrow_frame", "criteria", "duplicates_mean", "reference", "csv_file",
                                      "subset", "composite"])
    @pytest.mark.parametrize("how", ["pickle", "deepcopy", "save_load"])
    def test_round_trip(self, tmp_path, case, how):
        import copy
        import pickle

        original = self._sources(tmp_path)[case]()
        fresh = self._sources(tmp_path)[case]()  # never asked for its frame before the copy
        if how == "save_load":                   # a portable directory: Parquet + JSON, no pickle
            saved = fresh.save(tmp_path / "saved")
            assert sorted(p.name for p in saved.iterdir()) == sorted(
                ["scores.json", "scores.parquet"] + (["reference.parquet"] if fresh.has_reference else []))
            copied = Scores.load(saved)
        else:
            copied = pickle.loads(pickle.dumps(fresh)) if how == "pickle" else copy.deepcopy(fresh)
        self._assert_same(original, copied)
        with pytest.raises(TypeError):  # the copy's provenance is read-only, like the original's
            copied.provenance["source"] = "x"
        # the copy analyses to the same numbers
        a = cj.estimate(original, "anova", scenario_judge=False).components
        b = cj.estimate(copied, "anova", scenario_judge=False).components
        pd.testing.assert_frame_equal(a, b, check_exact=True)

    def test_save_refuses_a_path_that_is_not_a_saved_table_and_load_one_that_holds_none(self, tmp_path):
        s = read_scores(_frame())
        (tmp_path / "notes.txt").write_text("mine")
        with pytest.raises(CjstatsError, match="exists and is not a saved score table"):
            s.save(tmp_path / "notes.txt")
        with pytest.raises(CjstatsError, match="holds no saved score table"):
            Scores.load(tmp_path)
        s.save(tmp_path / "t")
        s.save(tmp_path / "t")                   # a saved table is replaced
        (tmp_path / "t" / "scores.json").write_text('{"format": "cjstats-scores", "format_version": 99}')
        with pytest.raises(CjstatsError, match="cannot read; upgrade cjstats"):
            Scores.load(tmp_path / "t")

    def test_group_types_round_trip(self):
        import copy
        import pickle

        g = next(read_scores(_frame()).groups())
        for back in (pickle.loads(pickle.dumps(g)), copy.deepcopy(g)):
            assert back.design == g.design and pickle.loads(pickle.dumps(g.design)) == g.design
            np.testing.assert_array_equal(back.y, g.y)
            assert not back.y.flags.writeable and not back.cell.flags.writeable
            np.testing.assert_array_equal(back.dense(), g.dense())
