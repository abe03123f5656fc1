"""The regression battery: one definition of a fixed set of fits and decision-layer calls, and the comparison of
their result frames with stored fixtures.

``tests/data/battery/make_battery.py`` runs :func:`build_battery` and writes every frame to
``tests/data/battery/<fit>__<frame>.parquet`` plus ``index.json``; ``tests/test_numbers_unchanged.py`` runs the
same :func:`build_battery` and compares every frame with :func:`compare_frames` (numeric columns to
rtol = atol = 1e-12, NaN == NaN, inf == inf; string and bool columns exactly; same columns and index).

Everything here is deterministic: fixed seeds, no Bayesian fits, no bootstraps. ``provenance`` (dates, versions)
is never stored. Mappings (``diagnostics``, joint ``tests``, covariance objects, an allocation's
``recommendation``) are flattened by :func:`flatten` into ``key, value, text`` rows.
"""

from __future__ import annotations

import dataclasses
import json
import math
import warnings
from collections.abc import Callable, Iterator, Mapping
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

DATA_DIR = Path(__file__).parent / "data" / "battery"
INDEX_FILE = "index.json"
RTOL = 1e-12
ATOL = 1e-12

Frames = dict[tuple[str, str], pd.DataFrame]


# ------------------------------------------------------------------------------------------- flattening
def flatten(obj: Any, prefix: str = "") -> Iterator[tuple[str, float, str]]:
    """``(key, value, text)`` rows of a nested mapping / sequence / array / dataclass: numbers in ``value``
    (text empty), strings, bools and None in ``text`` (value NaN). Keys are paths such as ``theta.scenario`` or
    ``cov[0,1]``."""
    if isinstance(obj, pd.DataFrame | pd.Series):
        frame = obj.to_frame() if isinstance(obj, pd.Series) else obj
        for (r, c), v in frame.stack(future_stack=True).items():
            yield from flatten(v, f"{prefix}[{r},{c}]")
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            yield from flatten(getattr(obj, f.name), f"{prefix}.{f.name}" if prefix else f.name)
    elif isinstance(obj, Mapping):
        for k, v in obj.items():
            yield from flatten(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(obj, np.ndarray):
        if obj.dtype.kind in "fiu":
            for idx in np.ndindex(obj.shape):
                yield f"{prefix}[{','.join(map(str, idx))}]", float(obj[idx]), ""
        else:
            for idx in np.ndindex(obj.shape):
                yield from flatten(obj[idx], f"{prefix}[{','.join(map(str, idx))}]")
    elif isinstance(obj, list | tuple):
        for i, v in enumerate(obj):
            yield from flatten(v, f"{prefix}[{i}]")
    elif obj is None or obj is pd.NA:
        yield prefix, math.nan, "None"
    elif isinstance(obj, bool | np.bool_):
        yield prefix, math.nan, str(bool(obj))
    elif isinstance(obj, int | float | np.integer | np.floating):
        yield prefix, float(obj), ""
    else:
        yield prefix, math.nan, str(obj)


def flat_frame(obj: Any, **keys: Any) -> pd.DataFrame:
    """:func:`flatten` as a frame, with constant ``keys`` columns first."""
    rows = list(flatten(obj))
    df = pd.DataFrame(rows, columns=["key", "value", "text"])
    for i, (k, v) in enumerate(keys.items()):
        df.insert(i, k, str(v))
    return df.astype({"value": "float64"})


def _mapping_frames(named: Mapping[str, Any]) -> pd.DataFrame:
    """One flattened frame of several objects, with a ``group`` column naming each."""
    parts = [flat_frame(v, group=k) for k, v in named.items()]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["group", "key", "value", "text"])


# ---------------------------------------------------------------------------------------- result frames
def vc_frames(fit: Any) -> dict[str, pd.DataFrame]:
    """The frames of a VarianceComponents (provenance left out: it holds a date and the version)."""
    out = {"components": fit.components, "judge_offsets": fit.judge_offsets, "design": fit.design,
           "meta": flat_frame({"method": fit.method, "ci_level": fit.ci_level, "scale": fit.scale,
                               "has_criterion": fit.has_criterion})}
    if fit.dropped is not None:
        out["dropped"] = fit.dropped
    if fit.covariance:
        out["covariance"] = _mapping_frames(dict(fit.covariance))
    out["diagnostics"] = _mapping_frames(dict(fit.diagnostics))
    return out


