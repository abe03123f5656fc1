"""Loaders: FastChat folders/globs/lists, wide tables (one column per judge)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import cjstats as cj
from cjstats import CjstatsError, read_scores


def _write_fastchat(folder, judge, base):
    folder.mkdir(exist_ok=True)
    p = folder / f"{judge}_single.jsonl"
    with open(p, "w") as fh:
        for q in (81, 82, 83):
            for model in ("alpaca-13b", "vicuna-13b"):
                fh.write(json.dumps({"question_id": q, "model": model, "judge": [judge, "single-v1"],
                                     "score": base + q % 3, "turn": 1}) + "\n")
    return p


class TestFastChat:
    def test_folder_glob_and_list_give_one_table_of_every_judge(self, tmp_path):
        d = tmp_path / "model_judgment"
        files = [_write_fastchat(d, "gpt-4", 5.0), _write_fastchat(d, "claude-v1", 6.0)]
        by_folder = cj.read_mtbench_judgments(d)
        by_glob = cj.read_mtbench_judgments(str(d / "*_single.jsonl"))
        by_list = cj.read_mtbench_judgments(files)
        for s in (by_folder, by_glob, by_list):
            assert s.judges == ["claude-v1", "gpt-4"] and len(s) == 12
            assert s.design["complete"].all()
        pd.testing.assert_frame_equal(by_folder.to_frame(), by_list.to_frame())

    def test_the_loader_lives_in_io_and_is_public(self):
        from cjstats.io.fastchat import read_mtbench_judgments as new

        assert cj.read_mtbench_judgments is new

    @pytest.mark.parametrize("kind, text", [("folder", "holds no judgment file"), ("glob", "matches no file"),
                                            ("list", "empty list")])
    def test_nothing_to_read_is_one_sentence(self, tmp_path, kind, text):
        arg = {"folder": tmp_path, "glob": str(tmp_path / "*_single.jsonl"), "list": []}[kind]
        with pytest.raises(CjstatsError, match=text):
            cj.read_mtbench_judgments(arg)


class TestWideTables:
    def _wide(self):
        rng = np.random.default_rng(0)
        return pd.DataFrame({"model": "A", "scenario": range(6), "score_gpt4": rng.integers(1, 6, 6),
                             "score_claude": rng.integers(1, 6, 6), "notes": "x"})

    def test_pattern_gives_the_same_table_as_the_long_form(self):
        wide = self._wide()
        long = wide.melt(id_vars=["model", "scenario"], value_vars=["score_gpt4", "score_claude"],
                         var_name="judge", value_name="score")
        long["judge"] = long["judge"].str.removeprefix("score_")
        got = read_scores(wide, judge_columns="score_*").to_frame()
        want = read_scores(long).to_frame()
        pd.testing.assert_frame_equal(got, want)

    def test_list_of_columns_keeps_the_names_and_leaves_blanks_out(self, tmp_path):
        wide = self._wide().astype({"score_claude": float})
        wide.loc[2, "score_claude"] = np.nan
        p = tmp_path / "wide.csv"
        wide.to_csv(p, index=False)
        s = read_scores(p, judge_columns=["score_gpt4", "score_claude"])
        assert s.judges == ["score_claude", "score_gpt4"] and len(s) == 11
        assert s.provenance["wide_blank_cells"] == 1 and s.design["n_missing"].item() == 1

    @pytest.mark.parametrize("arg, text", [("rating_*", "matches no column"), (["nope"], "has no column 'nope'"),
                                           (3, "must be a list of column names or a pattern")])
    def test_bad_judge_columns_are_one_sentence(self, arg, text):
        with pytest.raises(CjstatsError, match=text):
            read_scores(self._wide(), judge_columns=arg)


class TestBrokenFiles:
    def test_fastchat_file_that_is_not_utf8_is_one_sentence(self, tmp_path):
        p = tmp_path / "j_single.jsonl"
        p.write_bytes(b'{"question_id": 1, "model": "a", "judge": ["\xe9", "t"], "score": 3}\n')
        with pytest.raises(CjstatsError, match="is not UTF-8 text"):
            cj.read_mtbench_judgments(p)

    def test_fastchat_truncated_gz_is_cut_short(self, tmp_path):
        import gzip

        p = tmp_path / "j_single.jsonl.gz"
        body = "".join(json.dumps({"question_id": q, "model": "a", "judge": ["g", "t"], "score": 3}) + "\n"
                       for q in range(2000)).encode()
        data = gzip.compress(body)
        p.write_bytes(data[: len(data) // 2])
        with pytest.raises(CjstatsError, match="is cut short"):
            cj.read_mtbench_judgments(p)

    def test_inspect_file_that_is_not_a_log_is_one_sentence(self, tmp_path):
        pytest.importorskip("inspect_ai")
        p = tmp_path / "x.eval"
        p.write_bytes(b"not a zip")
        with pytest.raises(CjstatsError, match="is not an Inspect .eval log"):
            cj.read_inspect_log(p)


def test_inspect_log_sources_follow_the_same_rule_as_fastchat(tmp_path):
    """Both loaders expand a source through one rule: file, folder, glob, list (each file once)."""
    from cjstats.io.inspect import log_files

    for name in ("a.eval", "b.json", "logs.json"):
        (tmp_path / name).write_text("{}")
    folder = log_files(tmp_path)
    assert [p.name for p in folder] == ["a.eval", "b.json"]          # Inspect's index file is not a log
    assert log_files(str(tmp_path / "*.eval")) == [tmp_path / "a.eval"]
    assert log_files([tmp_path / "a.eval", tmp_path]) == [tmp_path / "a.eval", tmp_path / "b.json"]
    with pytest.raises(CjstatsError, match="matches no file"):
        log_files(str(tmp_path / "*.nothing"))
