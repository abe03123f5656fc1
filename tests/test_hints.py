"""Hints that point to the right fix (issue 24), and the README's set-up statements kept true.

A wide table is told to use judge_columns, a folder the glob with the DuckDB engine, ``estimate(path)`` the
engine or read_scores, and an unknown ``estimate`` option (backend or engine) is one sentence naming the known
ones; ``engine_options=`` passes ``memory_limit`` to DuckDB as ``compare_models`` does.
"""

from __future__ import annotations

import inspect
import re
import tomllib
from importlib import import_module
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import cjstats as cj
from cjstats.estimators import ENGINE_OPTIONS, UnknownOptionError
from cjstats.exceptions import CjstatsError
from cli_helpers import run_main

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def wide(tmp_path):
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"model": np.repeat(["a", "b"], 6), "scenario": np.tile(np.arange(6), 2),
                       "score_gpt4": rng.integers(1, 6, 12), "score_claude": rng.integers(1, 6, 12),
                       "score_gemini": rng.integers(1, 6, 12), "judge_notes": "ok"})
    path = tmp_path / "wide.csv"
    df.to_csv(path, index=False)
    return path


class TestWideTable:
    def test_the_library_names_judge_columns(self, wide):
        with pytest.raises(CjstatsError, match=re.escape("read the wide table with read_scores(path, "
                                                         "judge_columns='score_*').")):
            cj.read_scores(wide)

    def test_the_cli_names_the_judge_columns_option_and_it_works(self, wide):
        code, out, err = run_main(["decompose", str(wide)])
        assert code == 1 and out == ""
        assert err.endswith("read the wide table with --judge-columns 'score_*'.\n") and "--columns" not in err
        code, out, err = run_main(["decompose", str(wide), "--judge-columns", "score_*"])
        assert code == 0, err

    def test_a_long_table_with_a_renamed_judge_still_gets_the_mapping(self, tmp_path):
        df = pd.DataFrame({"model": "a", "scenario": [1, 1, 2, 2], "rater": ["x", "y"] * 2, "score": [1, 2, 3, 4]})
        with pytest.raises(CjstatsError, match=re.escape("columns={'rater': 'judge'}")):
            cj.read_scores(df)


class TestFolder:
    def test_the_library_points_to_the_glob_with_duckdb(self, tmp_path):
        with pytest.raises(CjstatsError, match=re.escape(f"cj.estimate('{tmp_path}/*.parquet', engine='duckdb')")):
            cj.read_scores(tmp_path)

    @pytest.mark.parametrize("name", ["decompose", "judges", "humans"])
    def test_the_cli_points_to_the_glob_with_engine_duckdb(self, tmp_path, name):
        code, out, err = run_main([name, str(tmp_path)])
        assert code == 1 and out == ""
        assert err == (f"FILE `{tmp_path}` is a folder; give one score file, or fit every file in it without loading "
                       f"the rows, with a quoted glob: cjstats decompose '{tmp_path}/*.parquet' --engine duckdb (or "
                       f"cjstats compare).\n")

    def test_the_advised_glob_runs(self, tmp_path):
        pytest.importorskip("duckdb")
        scores = cj.datasets.load("hanna", composite=True).subset(models=["GPT-2", "Human"])
        for i, model in enumerate(scores.models):
            scores.subset(models=[model]).to_frame().to_parquet(tmp_path / f"part{i}.parquet")
        code, out, err = run_main(["decompose", f"{tmp_path}/*.parquet", "--engine", "duckdb", "--format", "json"])
        assert code == 0, err
        assert {r["model"] for r in __import__("json").loads(out)} == {"GPT-2", "Human"}


@pytest.fixture(scope="module")
def scores():
    return cj.datasets.load("hanna", composite=True).subset(models=["GPT-2", "Human"])