def joint_frames(fit: Any) -> dict[str, pd.DataFrame]:
    """The frames of a JointFit: components, cell means, tests, diagnostics, covariance, model means."""
    cells = pd.DataFrame(fit.cell_means, index=pd.Index(list(fit.models), name="model"),
                         columns=list(fit.judges))
    out = {"components": fit.components, "cell_means": cells,
           "tests": _mapping_frames(dict(fit.tests)),
           "diagnostics": _mapping_frames(dict(fit.diagnostics)),
           "meta": flat_frame({"method": fit.method, "ci_level": fit.ci_level, "models": list(fit.models),
                               "judges": list(fit.judges)})}
    if fit.covariance is not None:
        out["covariance"] = flat_frame(fit.covariance)
        mm = {"model_means": fit.model_means()}
        for view in ("panel", "population"):
            cov, df = fit.model_mean_covariance(view)
            mm[f"model_mean_covariance.{view}"] = cov
            mm[f"model_mean_df.{view}"] = df
        out["model_means"] = flat_frame(mm)
    if fit.dropped is not None:
        out["dropped"] = fit.dropped
    return out


def comparison_frames(res: Any) -> dict[str, pd.DataFrame]:
    """The frames of a ModelComparison (its joint fit is stored separately)."""
    return {"differences": res.differences, "ranks": res.ranks,
            "significance_matrix": res.significance_matrix(), "letters": res.letters().to_frame(),
            "meta": flat_frame({"method": res.method, "view": res.view, "ci_level": res.ci_level,
                                "adjust": res.adjust, "rank_method": res.rank_method})}


def self_preference_frames(sp: Any) -> dict[str, pd.DataFrame]:
    return {"contrasts": sp.contrasts, "interaction": sp.interaction,
            "test": flat_frame(dict(sp.test)), "families": flat_frame(dict(sp.families))}


def allocation_frames(a: Any) -> dict[str, pd.DataFrame]:
    scalars = {k: getattr(a, k) for k in ("recommendation", "budget", "budget_unit", "target_se", "k_total",
                                          "n_max", "components", "judge_costs", "generation_cost", "frequencies",
                                          "uncertainty", "ci_level", "model", "criterion", "notes")}
    return {"table": a.table, "strategies": a.strategies, "designs": a.designs, "meta": flat_frame(scalars)}


# --------------------------------------------------------------------------------------------- tables
def _passfail() -> Any:
    from cjstats.io.read import read_scores
    from cjstats.studies.simulate import simulate_ordinal_scores

    return read_scores(pd.concat([
        simulate_ordinal_scores(40, 2, 4, s2a=0.8, s2b=0.3, gamma=np.array([-0.5, 0.0, 0.2, 0.4]),
                                cuts=np.array([0.1]), seed=11, model="a", link="probit"),
        simulate_ordinal_scores(40, 2, 4, s2a=0.5, s2b=0.2, gamma=np.array([-0.3, 0.1, 0.0, 0.5]),
                                cuts=np.array([-0.2]), seed=12, model="b", link="logit")], ignore_index=True))


def _table_makers() -> dict[str, Callable[[Battery], Any]]:
    """The score tables of the battery (bundled data, and the package's own simulators with fixed seeds)."""
    import cjstats as cj

    t3 = cj.Truth.table3(["GPT", "Claude", "Llama"])
    return {
        "hanna": lambda b: cj.datasets.load("hanna", keep_sentinels=True),   # the table the battery was recorded on
        "hanna_comp": lambda b: cj.datasets.load("hanna", composite=True, keep_sentinels=True),
        "ma": lambda b: cj.datasets.load("mentalalign"),
        # ordinal ML on all 10 models x 7 criteria is slow: 3 models x 2 criteria (Safety has judges that give
        # every item the top score: complete separation, an infinite offset)
        "ma_small": lambda b: b.table("ma").subset(models=["gpt-4o", "gemini-2.0-flash", "qwen3-4b"],
                                                   criteria=["Empathy", "Safety"]),
        "ma_comp": lambda b: cj.datasets.load("mentalalign", composite=True),
        # the per-model REML joint fit of all 10 models takes ~25 s: 4 models
        "ma_comp4": lambda b: b.table("ma_comp").subset(models=["gpt-4o", "gpt-4o-mini", "claude-3.5-haiku",
                                                                "qwen3-4b"]),
        # unbalanced: m = 3, judge calls lost at random (mcar), so REML only
        "sim_unbal": lambda b: cj.simulate_scores(t3, n=30, m=3, k=4, misspec={"mcar": 0.1}, seed=20240601),
        # m = 1, complete
        "sim_m1": lambda b: cj.simulate_scores(t3, n=40, m=1, k=5, seed=20240602),
        # m = 1 with lost calls: the ANOVA's incomplete="drop" drops scenarios
        "sim_m1_mcar": lambda b: cj.simulate_scores(t3, n=40, m=1, k=5, misspec={"mcar": 0.05}, seed=20240603),
        # integer 1..10 scores, m = 2, with lost calls: the ordinal backend on an unbalanced table
        "sim_ord": lambda b: cj.simulate_scores(cj.Truth.table3(["GPT", "Llama"]), n=30, m=2, k=4,
                                                misspec={"ordinal": 10, "mcar": 0.05}, seed=20240604),
        # the scenario x judge interaction present in the data (m = 3, so it is identifiable)
        "sim_sj": lambda b: cj.simulate_scores(cj.Truth.table3(["GPT"]), n=25, m=3, k=4,
                                               misspec={"scenario_judge": 0.15}, seed=20240605),
        # pass/fail (two categories), two models, m = 2
        "passfail": lambda b: _passfail(),
    }


