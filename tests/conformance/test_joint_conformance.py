"""One contract, checked on every joint backend in the registry (``cjstats.estimators.JOINT_BACKENDS``).

The suite is parametrised over the registry, so a joint backend registered with ``register_joint_backend`` is
checked from its first commit. Each check is a function named for the rule it enforces and reads the backend's
declared :class:`~cjstats.estimators.JointCapabilities` rather than its name. Known failures go in
KNOWN_FAILURES as {(method, check_name): reason} and become strict xfails; the checks that fit a table are
marked ``slow`` (run with ``-m slow``) for a backend that declares ``samples`` (each fit an MCMC run), and
further slow cases are declared in SLOW; nothing is skipped silently. A backend whose packages are missing is skipped with the extra that installs them. Pickling is
checked elsewhere (the results' round-trip tests).

``TestPlantedBrokenBackends`` registers broken backends for the length of one test and calls the checks on them
directly: each must fail with an AssertionError, so the checks can fail.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from importlib import import_module
from typing import Any

import numpy as np
import pandas as pd
import pytest

import cjstats as cj
from cjstats._defaults import JOINT_LABEL
from cjstats.results.estimands import VIEWS
from cjstats.estimators import (
    JOINT_BACKENDS, JOINT_ESTIMANDS, RANK_INTERVALS, Backend, JointCapabilities, ModuleBackend, missing_packages,
)
from cjstats.estimators.joint import JointFit
from cjstats.results.components import COMPONENT_COLUMNS
from cjstats.stats import build_stats
from cjstats.studies.simulate_joint import simulate_joint

# Small but honest settings so that a sampling backend stays fast; the contract is about shape, not convergence.
FAST_OPTIONS: dict[str, dict[str, Any]] = {"bayes": {"draws": 200, "tune": 200, "chains": 2}}
KNOWN_FAILURES: dict[tuple[str, str], str] = {}
SLOW: dict[tuple[str, str], str] = {}
#: Checks that fit a table. For a backend that declares ``samples`` each fit is an MCMC compile and run (20-100 s
#: on a busy machine), so these run with ``-m slow``; its checks that refuse before sampling run by default, and
#: tests/comparisons/test_compare_bayes.py fits the joint Bayesian model in the default run.
FITTING_CHECKS = {"check_returns_a_joint_fit", "check_declared_estimands_and_views",
                  "check_finite_estimates_where_identifiable", "check_model_means_and_a_contrast",
                  "check_compare_models_on_the_fit", "check_model_scenario_forms",
                  "check_one_generation_marks_generation_not_identifiable",
                  "check_incomplete_tables_follow_balanced_only", "check_same_seed_same_numbers"}
SAMPLING_FIT = "fits by MCMC (one compile and run each, 20-100 s): run with -m slow"
PROTOCOL_OPTIONS = ("ci_level", "seed", "rows", "model_scenario")
LEVEL = 0.9


def _table(seed: int, *, m: int = 2, missing_cell: bool = False) -> pd.DataFrame:
    """Three models, 12 scenarios x m generations x 3 judges, from the joint model (fixed seed)."""
    f = simulate_joint(n=12, m=m, mu=[5.0, 5.3, 4.8], gamma=[0.3, -0.2, 0.0], s2_scenario=0.5,
                       s2_model_scenario=0.3, s2_generation=0.2, s2_residual=1.0,
                       judge_model=np.array([[0.2, -0.1, -0.1], [-0.1, 0.0, 0.1], [-0.1, 0.1, 0.0]]),
                       rng=np.random.default_rng(seed))
    if missing_cell:   # one judge call missing: scenario 3 of m0 is no longer complete
        f = f[~((f["model"] == "m0") & (f["scenario"] == 3) & (f["generation"] == 0) & (f["judge"] == "j1"))]
    return f.reset_index(drop=True)


TABLES = {"balanced": lambda: _table(1), "one_generation": lambda: _table(2, m=1),
          "missing_cell": lambda: _table(3, missing_cell=True)}
_TABLE_CACHE: dict[str, pd.DataFrame] = {}
_FIT_CACHE: dict[tuple, tuple[Any, JointFit]] = {}


def _discrete(method: str | None) -> bool:
    """A backend that declares no Gaussian likelihood fits discrete scores (the cumulative model: verdicts and
    ratings): its tables are the same draws cut into five ordered categories."""
    return method is not None and method in JOINT_BACKENDS and \
        "gaussian" not in JOINT_BACKENDS[method].capabilities.likelihoods


def table(name: str, method: str | None = None) -> pd.DataFrame:
    """Table ``name``; for a backend of discrete scores (:func:`_discrete`) its scores cut at fixed points into 1-5."""
    key = (name, _discrete(method))
    if key not in _TABLE_CACHE:
        f = TABLES[name]()
        if key[1]:
            f["score"] = np.searchsorted([3.8, 4.6, 5.4, 6.2], f["score"].to_numpy()) + 1.0
        _TABLE_CACHE[key] = f
    return _TABLE_CACHE[key].copy()


def fit(method: str, name: str = "balanced", **kw: Any) -> JointFit:
    """The joint fit of table ``name`` by ``method`` through :func:`cjstats.fit_joint` (cached per backend object,
    so a backend planted under a registered name is fitted afresh)."""
    backend = JOINT_BACKENDS[method]
    key = (id(backend), method, name, tuple(sorted(kw.items())))
    if key not in _FIT_CACHE:   # the backend is kept with its fit, so that its id is not reused
        _FIT_CACHE[key] = (backend, cj.fit_joint(table(name, method), method, ci_level=LEVEL, seed=5,
                                                 **{**FAST_OPTIONS.get(method, {}), **kw}))
    return _FIT_CACHE[key][1]


# ------------------------------------------------------------------------------------------ checks
def check_is_a_registered_backend(method: str) -> None:
    b = JOINT_BACKENDS[method]
    caps = b.capabilities
    assert isinstance(b, Backend) and b.name == method, f"{method}: not a Backend registered under its name"
    assert isinstance(caps, JointCapabilities), f"{method}: its capabilities are not JointCapabilities"
    assert caps.rank_intervals in RANK_INTERVALS, f"{method}: unknown rank_intervals {caps.rank_intervals!r}"
    assert "pooled" in caps.model_scenario and set(caps.model_scenario) <= {"pooled", "per_model"}
    assert "panel" in caps.views and set(caps.views) <= {"panel", "population"}
    assert set(caps.estimands) <= set(JOINT_ESTIMANDS), f"{method}: estimands outside the joint vocabulary"
    assert not (caps.rank_intervals == "posterior" and not caps.samples), \
        f"{method}: posterior rank intervals need draws (samples=True)"


def _accepted_options(b: Any) -> set[str] | None:
    """The keyword options the backend's fit takes beyond the protocol's (its module's ``fit_joint`` when
    ``fit`` forwards ``**options``); None when they cannot be read."""
    fns = [b.fit]
    if isinstance(b, ModuleBackend):
        mod = import_module(b.module)
        fns = [mod.fit, getattr(mod, "fit_joint", None)]
    for fn in fns:
        if fn is None:
            continue
        params = inspect.signature(fn).parameters.values()
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
            continue
        return {p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY} - set(PROTOCOL_OPTIONS)
    return None


def check_declared_options_are_the_fit_options(method: str) -> None:
    b = JOINT_BACKENDS[method]
    accepted = _accepted_options(b)
    assert accepted is not None, f"{method}: the options its fit takes cannot be read from its signature"
    assert set(b.capabilities.options) == accepted, \
        f"{method}: declares options {sorted(b.capabilities.options)} but its fit takes {sorted(accepted)}"
    for key in {**b.capabilities.rows_options, **b.capabilities.option_defaults}:
        assert key in b.capabilities.options, f"{method}: rows_options/option_defaults name '{key}', not an option"
    assert set(b.capabilities.stats_options) <= set(b.capabilities.options), \
        f"{method}: stats_options {sorted(b.capabilities.stats_options)} are not all options"


def check_returns_a_joint_fit(method: str) -> None:
    f = fit(method)
    frame = table("balanced", method)
    assert isinstance(f, JointFit), f"{method} must return a JointFit, got {type(f).__name__}"
    assert f.method == method, f"{method}: the fit says method={f.method!r}"
    assert list(f.components.columns) == list(COMPONENT_COLUMNS), f"{method}: components columns differ"
    assert f.models == tuple(sorted(frame["model"].unique())), f"{method}: models {f.models}"
    assert f.judges == tuple(sorted(frame["judge"].unique())), f"{method}: judges {f.judges}"
    assert f.cell_means.shape == (len(f.models), len(f.judges)) and np.isfinite(f.cell_means).all()
    assert f.ci_level == LEVEL and (f.components["method"] == method).all()
    assert (f.draws is not None) == JOINT_BACKENDS[method].capabilities.samples, \
        f"{method}: carries draws={f.draws is not None}, declares samples={JOINT_BACKENDS[method].capabilities.samples}"


def check_declared_estimands_and_views(method: str) -> None:
    f = fit(method)
    c = f.components
    caps = JOINT_BACKENDS[method].capabilities
    assert set(c["component"]) == set(caps.estimands), \
        f"{method}: returns {sorted(set(c['component']))}, declares {sorted(caps.estimands)}"
    mu = c[c["component"] == "mu"]
    assert list(mu["model"]) == list(f.models), f"{method}: one mu row per model, in order"
    shared = c[c["component"] != "mu"]
    assert (shared["model"] == JOINT_LABEL).all(), f"{method}: shared rows must have model == {JOINT_LABEL!r}"
    assert set(c["view"]) <= set(VIEWS)
    views = {comp: sorted(g["view"]) for comp, g in c.groupby("component")}
    assert views.get("judge_model") == ["panel", "population"], f"{method}: judge_model needs both views"
    assert views.get("judge_population") == ["population"], f"{method}: judge_population takes the population view"
    for comp in ("mu", "scenario", "model_scenario", "generation", "residual", "judge_panel"):
        assert set(views.get(comp, [])) == {"panel"}, f"{method}: {comp} takes the panel view"
    assert not c.duplicated(["model", "component", "view"]).any(), f"{method}: duplicated rows"


def check_finite_estimates_where_identifiable(method: str) -> None:
    c = fit(method).components
    ok = c[c["identifiable"]]
    # every estimand, but the generation term of a backend that does not declare it (its row says so)
    expected = c if "generation" in JOINT_BACKENDS[method].capabilities.terms else c[c["component"] != "generation"]
    assert len(ok) == len(expected), f"{method}: every estimand is identifiable on a balanced table with 2 generations"
    for col in ("estimate", "lower", "upper", "std_error"):
        assert np.isfinite(ok[col].to_numpy(float)).all(), f"{method}: non-finite {col} of an identifiable row"
    assert (ok["lower"] <= ok["estimate"] + 1e-12).all() and (ok["estimate"] <= ok["upper"] + 1e-12).all(), \
        f"{method}: an estimate outside its interval"
    var = ok[ok["component"] != "mu"]
    assert (var["estimate"] >= 0).all() and (var["lower"] >= 0).all(), f"{method}: negative variance or bound"
    assert (ok["ci_level"] == LEVEL).all()


def check_model_means_and_a_contrast(method: str) -> None:
    """Model means are the row means of the cell means and the mu rows; a difference of two models is a contrast
    with a positive, finite standard error in each declared view, and judges as a sample add variance."""
    f = fit(method)
    p, k = f.cell_means.shape
    means = f.model_means()
    np.testing.assert_allclose(means, f.cell_means.mean(axis=1), rtol=1e-12, err_msg=f"{method}: model_means")
    mu = f.components[f.components["component"] == "mu"]["estimate"].to_numpy(float)
    np.testing.assert_allclose(mu, means, rtol=1e-10, err_msg=f"{method}: mu rows differ from model_means")
    c = np.zeros((p, k))
    c[0], c[1] = 1.0 / k, -1.0 / k
    se = {}
    for view in JOINT_BACKENDS[method].capabilities.views:
        r = f.contrast(c, view)
        est, s, df = r.estimate, r.std_error, r.df
        assert est == pytest.approx(means[0] - means[1], rel=1e-10, abs=1e-12), f"{method}: contrast estimate"
        assert np.isfinite(s) and s > 0 and df > 0, f"{method}: contrast ({view}) se={s}, df={df}"
        se[view] = s
    if "population" in se:
        assert se["population"] >= se["panel"] - 1e-12, f"{method}: the population view lowered a standard error"


def check_compare_models_on_the_fit(method: str) -> None:
    f = fit(method)
    caps = JOINT_BACKENDS[method].capabilities
    for view in caps.views:
        res = cj.compare_models(None, fit=f, view=view, ci_level=LEVEL, n_draws=2000, seed=1)
        p = len(f.models)
        assert len(res.differences) == p * (p - 1) // 2 and res.method == method
        assert math.isclose(float(res.ranks["p_best"].sum()), 1.0, abs_tol=1e-12)
        assert ((res.ranks["rank_lower"] <= res.ranks["rank"]) & (res.ranks["rank"] <= res.ranks["rank_upper"])).all()
        word = {"studentized_range": "Tukey", "max_t": "max-t", "posterior": "posterior"}[caps.rank_intervals]
        assert word in res.rank_method, f"{method}: declares {caps.rank_intervals}, ranks by {res.rank_method!r}"
    with pytest.raises(cj.CjstatsError, match="'view' argument of compare_models"):
        cj.compare_models(None, fit=f, view="everyone")


def check_statistics_alone_or_a_sentence(method: str) -> None:
    """A backend that does not always need rows fits the joint statistics to the same numbers as the table; one
    that does refuses them in one sentence naming the score rows."""
    caps = JOINT_BACKENDS[method].capabilities
    stats = build_stats(cj.read_scores(table("balanced", method)), unit=("criterion",))
    opts = FAST_OPTIONS.get(method, {})
    if caps.rows_always:
        with pytest.raises(cj.CjstatsError, match="score rows"):
            cj.fit_joint(stats, method, ci_level=LEVEL, seed=5, **opts)
        return
    a, b = fit(method), cj.fit_joint(stats, method, ci_level=LEVEL, seed=5, **opts)
    pd.testing.assert_frame_equal(a.components, b.components, check_exact=True, obj=f"{method} components")
    np.testing.assert_array_equal(a.cell_means, b.cell_means)


def check_row_options_refuse_to_run_without_rows(method: str) -> None:
    """Every option value declared in rows_options needs rows that statistics cannot give back, and says so."""
    caps = JOINT_BACKENDS[method].capabilities
    stats = build_stats(cj.read_scores(table("missing_cell", method)), unit=("criterion",))
    for key, values in caps.rows_options.items():
        for value in values:
            assert caps.needs_rows({key: value}), f"{method}: {key}={value!r} declared but needs_rows is False"
            with pytest.raises(cj.CjstatsError, match="score rows"):
                cj.fit_joint(stats, method, ci_level=LEVEL, **{**FAST_OPTIONS.get(method, {}), key: value})
    assert caps.needs_rows({}) == caps.rows_always


def check_model_scenario_forms(method: str) -> None:
    caps = JOINT_BACKENDS[method].capabilities
    if "per_model" in caps.model_scenario:
        f = fit(method, model_scenario="per_model")
        ms = f.components[f.components["component"] == "model_scenario"]
        assert list(ms["model"]) == list(f.models), f"{method}: per_model needs a model_scenario row per model"
    else:
        with pytest.raises(cj.CjstatsError, match=f"model_scenario='per_model' is fitted by .* \\(got method='{method}'"):
            cj.fit_joint(table("balanced", method), method, model_scenario="per_model")


def check_rejects_unknown_option(method: str) -> None:
    with pytest.raises(TypeError, match="not_an_option"):
        cj.fit_joint(table("balanced", method), method, not_an_option=True)


def check_one_generation_marks_generation_not_identifiable(method: str) -> None:
    c = fit(method, "one_generation").components
    gen = c[c["component"] == "generation"]
    assert len(gen) == 1 and not gen["identifiable"].iloc[0] and np.isnan(gen["estimate"].iloc[0]), \
        f"{method}: with one generation, generation is not identifiable"
    ms = c[c["component"] == "model_scenario"]
    assert ms["identifiable"].all() and "m = 1" in ms["note"].iloc[0], f"{method}: model_scenario must say m = 1"


def check_incomplete_tables_follow_balanced_only(method: str) -> None:
    """A balanced-only backend refuses a table with a missing call, pointing to method='reml'; any other fits it."""
    caps = JOINT_BACKENDS[method].capabilities
    if caps.balanced_only:
        with pytest.raises(cj.CjstatsError, match="method='reml'"):
            cj.fit_joint(table("missing_cell", method), method)
    else:
        f = fit(method, "missing_cell")
        assert set(f.components["component"]) == set(caps.estimands)
        assert np.isfinite(f.cell_means).all()


def check_same_seed_same_numbers(method: str) -> None:
    a = fit(method)
    b = cj.fit_joint(table("balanced", method), method, ci_level=LEVEL, seed=5, **FAST_OPTIONS.get(method, {}))
    pd.testing.assert_frame_equal(a.components, b.components, obj=f"{method} refit")


def _with_covariates(name: str = "missing_cell") -> pd.DataFrame:
    """Table ``name`` with two item covariates: one value per (model, scenario, generation), seeded."""
    f = table(name)
    keys = f[["model", "scenario", "generation"]].drop_duplicates().reset_index(drop=True)
    rng = np.random.default_rng(11)
    keys["length"] = 400 + 60 * keys["model"].str[1:].astype(int) + rng.normal(0, 80, len(keys))
    keys["turns"] = rng.integers(1, 6, len(keys)).astype(float)
    return f.merge(keys, on=["model", "scenario", "generation"], how="left")


def check_covariates_option(method: str) -> None:
    """A backend that declares ``covariates`` fits each judge's slope from the statistics (a table and statistics
    built with the covariates give the same numbers; statistics without them are refused in one sentence); one that
    does not is refused in one sentence by fit_joint's capability check, before any fit."""
    caps = JOINT_BACKENDS[method].capabilities
    d = _with_covariates()
    covs = ["length", "turns"]
    if "covariates" not in caps.options:
        with pytest.raises(TypeError, match=f"'covariates' argument of fit_joint applies to .* \\(method='{method}'"):
            cj.fit_joint(d, method, covariates=covs)
        return
    assert "covariates" in caps.stats_options, f"{method}: covariates need statistics built for them"
    opts = FAST_OPTIONS.get(method, {})
    f = cj.fit_joint(d, method, ci_level=LEVEL, seed=5, covariates=covs, **opts)
    assert isinstance(f, JointFit) and f.method == method, f"{method}: returned {type(f).__name__} {f.method!r}"
    assert tuple(getattr(f, "covariates", ())) == tuple(covs), f"{method}: the fit does not carry the covariates"
    k = len(f.judges)
    assert list(f.slopes["judge"]) == [*f.judges, "(panel)"] * 2 and list(f.slopes["covariate"]) == \
        ["length"] * (k + 1) + ["turns"] * (k + 1)
    assert np.isfinite(f.slopes[["slope", "std_error", "lower", "upper"]].to_numpy(float)).all()
    assert set(f.tests) >= {"slopes[length]", "slopes[turns]"} and 0 <= f.tests["slopes[length]"]["p_value"] <= 1
    mu = f.components[f.components["component"] == "mu"]
    assert all("at length = " in n for n in mu["note"]), f"{method}: model means must say at which covariate values"
    stats = build_stats(d, unit=("criterion",), covariates=covs)
    g = cj.fit_joint(stats, method, ci_level=LEVEL, seed=5, covariates=covs, **opts)
    pd.testing.assert_frame_equal(f.components, g.components, check_exact=True, obj=f"{method} from statistics")
    pd.testing.assert_frame_equal(f.slopes, g.slopes, check_exact=True, obj=f"{method} slopes from statistics")
    plain = build_stats(d, unit=("criterion",))
    with pytest.raises(cj.CjstatsError, match="covariates"):
        cj.fit_joint(plain, method, covariates=covs, **opts)
    res = cj.compare_models(d, method, covariates=covs, n_draws=2000, ci_level=LEVEL)
    assert res.fit.method == method and "at equal covariate values" in res.as_text()


