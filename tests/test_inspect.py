"""Inspect AI: real logs written offline by the test with the ``mockllm`` provider, read back by cjstats.

No network and no API key: every model (the evaluated ones and the graders) is ``mockllm`` with scripted
outputs that carry their token usage (so Inspect does not download a tokenizer to count them).
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

pytest.importorskip("inspect_ai")

from cjstats import CjstatsError, read_scores  # noqa: E402
from cjstats.decisions.inspect_scorer import cyclic_judge_scorer  # noqa: E402
from cjstats.io.inspect import read_inspect_log  # noqa: E402
from cjstats.decisions.schedules import cyclic_schedule  # noqa: E402

N_SAMPLES, EPOCHS = 4, 3
GRADES = {"ga": "CIPCIICPCCIC", "gb": "ICICICCCIICI", "gc": "CCIICCIIPCCI"}


def _mock(name: str, texts: list[str]):
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    outs = []
    for text in texts:
        out = ModelOutput.from_content(model=name, content=text)
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        outs.append(out)
    return get_model(f"mockllm/{name}", custom_outputs=outs)


def _dataset():
    from inspect_ai.dataset import Sample

    return [Sample(id=f"q{i}", input=f"Question {i}?", target="yes") for i in range(N_SAMPLES)]


def _run(scorer, model: str, log_dir) -> None:
    from inspect_ai import Task, eval
    from inspect_ai.solver import generate

    task = Task(dataset=_dataset(), solver=generate(), epochs=EPOCHS, scorer=scorer)
    [log] = eval(task, model=_mock(model, ["yes"] * N_SAMPLES * EPOCHS), log_dir=str(log_dir), display="none")
    assert log.status == "success", log.error


@pytest.fixture(scope="module")
def panel_logs(tmp_path_factory):
    """Two evaluated models, each graded by three model_graded_qa graders (one with partial credit)."""
    from inspect_ai.scorer import model_graded_qa

    d = tmp_path_factory.mktemp("inspect_panel")
    for model in ("model-x", "model-y"):
        scorers = [model_graded_qa(model=_mock(g, [f"GRADE: {c}" for c in grades]), partial_credit=(g == "ga"))
                   for g, grades in GRADES.items()]
        _run(scorers, model, d)
    return d


@pytest.fixture(scope="module")
def cyclic_logs(tmp_path_factory):
    d = tmp_path_factory.mktemp("inspect_cyclic")
    # no partial credit here: "P" would be an unparsed grade, so grade C/I only
    graders = [_mock(g, [f"GRADE: {c}" for c in grades.replace("P", "C")]) for g, grades in GRADES.items()]
    _run(cyclic_judge_scorer(graders, _dataset(), epochs=EPOCHS, seed=0), "model-x", d)
    return d


def _by_hand(folder) -> pd.DataFrame:
    """The long table built from Inspect's own samples_df, knowing which grader each scorer used."""
    from inspect_ai.analysis import evals_df, samples_df

    grader = {"score_model_graded_qa": "mockllm/ga", "score_model_graded_qa1": "mockllm/gb",
              "score_model_graded_qa2": "mockllm/gc"}
    samples = samples_df(str(folder), quiet=True)
    models = evals_df(str(folder), quiet=True).set_index("eval_id")["model"]
    long = samples.melt(id_vars=["eval_id", "id", "epoch"], value_vars=list(grader), var_name="col",
                        value_name="grade").dropna(subset=["grade"])
    return pd.DataFrame({"model": long["eval_id"].map(models).to_numpy(), "scenario": long["id"].to_numpy(),
                         "generation": long["epoch"].astype(int).to_numpy(),
                         "judge": long["col"].map(grader).to_numpy(),
                         "score": long["grade"].map({"C": 1.0, "P": 0.5, "I": 0.0}).to_numpy()})


class TestReadInspectLog:
    def test_table_equals_the_one_built_from_samples_df(self, panel_logs):
        got = read_inspect_log(panel_logs)
        want = read_scores(_by_hand(panel_logs))
        pd.testing.assert_frame_equal(got.to_frame(), want.to_frame())
        assert got.models == ["mockllm/model-x", "mockllm/model-y"]
        assert got.judges == ["mockllm/ga", "mockllm/gb", "mockllm/gc"]
        assert set(got.design["generations"]) == {EPOCHS} and set(got.design["n_scenarios"]) == {N_SAMPLES}

    def test_partial_credit_maps_like_inspect(self, panel_logs):
        f = read_inspect_log(panel_logs).to_frame()
        assert set(f.loc[f["judge"] == "mockllm/ga", "score"]) == {0.0, 0.5, 1.0}

    def test_values_override_the_letter_mapping(self, panel_logs):
        f = read_inspect_log(panel_logs, values={"P": 0.25, "C": 2}).to_frame()
        assert set(f.loc[f["judge"] == "mockllm/ga", "score"]) == {0.0, 0.25, 2.0}

    def test_one_file_or_a_list_reads_the_same_rows(self, panel_logs):
        files = sorted(panel_logs.glob("*.eval"))
        one = read_inspect_log(files[0])
        both = read_inspect_log(list(files))
        assert len(one.models) == 1 and len(both) == len(read_inspect_log(panel_logs))

    @pytest.mark.parametrize("kind, text", [("missing", "does not exist"), ("empty", "holds no Inspect log"),
                                            ("values", "must be a mapping")])
    def test_unusable_input_is_one_sentence(self, tmp_path, panel_logs, kind, text):
        with pytest.raises(CjstatsError, match=text):
            if kind == "missing":
                read_inspect_log(tmp_path / "nope.eval")
            elif kind == "empty":
                read_inspect_log(tmp_path)
            else:
                read_inspect_log(panel_logs, values=[1, 0])


class TestCyclicJudgeScorer:
    def test_each_judge_scores_its_scheduled_share(self, cyclic_logs):
        s = read_inspect_log(cyclic_logs)
        f = s.to_frame()
        assert s.provenance["unscored"] == 0
        counts = f["judge"].value_counts().to_dict()
        # 4 samples x 3 epochs = 12 cells, k = 1, K = 3: four calls per judge
        assert counts == {"mockllm/ga": 4, "mockllm/gb": 4, "mockllm/gc": 4}

    def test_loaded_design_is_the_schedule(self, cyclic_logs):
        f = read_inspect_log(cyclic_logs).to_frame()
        plan = cyclic_schedule([f"q{i}" for i in range(N_SAMPLES)], ["mockllm/ga", "mockllm/gb", "mockllm/gc"],
                               generations=EPOCHS, seed=0)
        gens = sorted(plan["generation"].unique())
        want = {(s, gens.index(g) + 1, j) for s, g, j in plan[["scenario", "generation", "judge"]].itertuples(
            index=False)}
        assert set(zip(f["scenario"], f["generation"], f["judge"])) == want

    def test_every_generation_has_k_judges(self, cyclic_logs):
        s = read_inspect_log(cyclic_logs)
        assert (s.to_frame().groupby(["scenario", "generation"]).size() == 1).all()
        assert not math.isnan(s.to_frame()["score"].mean())

    def test_empty_panel_is_one_sentence(self):
        with pytest.raises(CjstatsError, match="'graders' argument of cyclic_judge_scorer is empty"):
            cyclic_judge_scorer([], 3)