class Battery:
    """Tables, fits and joint fits made on first use and kept (so a tier computes only what it needs)."""

    def __init__(self) -> None:
        self._makers = _table_makers()
        self._tables: dict[str, Any] = {}
        self._fits: dict[str, Any] = {}
        self._joint: dict[str, Any] = {}

    def table(self, name: str) -> Any:
        if name not in self._tables:
            self._tables[name] = self._makers[name](self)
        return self._tables[name]

    def fit(self, name: str) -> Any:
        import cjstats as cj

        if name not in self._fits:
            table, method, options, _ = ESTIMATE_FITS[name]
            self._fits[name] = cj.estimate(self.table(table), method, **options)
        return self._fits[name]

    def joint(self, name: str) -> Any:
        import cjstats as cj

        if name not in self._joint:
            table, method, options, _ = JOINT_FITS[name]
            self._joint[name] = cj.fit_joint(self.table(table), method, **options)
        return self._joint[name]


# ------------------------------------------------------------------------------------------- the battery
#: Tiers: "ci" runs by default; "slow" (marked @pytest.mark.slow in the test) holds the heavy fits.
TIERS = ("ci", "slow")

#: fit name -> (table, method, cj.estimate options, tier).
ESTIMATE_FITS: dict[str, tuple[str, str, dict[str, Any], str]] = {
    "hanna.anova": ("hanna", "anova", {}, "ci"),
    "hanna.anova.sj_false": ("hanna", "anova", {"scenario_judge": False}, "ci"),
    "hanna.reml": ("hanna", "reml", {}, "ci"),
    "hanna.reml.sj_false": ("hanna", "reml", {"scenario_judge": False}, "slow"),
    "ma.anova.drop": ("ma", "anova", {"incomplete": "drop"}, "ci"),
    "ma.reml": ("ma", "reml", {}, "slow"),
    "ma.reml.sj_false": ("ma", "reml", {"scenario_judge": False}, "slow"),
    "ma_small.ordinal.probit": ("ma_small", "ordinal", {}, "slow"),
    "ma_small.ordinal.logit": ("ma_small", "ordinal", {"link": "logit"}, "slow"),
    "sim_unbal.reml": ("sim_unbal", "reml", {}, "ci"),
    "sim_unbal.reml.sj_false": ("sim_unbal", "reml", {"scenario_judge": False}, "ci"),
    "sim_unbal.reml.interval_none": ("sim_unbal", "reml", {"interval": "none"}, "ci"),
    "sim_m1.anova": ("sim_m1", "anova", {}, "ci"),
    "sim_m1.anova.satterthwaite": ("sim_m1", "anova", {"interval": "satterthwaite"}, "ci"),
    "sim_m1.reml": ("sim_m1", "reml", {}, "ci"),
    "sim_m1.reml.sj_false": ("sim_m1", "reml", {"scenario_judge": False}, "ci"),
    "sim_m1_mcar.anova.drop": ("sim_m1_mcar", "anova", {"incomplete": "drop"}, "ci"),
    "sim_m1_mcar.reml": ("sim_m1_mcar", "reml", {}, "ci"),
    "sim_ord.reml": ("sim_ord", "reml", {}, "ci"),
    "sim_ord.ordinal.probit": ("sim_ord", "ordinal", {}, "ci"),
    "sim_ord.ordinal.logit": ("sim_ord", "ordinal", {"link": "logit"}, "ci"),
    "sim_ord.ordinal.no_generation": ("sim_ord", "ordinal", {"generation": False}, "ci"),
    "sim_sj.anova": ("sim_sj", "anova", {}, "ci"),
    "sim_sj.anova.sj_false": ("sim_sj", "anova", {"scenario_judge": False}, "ci"),
    "sim_sj.reml": ("sim_sj", "reml", {}, "ci"),
    "sim_sj.reml.sj_false": ("sim_sj", "reml", {"scenario_judge": False}, "ci"),
    "passfail.ordinal.probit": ("passfail", "ordinal", {}, "ci"),
    "passfail.ordinal.logit": ("passfail", "ordinal", {"link": "logit"}, "ci"),
    "passfail.ordinal.thresholds_judge": ("passfail", "ordinal", {"thresholds": "judge"}, "ci"),
    "passfail.ordinal.laplace": ("passfail", "ordinal", {"nagq": 1}, "ci"),
}