CHECKS = [
    check_is_a_registered_backend, check_declared_options_are_the_fit_options, check_returns_a_joint_fit,
    check_declared_estimands_and_views, check_finite_estimates_where_identifiable, check_model_means_and_a_contrast,
    check_compare_models_on_the_fit, check_statistics_alone_or_a_sentence,
    check_row_options_refuse_to_run_without_rows, check_model_scenario_forms, check_rejects_unknown_option,
    check_one_generation_marks_generation_not_identifiable, check_incomplete_tables_follow_balanced_only,
    check_same_seed_same_numbers, check_covariates_option,
]


def _cases():
    for method in sorted(JOINT_BACKENDS):
        for check in CHECKS:
            caps = JOINT_BACKENDS[method].capabilities
            fits = check.__name__ in FITTING_CHECKS or (check is check_covariates_option and "covariates" in caps.options)
            slow = SLOW.get((method, check.__name__)) or (SAMPLING_FIT if caps.samples and fits else None)
            yield pytest.param(method, check, id=f"{method}-{check.__name__}",
                               marks=[pytest.mark.slow(reason=slow)] if slow else [])


@pytest.mark.filterwarnings("ignore:The Bayesian fit")
@pytest.mark.parametrize(("method", "check"), list(_cases()))
def test_joint_backend_contract(method, check, request):
    missing = missing_packages(JOINT_BACKENDS[method])
    if missing:
        pytest.skip(f"{method} needs {', '.join(missing)}: pip install 'cjstats[{JOINT_BACKENDS[method].extra}]'")
    reason = KNOWN_FAILURES.get((method, check.__name__))
    if reason:
        request.applymarker(pytest.mark.xfail(reason=reason, strict=True))
    check(method)


