"""One contract, checked on every backend in the registry (scikit-learn's estimator-checks pattern).

Each check is named for the rule it enforces. Failures known in advance go in KNOWN_FAILURES as
{(method, check_name): reason} and become strict xfails; nothing is skipped silently. A backend whose
optional packages are missing is skipped with the reason (the extra to install).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import cjstats as cj
from cjstats.results.estimands import COMPONENTS
from cjstats.results.components import COMPONENT_COLUMNS, OFFSET_COLUMNS, VarianceComponents
from cjstats.estimators import BACKENDS, REGISTRY, REQUIRES, missing_packages
from cjstats.estimators.base import M1_NOTE
from cjstats.stats import ScoreStats, build_stats

# Small but honest settings so the suite stays fast for sampling backends.
FAST_OPTIONS: dict[str, dict] = {"anova": {}, "reml": {}, "bayes": {"draws": 400, "tune": 300, "chains": 2}}
KNOWN_FAILURES: dict[tuple[str, str], str] = {}
#: Backends that fit ordered categories get the same tables with the scores cut into a 1-5 rating scale (quintiles
#: of each table's scores): a continuous score is refused by them in one sentence.
DISCRETE_METHODS = ("ordinal",)


def _rated(obj):
    """The table (Scores or DataFrame) with its scores replaced by their quintile, 1-5."""
    frame = obj.copy() if isinstance(obj, pd.DataFrame) else obj.to_frame()
    frame["score"] = (pd.qcut(frame["score"], 5, labels=False) + 1).astype(float)
    return frame if isinstance(obj, pd.DataFrame) else cj.read_scores(frame)


def _fit(method, scores, seed=0, **kw):
    return cj.estimate(scores, method, seed=seed, **{**FAST_OPTIONS.get(method, {}), **kw})


def check_returns_variance_components(method, scores, **_):
    fit = _fit(method, scores)
    assert isinstance(fit, VarianceComponents), f"{method} must return VarianceComponents, got {type(fit)}"
    assert fit.method == method
    assert list(fit.components.columns) == list(COMPONENT_COLUMNS), "components columns differ from the contract"
    assert list(fit.judge_offsets.columns) == list(OFFSET_COLUMNS), "judge_offsets columns differ from the contract"


def check_same_component_rows(method, scores, **_):
    fit = _fit(method, scores)
    for model, rows in fit.components.groupby("model"):
        assert list(rows["component"]) == list(COMPONENTS), f"{method}: rows of {model} are {list(rows['component'])}"
    assert set(fit.components["view"]) <= {"panel", "population"}
    pop = fit.components[fit.components["component"] == "judge_population"]
    assert (pop["view"] == "population").all(), "judge_population must take the population view"
    assert (fit.components.loc[fit.components["component"] != "judge_population", "view"] == "panel").all()


def check_intervals_contain_estimates(method, scores, **_):
    fit = _fit(method, scores)
    c = fit.components[fit.components["identifiable"]]
    assert (c["lower"] <= c["estimate"] + 1e-12).all() and (c["estimate"] <= c["upper"] + 1e-12).all(), \
        f"{method}: some estimate lies outside its interval"
    var = c[c["component"] != "mu"]
    assert (var["estimate"] >= 0).all() and (var["lower"] >= 0).all(), "variances and their bounds must be >= 0"
    assert (c["ci_level"] == 0.95).all()


def check_offsets_sum_to_zero(method, scores, **_):
    fit = _fit(method, scores)
    sums = fit.judge_offsets.groupby("model")["estimate"].sum()
    assert np.allclose(sums, 0.0, atol=1e-6 if method != "bayes" else 1e-2), f"{method}: offsets sum to {sums}"


def check_does_not_mutate_scores(method, scores, **_):
    before = scores.to_frame()
    _fit(method, scores)
    pd.testing.assert_frame_equal(scores.to_frame(), before)


def check_does_not_mutate_dataframe(method, scores, frame=None, **_):
    before = frame.copy(deep=True)
    _fit(method, frame)
    pd.testing.assert_frame_equal(frame, before)


def check_same_seed_same_numbers(method, scores, **_):
    a, b = _fit(method, scores, seed=11), _fit(method, scores, seed=11)
    pd.testing.assert_frame_equal(a.components, b.components)
    pd.testing.assert_frame_equal(a.judge_offsets, b.judge_offsets)


def check_one_generation_marks_generation_not_identifiable(method, scores, one_generation=None, **_):
    fit = _fit(method, one_generation)
    gen = fit.components[fit.components["component"] == "generation"].iloc[0]
    assert not gen["identifiable"] and np.isnan(gen["estimate"]) and np.isnan(gen["lower"])
    assert gen["note"] == M1_NOTE
    scen = fit.components[fit.components["component"] == "scenario"].iloc[0]
    assert "sigma2_alpha + sigma2_beta" in scen["note"]


def check_criterion_column_runs_per_criterion(method, scores, criterion=None, **_):
    fit = _fit(method, criterion)
    assert "criterion" in fit.components.columns and "criterion" in fit.judge_offsets.columns
    assert sorted(fit.components["criterion"].unique()) == ["helpful", "safe"]
    assert len(fit.components) == 2 * len(COMPONENTS)


def check_rejects_unknown_option(method, scores, **_):
    with pytest.raises(TypeError):
        cj.estimate(scores, method, not_an_option=True)


def check_fits_from_statistics_alone_on_non_row_paths(method, scores, one_generation=None, **_):
    """Default options read no rows: fit gets only the statistics of the model's likelihood (which hold no scores)
    and rows=None. A backend that reads rows for a term (``rows_terms``) does so only on a table whose design
    identifies it, says so without them, and fits a table that does not from the statistics alone."""
    from cjstats.estimators import model_for
    from cjstats.results.model import TERMS

    caps = REGISTRY[method].capabilities
    opts = FAST_OPTIONS.get(method, {})
    lik = model_for(REGISTRY[method], opts).likelihood
    st = build_stats(scores, likelihood=lik)
    if caps.rows_always:          # a backend that declares it always reads the rows says so without them
        assert caps.needs_rows(opts)
        with pytest.raises(cj.CjstatsError, match="needs the score rows"):
            REGISTRY[method].fit(st, ci_level=0.95, seed=0, rows=None, **opts)
        return
    assert not caps.needs_rows(opts), f"{method}: its default options must fit from the statistics"
    if any(TERMS[t].identified(r) for t in caps.rows_terms for _, r in scores.design.iterrows()):
        with pytest.raises(cj.CjstatsError, match="needs the score rows"):
            REGISTRY[method].fit(st, ci_level=0.95, seed=0, rows=None, **opts)
        scores = one_generation   # m = 1: identifies no generation term
        assert not any(TERMS[t].identified(r) for t in caps.rows_terms for _, r in scores.design.iterrows())
        st = build_stats(scores, likelihood=lik)
    assert isinstance(st, ScoreStats) and not any(hasattr(u, "y") for u in st), "statistics must not carry rows"
    fit = REGISTRY[method].fit(st, ci_level=0.95, seed=0, rows=None, **opts)
    pd.testing.assert_frame_equal(fit.components, _fit(method, scores, seed=0).components)


def check_row_paths_refuse_to_run_without_rows(method, scores, **_):
    """Every option value declared in rows_options needs the rows, and says so in one sentence without them."""
    caps = REGISTRY[method].capabilities
    st = build_stats(scores)
    for key, values in caps.rows_options.items():
        for value in values:
            assert caps.needs_rows({key: value})
            with pytest.raises(cj.CjstatsError, match="needs the score rows"):
                REGISTRY[method].fit(st, ci_level=0.95, seed=0, rows=None, **{**FAST_OPTIONS.get(method, {}),
                                                                              key: value})


def check_balanced_only_backends_refuse_unequal_generations(method, scores, frame=None, **_):
    caps = REGISTRY[method].capabilities
    ragged = frame[~((frame["scenario"] == frame["scenario"].iloc[0]) & (frame["generation"] == frame["generation"].max()))]
    if caps.balanced_only:
        with pytest.raises(cj.CjstatsError, match="method='reml'"):
            _fit(method, ragged)
    else:
        assert set(_fit(method, ragged).components["component"]) == set(caps.estimands)


def check_returns_the_declared_estimands_and_scale(method, scores, **_):
    caps = REGISTRY[method].capabilities
    fit = _fit(method, scores)
    for _model, rows in fit.components.groupby("model"):
        assert tuple(rows["component"]) == caps.estimands
    assert fit.scale == caps.scale(FAST_OPTIONS.get(method, {}))
    assert fit.scale == ("latent" if method in DISCRETE_METHODS else "score")
    assert (fit.draws is not None) == caps.samples


def check_contrast_of_mu_reproduces_the_mu_row(method, scores, **_):
    """The generic contrast over the carried covariance (or draws) gives back the mu row's estimate and SE."""
    fit = _fit(method, scores)
    for model in fit.components["model"].unique():
        row = fit.contrast({"mu": 1.0}, model=model).to_frame().iloc[0]
        mu = fit.components[(fit.components["model"] == model) & (fit.components["component"] == "mu")].iloc[0]
        assert row["estimate"] == pytest.approx(mu["estimate"], rel=1e-10)
        assert row["std_error"] == pytest.approx(mu["std_error"], rel=1e-10)
        assert list(fit.parameter_covariance(model).index)[0] == "mu"