#: joint fit name -> (table, method, cj.fit_joint options, tier); each is also compared (cj.compare_models).
JOINT_FITS: dict[str, tuple[str, str, dict[str, Any], str]] = {
    "joint.hanna.anova": ("hanna_comp", "anova", {}, "ci"),
    "joint.hanna.reml": ("hanna_comp", "reml", {}, "ci"),
    "joint.hanna.reml.per_model": ("hanna_comp", "reml", {"model_scenario": "per_model"}, "slow"),
    "joint.ma.anova.drop": ("ma_comp", "anova", {"incomplete": "drop"}, "ci"),
    "joint.ma.reml": ("ma_comp", "reml", {}, "ci"),
    "joint.ma4.reml.per_model": ("ma_comp4", "reml", {"model_scenario": "per_model"}, "ci"),
}

#: MentalAlign's judge -> model families (docs/comparisons.md).
MA_FAMILIES = {"gpt-4o": ["gpt-4o", "gpt-4o-mini"], "o4-mini": ["gpt-4o", "gpt-4o-mini"],
               "gemini-2.5-flash-preview-04-17": "gemini-2.0-flash",
               "claude-3-7-sonnet-20250219": "claude-3.5-haiku"}

#: Component sets of the decision-layer grid (the second has a large judge variance; both get s2_sj > 0 too).
DECISION_COMPONENTS = (
    {"s2_scenario": 0.3, "s2_generation": 0.2, "s2_residual": 0.5, "s2_judge_panel": 0.1},
    {"s2_scenario": 1.0, "s2_generation": 0.05, "s2_residual": 0.8, "s2_judge_panel": 0.4},
)
SJ_VALUES = (0.0, 0.07)


def _record(rows: list[dict[str, Any]], function: str, inputs: Mapping[str, Any], call: Callable[[], Any]) -> None:
    """Append the (function, inputs, output, value, text) rows of one call; a refusal is recorded by its type."""
    from cjstats.exceptions import CjstatsError

    key = json.dumps({k: (list(v) if isinstance(v, tuple) else v) for k, v in inputs.items()}, sort_keys=True)
    try:
        result = call()
    except CjstatsError as e:
        rows.append({"function": function, "inputs": key, "output": "", "value": math.nan,
                     "text": f"raises {type(e).__name__}"})
        return
    for out, value, text in flatten(result):
        rows.append({"function": function, "inputs": key, "output": out, "value": value, "text": text})