# ------------------------------------------------------------------------------------------ planted breakage
@dataclasses.dataclass(frozen=True)
class _Planted:
    """A joint backend that fits like the ANOVA and then breaks one rule of the contract."""

    name: str
    tamper: Any
    capabilities: JointCapabilities = JOINT_BACKENDS["anova"].capabilities
    requires: tuple[str, ...] = ()
    extra: str = ""

    def fit(self, stats, *, ci_level, seed=None, rows=None, model_scenario="pooled", incomplete="error",
            max_drop=None):
        good = JOINT_BACKENDS["anova"].fit(stats, ci_level=ci_level, seed=seed, rows=rows, incomplete=incomplete,
                                           max_drop=max_drop)
        return self.tamper(dataclasses.replace(good, method=self.name,
                                               components=good.components.assign(method=self.name)))


def _drop_population_rows(f: JointFit) -> JointFit:
    return dataclasses.replace(f, components=f.components[f.components["view"] != "population"].reset_index(drop=True))


def _shift_cell_means(f: JointFit) -> JointFit:
    return dataclasses.replace(f, cell_means=f.cell_means + np.arange(f.cell_means.shape[0])[:, None] * 1e-3)


def _nan_residual(f: JointFit) -> JointFit:
    c = f.components.copy()
    c.loc[c["component"] == "residual", "estimate"] = np.nan
    return dataclasses.replace(f, components=c)