class TestEstimate:

    def test_a_path_without_an_engine_names_the_engine_and_read_scores(self):
        with pytest.raises(CjstatsError, match=re.escape("estimate reads a path only with an out-of-core engine: "
                                                         "pass engine='duckdb'")):
            cj.estimate("scores.csv")

    @pytest.mark.parametrize("method, option, known", [
        ("anova", "intervals", "interval, incomplete, max_drop, scenario_judge"),
        ("reml", "n_bootstrap", "interval, n_boot, path, progress, scenario_judge")])
    def test_an_unknown_option_is_one_sentence_naming_the_known_ones(self, scores, method, option, known):
        with pytest.raises(UnknownOptionError) as info:
            cj.estimate(scores, method, **{option: 1})
        assert str(info.value) == (f"estimate has no option '{option}' for method='{method}' (its options: {known}; "
                                   f"engine options go in engine_options=).")
        assert isinstance(info.value, CjstatsError) and isinstance(info.value, TypeError)

    def test_an_engine_option_among_the_backend_options_points_to_engine_options(self, scores):
        with pytest.raises(CjstatsError, match=re.escape("pass it as engine_options={'memory_limit': ...}")):
            cj.estimate(scores, "reml", memory_limit="1GB")

    def test_engine_options_reach_duckdb(self, scores, tmp_path, monkeypatch):
        pytest.importorskip("duckdb")
        path = tmp_path / "s.parquet"
        scores.to_frame().to_parquet(path)
        engine = import_module("cjstats.stats.engines.duckdb_engine")
        seen = {}
        real = engine.build

        def spy(source, **kwargs):
            seen.update(kwargs)
            return real(source, **kwargs)

        monkeypatch.setattr(engine, "build", spy)
        fit = cj.estimate(str(path), "reml", engine="duckdb", engine_options={"memory_limit": "1GB"})
        assert seen["memory_limit"] == "1GB"
        pd.testing.assert_frame_equal(fit.components, cj.estimate(scores, "reml").components, rtol=1e-8)

    def test_unknown_engine_options_are_one_sentence(self, scores):
        with pytest.raises(UnknownOptionError, match="engine_options names 'memory_limt', which engine='duckdb' "
                                                     "does not take"):
            cj.estimate("s.parquet", "reml", engine="duckdb", engine_options={"memory_limt": "1GB"})
        with pytest.raises(CjstatsError, match="the numpy engine takes none"):
            cj.estimate(scores, "reml", engine_options={"memory_limit": "1GB"})

    @pytest.mark.parametrize("engine", sorted(ENGINE_OPTIONS))
    def test_the_engine_option_list_is_each_engines_signature(self, engine):
        mod = pytest.importorskip(f"cjstats.stats.engines.{engine}_engine")
        params = inspect.signature(mod.build).parameters
        structural = ("source", "unit", "terms", "covariates", "likelihood")   # what the model asks for, not options
        assert set(ENGINE_OPTIONS[engine]) == {n for n in params if n not in structural}


class TestEngineAndHumans:
    def test_a_file_with_human_raters_is_refused_by_the_out_of_core_engine(self, tmp_path):
        path = tmp_path / "hanna.csv"
        cj.datasets.export("hanna", path)
        code, out, err = run_main(["decompose", str(path), "--engine", "duckdb"])
        assert code == 1 and err.startswith("FILE has a judge_type column (human reference raters), which --engine "
                                            "duckdb would count as judges")


class TestReadme:
    TEXT = (ROOT / "README.md").read_text()

    def test_the_readme_names_exactly_what_all_leaves_out(self):
        extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
        in_all = set(re.search(r"cjstats\[([^\]]+)\]", extras["all"][0]).group(1).split(","))
        left_out = set(extras) - in_all - {"all", "test"}
        said = re.search(r"`\[all\]` is every analysis extra \(([^)]*)\); (.*?) are separate", self.TEXT, re.S)
        assert said, "README must say what [all] holds"
        assert set(said.group(1).replace(" ", "").split(",")) == in_all
        assert set(re.findall(r"`(\w+)`", said.group(2))) == left_out
        test_has = set(re.search(r"cjstats\[([^\]]+)\]", extras["test"][0]).group(1).split(","))
        assert left_out | {"all"} <= test_has            # "[test] installs all of them"

    def test_the_readme_warns_about_a_shadowing_clone_and_says_how_long_the_tests_take(self):
        assert "module 'cjstats' has no attribute 'datasets'" in self.TEXT
        assert re.search(r"the test command takes about \d+ minutes", self.TEXT)

    def test_the_readme_cli_block_names_only_existing_subcommands(self):
        from cjstats.cli import cli

        block = self.TEXT.split("### Command line", 1)[1].split("```", 2)[1]
        used = set(re.findall(r"^cjstats (\w+)", block, re.M))
        assert used <= set(cli.commands) and {"datasets", "compare", "humans"} <= used


def test_logs_and_loaders_read_inspect_logs_the_same_way():
    logs = (ROOT / "docs" / "logs.md").read_text()
    loaders = (ROOT / "docs" / "loaders.md").read_text()
    first = logs.split("**Inspect**", 1)[1]
    assert first.index("cj.read_inspect_log(") < first.index("samples_df")   # the loader first, by-hand second
    assert "cj.read_inspect_log(" in loaders and "logs.md" in loaders