def decision_rows() -> pd.DataFrame:
    """The closed-form decision layer over a grid of inputs, as (function, inputs, output, value, text)."""
    import cjstats as cj
    from cjstats.decisions import differences as dd
    from cjstats.decisions import formulas as ff

    rows: list[dict[str, Any]] = []
    kt = 5
    for comps, sj in product(DECISION_COMPONENTS, SJ_VALUES):
        c = dict(comps, s2_scenario_judge=sj)
        pos = (c["s2_scenario"], c["s2_generation"], c["s2_residual"], c["s2_judge_panel"])
        for n, m, k in product((20, 80), (1, 3), (1, 2, 5)):
            d = dict(c, n=n, m=m, k=k, k_total=kt)
            _record(rows, "grand_mean_variance", d,
                    lambda: cj.grand_mean_variance(*pos, n=n, m=m, k=k, k_total=kt, s2_scenario_judge=sj))
            _record(rows, "variance_contributions", d,
                    lambda: cj.variance_contributions(*pos, n=n, m=m, k=k, k_total=kt, s2_scenario_judge=sj))
            for assignment, conditional in product(ff.ASSIGNMENTS, (False, True)):
                _record(rows, "design_variance", dict(d, assignment=assignment, conditional=conditional),
                        lambda: cj.design_variance(*pos, n=n, m=m, k=k, k_total=kt, assignment=assignment,
                                                   s2_scenario_judge=sj, conditional=conditional))
            _record(rows, "scenarios_for_target_se", dict(d, target_se=0.05),
                    lambda: cj.scenarios_for_target_se(0.05, s2_scenario=c["s2_scenario"],
                                                       s2_generation=c["s2_generation"],
                                                       s2_residual=c["s2_residual"],
                                                       s2_judge_panel=c["s2_judge_panel"], m=m, k=k,
                                                       k_total=kt, s2_scenario_judge=sj))
        sv = {k: c[k] for k in ("s2_generation", "s2_residual", "s2_judge_panel")}
        for strategy, budget, n in product(ff.STRATEGIES, (1, 2, 5, 7, 10), (20, 80)):
            for s2s in (None, c["s2_scenario"]):
                _record(rows, "strategy_variance",
                        dict(sv, strategy=strategy, budget=budget, n=n, k_total=kt, s2_scenario=s2s,
                             s2_scenario_judge=sj),
                        lambda: cj.strategy_variance(strategy, **sv, budget=budget, n=n, k_total=kt,
                                                     s2_scenario=s2s, s2_scenario_judge=sj))
        for budget, n in product((1, 2, 5, 7, 10), (20, 80)):
            _record(rows, "strategy_gaps", dict(sv, budget=budget, n=n, k_total=kt, s2_scenario_judge=sj),
                    lambda: ff.strategy_gaps(**sv, budget=budget, n=n, k_total=kt, s2_scenario_judge=sj))
        for k_total in (2, 5, 10):
            ab = {"s2_generation": c["s2_generation"], "s2_judge_panel": c["s2_judge_panel"], "k_total": k_total,
                  "s2_scenario_judge": sj}
            _record(rows, "ab_threshold", ab,
                    lambda: ff.ab_threshold(c["s2_generation"], c["s2_judge_panel"], k_total=k_total,
                                            s2_scenario_judge=sj))
            _record(rows, "preferred_baseline", ab,
                    lambda: ff.preferred_baseline(c["s2_generation"], c["s2_judge_panel"], k_total=k_total,
                                                  s2_scenario_judge=sj))
        for strategy in ff.STRATEGIES:
            _record(rows, "budget_for_target_se", dict(sv, strategy=strategy, n=80, k_total=kt, target_se=0.06,
                                                       s2_scenario_judge=sj),
                    lambda: ff.budget_for_target_se(0.06, strategy=strategy, **sv, n=80, k_total=kt,
                                                    s2_scenario_judge=sj))
        sg = {k: c[k] for k in ("s2_scenario", "s2_generation", "s2_residual")}
        for gb, m, jp in product((60, 240), (1, 2, 3, 4), (0.0, c["s2_judge_panel"])):
            _record(rows, "scenario_generation_variance",
                    dict(sg, generation_budget=gb, m=m, s2_judge_panel=jp, k_total=kt, s2_scenario_judge=sj),
                    lambda: ff.scenario_generation_variance(*sg.values(), generation_budget=gb, m=m,
                                                            s2_judge_panel=jp, k_total=kt, s2_scenario_judge=sj))
        for gb, n_max in product((60, 240), (None, 30)):
            _record(rows, "best_generations_per_scenario",
                    dict(sg, generation_budget=gb, n_max=n_max, k_total=kt, s2_scenario_judge=sj),
                    lambda: ff.best_generations_per_scenario(*sg.values(), generation_budget=gb, n_max=n_max,
                                                             k_total=kt, s2_scenario_judge=sj))
    for calls, k_total in product((1, 3, 7, 12), (3, 5)):
        _record(rows, "leftover_judge_variance", {"s2_judge_panel": 0.3, "calls": calls, "k_total": k_total},
                lambda: ff.leftover_judge_variance(0.3, calls=calls, k_total=k_total))
    _record(rows, "judge_weight_variance", {"s2_judge_panel": 0.3, "weights": [0.5, 0.3, 0.2, 0.0]},
            lambda: ff.judge_weight_variance(0.3, [0.5, 0.3, 0.2, 0.0]))
    _record(rows, "neyman_shares", {"sd": [0.5, 0.8, 1.1], "costs": [1.0, 3.0, 0.5], "generation_cost": 2.0},
            lambda: ff.neyman_shares([0.5, 0.8, 1.1], [1.0, 3.0, 0.5], generation_cost=2.0))
    _record(rows, "poststratified_variance",
            {"s2_generation": 0.2, "s2_residual": [0.4, 0.6, 0.9], "counts": [30, 20, 10], "s2_scenario": 0.3,
             "n": 20},
            lambda: ff.poststratified_variance(0.2, [0.4, 0.6, 0.9], [30, 20, 10], s2_scenario=0.3, n=20))
    pool = np.random.default_rng(7).normal(size=(12, 4, 3))       # (scenario, generation, judge)
    for strategy, budget in product(ff.STRATEGIES, (1, 3, 6)):
        _record(rows, "pool_variance", {"pool": "rng(7) normal (12, 4, 3)", "strategy": strategy, "budget": budget},
                lambda: cj.pool_variance(pool, strategy=strategy, budget=budget))
    for va, vb, cov, power, alt in product((0.01, 0.02), (None, 0.015), (0.0, 0.004), (0.8, 0.9),
                                           ("two-sided", "one-sided")):
        inp = {"var_a": va, "var_b": vb, "covariance": cov, "power": power, "alternative": alt}
        _record(rows, "minimum_detectable_difference", inp,
                lambda: cj.minimum_detectable_difference(va, vb, covariance=cov, power=power, alternative=alt))
        _record(rows, "power_to_detect", dict(inp, difference=0.3),
                lambda: cj.power_to_detect(0.3, va, vb, covariance=cov, alternative=alt))
    dv = {"s2_generation": 0.2, "s2_residual": 0.5, "s2_judge_panel": 0.1, "s2_judge_difference": 0.03}
    for strategy, schedule, shared, ms, budget in product(ff.STRATEGIES, ("shared", "independent"), (True, False),
                                                          (0.25, (0.2, 0.35)), (1, 2, 5)):
        _record(rows, "difference_variance",
                dict(dv, strategy=strategy, schedule=schedule, shared_scenarios=shared, s2_model_scenario=ms,
                     budget=budget, n=40, k_total=5, s2_scenario=0.3),
                lambda: cj.difference_variance(strategy, s2_model_scenario=ms, **dv, budget=budget, n=40,
                                               k_total=5, schedule=schedule, shared_scenarios=shared,
                                               s2_scenario=0.3))
    _record(rows, "optimise_difference", dict(dv, s2_model_scenario=0.25, budget=400, k_total=5, n_max=100),
            lambda: dd.optimise_difference(s2_model_scenario=0.25, **dv, budget=400, k_total=5, n_max=100))
    df = pd.DataFrame(rows, columns=["function", "inputs", "output", "value", "text"])
    return df.astype({"value": "float64"})