CHECKS = [
    check_returns_variance_components, check_same_component_rows, check_intervals_contain_estimates,
    check_offsets_sum_to_zero, check_does_not_mutate_scores, check_does_not_mutate_dataframe,
    check_same_seed_same_numbers, check_one_generation_marks_generation_not_identifiable,
    check_criterion_column_runs_per_criterion, check_rejects_unknown_option,
    check_fits_from_statistics_alone_on_non_row_paths, check_row_paths_refuse_to_run_without_rows,
    check_balanced_only_backends_refuse_unequal_generations, check_returns_the_declared_estimands_and_scale,
    check_contrast_of_mu_reproduces_the_mu_row,
]


# Short MCMC runs may miss the Bayesian backend's ESS check and say so with a CjstatsWarning (its documented
# behaviour, tested in test_bayes.py); the contract checks here are about shape, not convergence.
@pytest.mark.filterwarnings("ignore:The Bayesian fit of model")
@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("method", sorted(REGISTRY))
def test_backend_contract(method, check, request, small_balanced_scores, small_balanced_frame,
                          one_generation_scores, criterion_scores):
    missing = missing_packages(REGISTRY[method])
    if missing:
        pytest.skip(f"{method} needs {', '.join(missing)}: pip install 'cjstats[{REQUIRES[method][1]}]'")
    reason = KNOWN_FAILURES.get((method, check.__name__))
    if reason:
        request.applymarker(pytest.mark.xfail(reason=reason, strict=True))
    if method in DISCRETE_METHODS:
        small_balanced_scores, small_balanced_frame, one_generation_scores, criterion_scores = map(
            _rated, (small_balanced_scores, small_balanced_frame, one_generation_scores, criterion_scores))
    check(method, small_balanced_scores, frame=small_balanced_frame, one_generation=one_generation_scores,
          criterion=criterion_scores)


class TestRegistry:
    def test_estimate_passes_rows_only_to_options_that_declare_them(self, monkeypatch, small_balanced_scores):
        seen = []
        backend = REGISTRY["reml"]
        real = type(backend).fit

        def spy(self, stats, **kw):
            seen.append(kw.get("rows"))
            return real(self, stats, **kw)

        monkeypatch.setattr(type(backend), "fit", spy)
        cj.estimate(small_balanced_scores, "reml", interval="none")
        cj.estimate(small_balanced_scores, "reml", interval="bootstrap", n_boot=3, seed=1)
        assert seen[0] is None and seen[1] is small_balanced_scores

    def test_every_backend_satisfies_the_protocol(self):
        from cjstats.estimators import Backend

        for name, backend in REGISTRY.items():
            assert isinstance(backend, Backend) and backend.name == name
            assert REQUIRES[name] == (tuple(backend.requires), backend.extra)
            assert BACKENDS[name] == backend.module