def _reverse_models(f: JointFit) -> JointFit:
    return dataclasses.replace(f, models=f.models[::-1])


def _same(f: JointFit) -> JointFit:
    return f


class TestPlantedBrokenBackends:
    """Each planted backend breaks one rule; the check for that rule must fail on it (AssertionError)."""

    @pytest.mark.parametrize(("tamper", "caps", "check"), [
        (_drop_population_rows, None, check_declared_estimands_and_views),
        (_shift_cell_means, None, check_model_means_and_a_contrast),
        (_nan_residual, None, check_finite_estimates_where_identifiable),
        (_reverse_models, None, check_returns_a_joint_fit),
        (_reverse_models, None, check_declared_estimands_and_views),
        (_same, {"options": ("incomplete",)}, check_declared_options_are_the_fit_options),
        (_same, {"samples": True}, check_returns_a_joint_fit),
        (_same, {"model_scenario": ("pooled", "per_model")}, check_model_scenario_forms),
        (_same, {"rank_intervals": "posterior"}, check_is_a_registered_backend),
        (_same, {"stats_options": ("covariates",)}, check_declared_options_are_the_fit_options),
    ], ids=lambda v: getattr(v, "__name__", None) if callable(v) else None)
    def test_a_broken_backend_fails_the_check(self, monkeypatch, tamper, caps, check):
        base = JOINT_BACKENDS["anova"].capabilities
        planted = _Planted("planted", tamper, capabilities=dataclasses.replace(base, **(caps or {})))
        monkeypatch.setitem(JOINT_BACKENDS, "planted", planted)
        with pytest.raises(AssertionError):
            check("planted")

    def test_a_backend_that_ignores_covariates_fails_the_check(self, monkeypatch):
        """A backend that declares covariates but fits without them (no slopes) fails check_covariates_option."""

        @dataclasses.dataclass(frozen=True)
        class _IgnoresCovariates(_Planted):
            def fit(self, stats, *, ci_level, seed=None, rows=None, model_scenario="pooled", covariates=None):
                good = JOINT_BACKENDS["reml"].fit(stats, ci_level=ci_level, seed=seed, rows=rows)
                return dataclasses.replace(good, method=self.name, components=good.components.assign(method=self.name))

        caps = dataclasses.replace(JOINT_BACKENDS["reml"].capabilities)
        monkeypatch.setitem(JOINT_BACKENDS, "planted", _IgnoresCovariates("planted", _same, capabilities=caps))
        with pytest.raises(AssertionError):
            check_covariates_option("planted")

    def test_the_planted_backend_passes_when_it_breaks_nothing(self, monkeypatch):
        """The same planted backend, unbroken, passes the checks above (so their failures are the tampering)."""
        monkeypatch.setitem(JOINT_BACKENDS, "planted", _Planted("planted", _same))
        for check in (check_declared_estimands_and_views, check_model_means_and_a_contrast,
                      check_finite_estimates_where_identifiable, check_declared_options_are_the_fit_options,
                      check_returns_a_joint_fit, check_is_a_registered_backend):
            check("planted")

    def test_a_registered_backend_is_parametrised(self, monkeypatch):
        """The suite's cases are read from the registry: a new entry appears in them."""
        monkeypatch.setitem(JOINT_BACKENDS, "planted", _Planted("planted", _same))
        assert {m for m, *_ in (c.values for c in _cases())} == set(JOINT_BACKENDS)

    def test_fit_joint_dispatches_through_the_registry(self, monkeypatch):
        seen = {}

        def spy(f: JointFit) -> JointFit:
            seen["method"] = f.method
            return f

        monkeypatch.setitem(JOINT_BACKENDS, "planted", _Planted("planted", spy))
        out = cj.fit_joint(table("balanced"), "planted")
        assert seen == {"method": "planted"} and out.method == "planted"
        res = cj.compare_models(table("balanced"), "planted", n_draws=2000)
        assert "Tukey" in res.rank_method   # the planted capabilities are the ANOVA's: studentized range