def _steps() -> list[tuple[str, str, Callable[[Battery], Mapping[str, pd.DataFrame]]]]:
    """Every (name, tier, step) of the battery in a fixed order; a step returns its frames by name."""
    import cjstats as cj

    steps: list[tuple[str, str, Callable[[Battery], Mapping[str, pd.DataFrame]]]] = []
    for name, (_, _, _, tier) in ESTIMATE_FITS.items():
        steps.append((name, tier, lambda b, name=name: vc_frames(b.fit(name))))
    for table, tier in (("hanna", "ci"), ("sim_sj", "ci"), ("sim_m1_mcar", "ci")):
        drop = "drop" if "mcar" in table else "error"
        steps.append((f"judge_f_test.{table}.anova", tier,
                      lambda b, t=table, d=drop: {"table": cj.judge_f_test(b.table(t), incomplete=d)}))
        steps.append((f"judge_f_test.{table}.anova.sj_false", tier,
                      lambda b, t=table, d=drop: {"table": cj.judge_f_test(b.table(t), incomplete=d,
                                                                           scenario_judge=False)}))
    for table, tier in (("ma", "slow"), ("sim_unbal", "ci"), ("sim_sj", "ci")):
        steps.append((f"judge_f_test.{table}.reml", tier,
                      lambda b, t=table: {"table": cj.judge_f_test(b.table(t), method="reml")}))
        steps.append((f"judge_f_test.{table}.reml.sj_false", tier,
                      lambda b, t=table: {"table": cj.judge_f_test(b.table(t), method="reml",
                                                                   scenario_judge=False)}))
    for name, (table, _, _, tier) in JOINT_FITS.items():
        steps.append((name, tier, lambda b, name=name: joint_frames(b.joint(name))))
        steps.append((name.replace("joint.", "compare.", 1), tier,
                      lambda b, name=name, t=table: comparison_frames(cj.compare_models(b.table(t),
                                                                                        fit=b.joint(name)))))
    steps += [
        ("compare.hanna.anova.population.bonferroni", "ci",
         lambda b: comparison_frames(cj.compare_models(b.table("hanna_comp"), fit=b.joint("joint.hanna.anova"),
                                                       view="population", adjust="bonferroni"))),
        ("compare.ma.reml.population", "ci",
         lambda b: comparison_frames(cj.compare_models(b.table("ma_comp"), fit=b.joint("joint.ma.reml"),
                                                       view="population"))),
        ("self_preference.ma.anova", "ci",
         lambda b: self_preference_frames(cj.self_preference(b.table("ma_comp"), MA_FAMILIES,
                                                             fit=b.joint("joint.ma.anova.drop")))),
        ("self_preference.ma.reml", "ci",
         lambda b: self_preference_frames(cj.self_preference(b.table("ma_comp"), MA_FAMILIES,
                                                             fit=b.joint("joint.ma.reml")))),
        ("self_preference.ma.anova.fresh_fit", "ci",       # self_preference making its own joint fit
         lambda b: self_preference_frames(cj.self_preference(b.table("ma_comp"), MA_FAMILIES,
                                                             incomplete="drop"))),
        ("self_preference.hanna.anova.fresh_fit", "ci",
         lambda b: self_preference_frames(cj.self_preference(b.table("hanna_comp"),
                                                             {"ChatGPT": "GPT", "Llama-13B": "GPT-2"}))),
        ("difference_components.ma.reml", "ci",
         lambda b: {"table": flat_frame(cj.difference_components(b.joint("joint.ma.reml"), "gpt-4o", "qwen3-4b"))}),
        ("difference_components.ma4.reml.per_model", "ci",
         lambda b: {"table": flat_frame(cj.difference_components(b.joint("joint.ma4.reml.per_model"), "gpt-4o",
                                                                 "qwen3-4b"))}),
        ("decisions", "ci", lambda b: {"formulas": decision_rows()}),
        # the optimiser on fitted groups (deterministic: its seed is fixed)
        ("optimise.hanna.anova.GPT.Coherence", "ci",
         lambda b: allocation_frames(cj.optimise(b.fit("hanna.anova"), budget=480, model="GPT",
                                                 criterion="Coherence"))),
        ("optimise.sim_sj.reml.target_se", "ci",
         lambda b: allocation_frames(cj.optimise(b.fit("sim_sj.reml"), target_se=0.15, m_max=4))),
        ("optimise.sim_unbal.reml.priced", "ci",
         lambda b: allocation_frames(cj.optimise(b.fit("sim_unbal.reml"), budget=600.0, model="GPT",
                                                 judge_costs={"judge_0": 1.0, "judge_1": 2.0, "judge_2": 0.5,
                                                              "judge_3": 1.5}, generation_cost=0.2))),
        ("optimise.joint.ma.reml.difference", "ci",
         lambda b: allocation_frames(cj.optimise(b.joint("joint.ma.reml"), budget=800, target="difference",
                                                 models=("gpt-4o", "gpt-4o-mini")))),
        ("cost_weighted_allocation", "ci",
         lambda b: {"table": flat_frame(cj.cost_weighted_allocation(
             0.2, 0.5, judge_costs={"a": 1.0, "b": 2.0, "c": 0.5}, residual_by_judge={"a": 0.4, "b": 0.5, "c": 0.7},
             budget=300.0, generation_cost=0.5))}),
        ("judge_residual_variances.sim_sj", "ci",
         lambda b: {"table": flat_frame(cj.judge_residual_variances(b.table("sim_sj")))}),
        ("poststratified_mean.sim_unbal", "ci",
         lambda b: {"table": flat_frame(cj.poststratified_mean(b.table("sim_unbal")))}),
        ("cyclic_schedule", "ci", lambda b: {"table": _schedule()}),
        ("schedule_audit", "ci", lambda b: {"table": flat_frame(cj.schedule_audit(_schedule()))}),
        ("realised_variance.sim_sj.reml", "ci",
         lambda b: {"table": flat_frame(cj.realised_variance(_schedule(), b.fit("sim_sj.reml")))}),
    ]
    return steps


