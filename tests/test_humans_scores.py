"""Reference (human) raters in the score table: kept apart from the LLM judges, carried through the design."""

from __future__ import annotations

import pandas as pd
import pytest

import cjstats as cj
from cjstats.exceptions import CjstatsError


def _table(with_type: bool = True) -> pd.DataFrame:
    rows = []
    for model in ("a", "b"):
        for s in range(4):
            for judge in ("j1", "j2"):
                rows.append({"model": model, "scenario": s, "judge": judge, "score": 3.0 + s % 2,
                             "judge_type": "llm"})
            if s < 3:
                rows.append({"model": model, "scenario": s, "judge": "expert", "score": 4.0, "judge_type": "human"})
    df = pd.DataFrame(rows)
    return df if with_type else df.drop(columns="judge_type")


class TestJudgeTypeColumn:
    def test_human_rows_become_reference_and_groups_see_only_llm_judges(self):
        s = cj.read_scores(_table())
        assert s.has_reference and s.reference_judges == ["expert"]
        assert s.judges == ["j1", "j2"]
        assert all(g.design.n_judges == 2 for g in s.groups())
        assert len(s.reference_frame()) == 6 and set(s.reference_frame()["judge"]) == {"expert"}

    def test_provenance_says_reference_raters_are_excluded(self):
        s = cj.read_scores(_table())
        assert s.provenance["reference"].startswith("reference raters excluded from the analysis: expert")

    def test_design_counts_reference_raters_and_items(self):
        d = cj.read_scores(_table()).design
        assert d["n_reference_raters"].tolist() == [1, 1]
        assert d["reference_items"].tolist() == [3, 3]

    def test_unknown_judge_type_value_is_one_sentence(self):
        df = _table()
        df.loc[5, "judge_type"] = "crowd"
        msg = r"Column 'judge_type' must hold 'human' or 'llm' but has 'crowd' in row 5"
        with pytest.raises(CjstatsError, match=msg):
            cj.read_scores(df)

    def test_table_of_reference_rows_only_is_refused(self):
        df = _table()
        with pytest.raises(CjstatsError, match="no LLM-judge rows"):
            cj.read_scores(df[df["judge_type"] == "human"])


class TestReferenceArgument:
    def test_named_reference_without_judge_type(self):
        s = cj.read_scores(_table(with_type=False), reference="expert")
        assert s.reference_judges == ["expert"] and s.judges == ["j1", "j2"]

    def test_unknown_reference_name_is_one_sentence(self):
        with pytest.raises(CjstatsError, match=r"reference rater 'human-expert' is not in column 'judge'"):
            cj.read_scores(_table(with_type=False), reference="human-expert")

    def test_no_reference_keeps_every_judge(self):
        s = cj.read_scores(_table(with_type=False))
        assert not s.has_reference and s.reference_judges == [] and "n_reference_raters" not in s.design


class TestCarriedThrough:
    def test_subset_keeps_the_reference_of_the_kept_models(self):
        s = cj.read_scores(_table()).subset(models=["a"])
        assert set(s.reference_frame()["model"]) == {"a"}

    def test_composite_averages_reference_criteria(self):
        df = pd.concat([_table().assign(criterion="c1"), _table().assign(criterion="c2")], ignore_index=True)
        df.loc[(df["criterion"] == "c2") & (df["judge"] == "expert"), "score"] = 2.0
        comp = cj.read_scores(df).composite()
        assert comp.has_reference and (comp.reference_frame()["score"] == 3.0).all()

    def test_estimate_ignores_reference_rows(self):
        with_ref = cj.estimate(cj.read_scores(_table()), "anova").components
        without = cj.estimate(cj.read_scores(_table()[lambda d: d["judge_type"] == "llm"]), "anova").components
        pd.testing.assert_frame_equal(with_ref, without)


class TestBundledHumans:
    def test_mentalalign_has_one_expert_on_981_scenarios(self):
        s = cj.datasets.load("mentalalign", humans=True)
        ref = s.reference_frame()
        assert s.reference_judges == ["human-expert"]
        assert ref["scenario"].nunique() == 981
        assert len(s.judges) == 4

    def test_hanna_has_three_human_slots_per_story(self):
        s = cj.datasets.load("hanna", humans=True)
        assert s.reference_judges == ["human_slot_1", "human_slot_2", "human_slot_3"]
        d = s.design
        assert (d["n_reference_raters"] == 3).all() and (d["reference_items"] == 96).all()

    def test_default_load_has_no_humans(self):
        assert not cj.datasets.load("hanna").has_reference

    def test_hanna_prompt_variants_as_generations_refuse_humans(self):
        with pytest.raises(CjstatsError, match="humans rated each story once"):
            cj.datasets.load("hanna", eval_prompt="as_generation", humans=True)