def _schedule() -> pd.DataFrame:
    import cjstats as cj

    return cj.cyclic_schedule(24, ["judge_0", "judge_1", "judge_2", "judge_3"], generations=2, seed=3)


def tier_of() -> dict[str, str]:
    """Step (fit) name -> tier."""
    return {name: tier for name, tier, _ in _steps()}


def build_battery(tiers: tuple[str, ...] = TIERS) -> Frames:
    """Run the steps of ``tiers``; ``{(fit, frame): DataFrame}`` in a fixed order."""
    from cjstats.exceptions import CjstatsWarning

    frames: Frames = {}
    b = Battery()
    with warnings.catch_warnings():     # by category: cjstats re-issues its warnings under a blanket "ignore"
        warnings.simplefilter("ignore", CjstatsWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        for name, tier, step in _steps():
            if tier in tiers:
                for frame_name, df in step(b).items():
                    frames[(name, frame_name)] = df
    return frames


# -------------------------------------------------------------------------------------------- storing
def file_name(fit: str, frame: str) -> str:
    return f"{fit}__{frame}.parquet"


def write_battery(frames: Frames, directory: Path = DATA_DIR) -> dict[str, Any]:
    """Write every frame (parquet, index kept) and ``index.json``; old parquet files are removed first."""
    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.glob("*.parquet"):
        old.unlink()
    entries = []
    tiers = tier_of()
    for (fit, frame), df in frames.items():
        name = file_name(fit, frame)
        df.to_parquet(directory / name, index=True)
        entries.append({"fit": fit, "frame": frame, "tier": tiers[fit], "file": name, "rows": int(len(df)),
                        "columns": [str(c) for c in df.columns]})
    import cjstats

    index = {"description": "cjstats regression battery (tests/battery.py); compare with "
                            "tests/test_numbers_unchanged.py", "cjstats_version": cjstats.__version__,
             "rtol": RTOL, "atol": ATOL, "frames": entries}
    (directory / INDEX_FILE).write_text(json.dumps(index, indent=1) + "\n")
    return index


def read_index(directory: Path = DATA_DIR) -> dict[str, Any]:
    return json.loads((directory / INDEX_FILE).read_text())


def read_frame(entry: Mapping[str, Any], directory: Path = DATA_DIR) -> pd.DataFrame:
    return pd.read_parquet(directory / entry["file"])


# ------------------------------------------------------------------------------------------ comparing
def _kind(s: pd.Series) -> str:
    if pd.api.types.is_bool_dtype(s):
        return "bool"
    if pd.api.types.is_numeric_dtype(s):
        return "numeric"
    return "other"


def _show(v: Any) -> str:
    return repr(float(v)) if isinstance(v, float | np.floating) else repr(v)


def compare_frames(expected: pd.DataFrame, actual: pd.DataFrame, *, where: str = "",
                   rtol: float = RTOL, atol: float = ATOL, max_report: int = 20) -> list[str]:
    """The differences between a stored frame and a fresh one, one sentence each (empty: equal).

    Same columns (names and order), same index; numeric columns equal to ``rtol``/``atol`` with NaN == NaN and
    inf == inf (same sign); bool and other (string) columns exactly equal, missing == missing.
    """
    msgs: list[str] = []
    if list(map(str, expected.columns)) != list(map(str, actual.columns)):
        return [f"{where}: columns differ: stored {list(expected.columns)}, now {list(actual.columns)}"]
    if expected.shape != actual.shape:
        return [f"{where}: shape differs: stored {expected.shape}, now {actual.shape}"]
    if not expected.index.equals(actual.index):
        bad = next((i for i, (a, b) in enumerate(zip(expected.index, actual.index)) if a != b), None)
        return [f"{where}: index differs (first at position {bad}: stored {expected.index[bad]!r}, "
                f"now {actual.index[bad]!r})" if bad is not None else f"{where}: index differs"]
    rows = list(expected.index)
    for pos, col in enumerate(expected.columns):
        e, a = expected.iloc[:, pos], actual.iloc[:, pos]
        ke, ka = _kind(e), _kind(a)
        if ke != ka:
            msgs.append(f"{where}: column {col!r} changed kind: stored {ke} ({e.dtype}), now {ka} ({a.dtype})")
            continue
        if ke == "numeric":
            ev = e.astype("float64").to_numpy(na_value=np.nan)
            av = a.astype("float64").to_numpy(na_value=np.nan)
            both_nan = np.isnan(ev) & np.isnan(av)
            same_inf = np.isinf(ev) & np.isinf(av) & (np.sign(ev) == np.sign(av))
            with np.errstate(invalid="ignore"):
                close = np.abs(ev - av) <= atol + rtol * np.abs(ev)
            ok = both_nan | same_inf | (close & np.isfinite(ev) & np.isfinite(av))
        else:
            ev, av = e.to_numpy(dtype=object), a.to_numpy(dtype=object)
            ok = np.array([(pd.isna(x) and pd.isna(y)) if (pd.isna(x) or pd.isna(y)) else bool(x == y)
                           for x, y in zip(ev, av)], dtype=bool)
        for i in np.flatnonzero(~ok):
            if len(msgs) >= max_report:
                msgs.append(f"{where}: ... more differences not shown")
                return msgs
            label = _row_label(expected, i, rows[i])
            msgs.append(f"{where}: column {col!r}, row {label}: stored {_show(ev[i])}, now {_show(av[i])}")
    return msgs


def _row_label(df: pd.DataFrame, i: int, idx: Any) -> str:
    """The row's index and its identifying text columns (model, component, key, ...), for messages."""
    keys = [c for c in ("model", "criterion", "component", "view", "judge", "model_a", "model_b", "group", "key",
                        "function", "inputs", "output", "strategy") if c in df.columns]
    ident = ", ".join(f"{c}={df[c].iloc[i]!r}" for c in keys)
    return f"{idx!r}" + (f" ({ident})" if ident else "")
