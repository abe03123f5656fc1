"""The Bayesian backend's scenario x judge term (issue 21): its density, the PyMC model of record, the fit.

Every sampling test uses a fixed seed, so the suite is deterministic; tolerances come from the posterior
uncertainty, as stated next to each.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import cjstats as cj
from cjstats.results.estimands import COMPONENTS
from cjstats.estimators.base import SJ_NOTE
from cjstats.exceptions import CjstatsError, CjstatsWarning
from cjstats.io.read import read_scores
from cjstats.studies.simulate import TABLE3_MTBENCH, panel_offsets, simulate_scores
from cjstats.stats import build_stats

pytest.importorskip("pymc")
pytest.importorskip("arviz_stats")

from cjstats.estimators.bayes.gaussian import GaussianPriors, collapsed_loglik  # noqa: E402
from cjstats.estimators.bayes.pymc_model import build_pymc_gaussian_sj  # noqa: E402
from cjstats.estimators.bayes.scenario_judge import (  # noqa: E402
    SJJointDensity,
    SJMarginalDensity,
    sj_data,
    sj_loglik,
)

QWEN = TABLE3_MTBENCH["Qwen"]
PRI = GaussianPriors(2.5, 1.3, 0.7, 1.1, 0.9, 0.8)


def sj_scores(n: int, m: int, k: int, *, s2_sj: float, seed: int, missing: float = 0.0) -> pd.DataFrame:
    """X_ijl = 5 + alpha_i + beta_ij + gamma_l + (alpha gamma)_il + eps_ijl, s2 = (1, 0.3, s2_sj, 1)."""
    rng = np.random.default_rng(seed)
    gam = np.linspace(-0.5, 0.5, k)
    i, j, l = np.meshgrid(np.arange(n), np.arange(m), np.arange(k), indexing="ij")
    a = rng.normal(0.0, 1.0, n)
    b = rng.normal(0.0, math.sqrt(0.3), (n, m))
    ag = rng.normal(0.0, math.sqrt(s2_sj), (n, k))
    y = 5.0 + a[i] + b[i, j] + gam[l] + ag[i, l] + rng.normal(0.0, 1.0, i.shape)
    df = pd.DataFrame({"model": "x", "scenario": i.ravel(), "generation": j.ravel(),
                       "judge": np.char.add("j", l.ravel().astype(str)), "score": y.ravel()})
    if missing:
        df = df[rng.random(len(df)) >= missing].reset_index(drop=True)
    return df


def row(fit, component: str) -> pd.Series:
    c = fit.components
    return c[c["component"] == component].iloc[0]


# ---------------------------------------------------------------------------------------------- density
class TestDensity:
    """The likelihood with the term is the dense Gaussian one; every density and gradient agrees."""

    @pytest.fixture(scope="class")
    @classmethod
    def unit(cls):
        # unbalanced: calls lost at random and one scenario with a single generation (several patterns)
        df = sj_scores(7, 3, 4, s2_sj=0.5, seed=3, missing=0.25)
        df = df[~((df["scenario"] == 0) & (df["generation"] > 0))]
        scores = read_scores(df)
        return next(iter(build_stats(scores))), next(scores.groups())

    def test_likelihood_equals_the_dense_multivariate_normal(self, unit):
        g, rows = unit
        data = sj_data(g)
        assert data.ev.sj.count.shape[0] > 1
        scen = np.asarray(rows.cell_scenario)[rows.cell]
        same_s = scen[:, None] == scen[None, :]
        rng = np.random.default_rng(0)
        for _ in range(4):
            mu = 5.0 + rng.normal()
            gam = rng.normal(size=g.k)
            s2a, s2b, s2sj, s2e = rng.uniform(0.2, 2.0, 4)
            cov = (s2e * np.eye(len(rows.y)) + s2b * (rows.cell[:, None] == rows.cell[None, :]) + s2a * same_s
                   + s2sj * (same_s & (rows.judge[:, None] == rows.judge[None, :])))
            dense = stats.multivariate_normal(mu + gam[rows.judge], cov).logpdf(rows.y)
            assert sj_loglik(data, mu, gam, s2a, s2b, s2sj, s2e, grad=False)[0] == pytest.approx(dense, abs=1e-8)
            # at s2_sj = 0 it is the likelihood of the model without the term (which drops constants)
            gz = gam - gam.mean()
            ll0 = sj_loglik(data, mu, gz, s2a, s2b, 0.0, s2e, grad=False)[0]
            st = g.for_gaussian()
            const = -0.5 * len(rows.y) * math.log(2 * math.pi) - 0.5 * np.log(np.bincount(rows.cell)).sum()
            assert ll0 == pytest.approx(collapsed_loglik(st, mu, gz, s2a, s2b, s2e, grad=False)[0] + const,
                                        abs=1e-8)

    def test_gradients_equal_finite_differences_and_the_kernel_the_numpy_path(self, unit):
        data = sj_data(unit[0])
        rng = np.random.default_rng(1)
        mu, gam, s2 = 5.3, rng.normal(size=data.k), (0.8, 0.4, 0.6, 1.2)
        ll, gr = sj_loglik(data, mu, gam, *s2)
        h = 1e-6
        for j, key in enumerate(("s2a", "s2b", "s2sj", "s2e")):
            e = np.eye(4)[j] * h
            fd = (sj_loglik(data, mu, gam, *(np.add(s2, e)), grad=False)[0]
                  - sj_loglik(data, mu, gam, *(np.subtract(s2, e)), grad=False)[0]) / (2 * h)
            assert gr[key] == pytest.approx(fd, rel=1e-6, abs=1e-6), key
        fast, ref = SJMarginalDensity(data, PRI), SJMarginalDensity(data, PRI, compiled=False)
        for dens in (SJJointDensity(data, PRI), ref):
            theta = dens.initial_point(rng) + 0.3 * rng.normal(size=dens.ndim)
            fd = [(dens.logp(theta + h * e)[0] - dens.logp(theta - h * e)[0]) / (2 * h) for e in np.eye(dens.ndim)]
            np.testing.assert_allclose(dens.logp(theta)[1], fd, rtol=1e-6, atol=1e-6)
        if fast.kernel is None:
            pytest.skip("numba is not installed: only the numpy path runs")
        for _ in range(3):
            theta = fast.initial_point(rng) + 0.5 * rng.normal(size=fast.ndim)
            a, b = fast.evaluate(theta), ref.evaluate(theta)
            assert a[0] == pytest.approx(b[0], abs=1e-9)
            for x, y in zip(a[1:], b[1:]):
                np.testing.assert_allclose(x, y, atol=1e-9)

    def test_marginal_density_integrates_the_joint_over_mu_and_gamma(self, unit):
        data = sj_data(unit[0])
        joint, marg = SJJointDensity(data, PRI), SJMarginalDensity(data, PRI, compiled=False)
        rng = np.random.default_rng(3)
        gaps = []
        j = marg.sigma_names.index("sigma_scenario_judge")
        for i in range(4):
            t = marg.initial_point(rng)
            t[j] *= (-1) ** i                                # sigma_sj = |u|: either sign is the same point
            lp, _, mean, lb_inv = marg.evaluate(t)
            logs = np.log(marg.sigmas(t))                      # the joint density's coordinates: log scales
            full = np.concatenate([[mean[0] + data.st.ybar], logs, mean[1:]])
            lj, gj = joint.logp(full)
            np.testing.assert_allclose(gj[0], 0.0, atol=1e-8)               # the conditional mean is the mode
            np.testing.assert_allclose(gj[1 + len(t):], 0.0, atol=1e-8)
            # Gaussian integral at its mode; density in u = density in log sigma_sj x |d log sigma_sj / du|
            gaps.append(lp - (lj + np.sum(np.log(np.diag(lb_inv))) - math.log(abs(t[j]))))
        assert np.ptp(gaps) < 1e-9

    def test_marginal_density_is_smooth_through_sigma_sj_zero(self, unit):
        """u = 0 (sigma_sj = 0) is an ordinary point: finite density, zero u-gradient, equal finite differences
        on both sides, and the same density at u and -u (kernel and numpy path)."""
        data = sj_data(unit[0])
        rng = np.random.default_rng(5)
        dens = [SJMarginalDensity(data, PRI, compiled=False), SJMarginalDensity(data, PRI)]
        for d in dens:
            j = d.sigma_names.index("sigma_scenario_judge")
            t = d.initial_point(rng)
            t[j] = 0.0
            lp0, g0 = d.logp(t)
            assert math.isfinite(lp0) and g0[j] == 0.0
            h = 1e-5
            for u in (h, 0.3, 1.7):
                a, b = t.copy(), t.copy()
                a[j], b[j] = u, -u
                (la, ga), (lb, gb) = d.logp(a), d.logp(b)
                assert la == pytest.approx(lb, abs=1e-12) and ga[j] == pytest.approx(-gb[j], abs=1e-9)
                e = np.zeros_like(t)
                e[j] = 1e-6
                fd = (d.logp(a + e)[0] - d.logp(a - e)[0]) / 2e-6
                assert ga[j] == pytest.approx(fd, rel=1e-5, abs=1e-6)

    @pytest.mark.parametrize(("m", "k", "missing"), [(3, 4, 0.25), (4, 3, 0.25), (3, 3, 0.0), (5, 2, 0.0)])
    def test_kernel_equals_the_numpy_path_whichever_block_it_eliminates(self, m, k, missing):
        """The kernel eliminates the larger of the generation (m) and scenario x judge (K) blocks in closed form,
        grouping its effects by cell or judge size: both choices, balanced (one class) and unbalanced tables
        (several patterns and classes), and u = 0 agree with the numpy path."""
        df = sj_scores(8, m, k, s2_sj=0.5, seed=4, missing=missing)
        data = sj_data(next(iter(build_stats(read_scores(df)))))
        fast, ref = SJMarginalDensity(data, PRI), SJMarginalDensity(data, PRI, compiled=False)
        if fast.kernel is None:
            pytest.skip("numba is not installed: only the numpy path runs")
        cls, _, pat = fast._kargs[4:7]
        assert (pat.shape[0] > 1 and cls.shape[0] > pat.shape[0]) if missing else cls.shape[0] == pat.shape[0] == 1
        rng = np.random.default_rng(7)
        j = fast.sigma_names.index("sigma_scenario_judge")
        for i in range(6):
            theta = fast.initial_point(rng) + 0.5 * rng.normal(size=fast.ndim)
            if i == 0:
                theta[j] = 0.0
            a, b = fast.evaluate(theta), ref.evaluate(theta)
            assert a[0] == pytest.approx(b[0], abs=1e-9)
            for x, y in zip(a[1:], b[1:]):
                np.testing.assert_allclose(x, y, atol=1e-9)

    def test_joint_density_is_the_pymc_model(self, unit):
        g, _ = unit
        data = sj_data(g)
        dens = SJJointDensity(data, PRI)
        model = build_pymc_gaussian_sj(data, PRI, g.judge_labels)
        logp = model.compile_logp(mode="FAST_COMPILE")
        dlogp = model.compile_dlogp(mode="FAST_COMPILE")
        names = [v.name for v in model.value_vars]
        assert names == ["mu", "sigma_scenario_log__", "sigma_generation_log__", "sigma_scenario_judge_log__",
                         "sigma_residual_log__", "sigma_judge_log__", "gamma_zerosum__"]
        rng = np.random.default_rng(2)
        offsets = []
        for _ in range(3):
            theta = dens.initial_point(rng) + 0.3 * rng.normal(size=dens.ndim)
            point = dict(zip(names[:6], theta[:6]))
            point["gamma_zerosum__"] = theta[6:]
            lp, grad = dens.logp(theta)
            offsets.append(float(logp(point)) - lp)
            np.testing.assert_allclose(dlogp(point), grad, atol=1e-8)
        assert np.ptp(offsets) < 1e-8, "the two densities must differ by a constant only"


# ---------------------------------------------------------------------------------------------- the fit
@pytest.fixture(scope="module")
def big_sj():
    """A large interaction (n = 30, m = 3, K = 4, s2_sj = 0.5): the default sampler at the defaults."""
    df = sj_scores(30, 3, 4, s2_sj=0.5, seed=21)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CjstatsWarning)     # a failed convergence check fails the fixture
        fit = cj.estimate(df, "bayes", seed=1)
    return df, fit


class TestNativeCallbacks:
    """The default sampler hands the marginal density to nutpie as C callbacks (the chains run in parallel); both
    callbacks store the conditional normal of (mu, gamma), drawn after sampling (``conditional_draws``). With the
    Python callback instead, the draws are the same (the same kernel under the same NUTS, the same streams) up to
    the last bit of exp."""

    @pytest.mark.parametrize("model", ["scenario_judge", "paper"])
    def test_native_and_python_callbacks_give_the_same_posterior(self, monkeypatch, model):
        """Both marginal densities: the scenario x judge one (the default) and the paper model's
        (``scenario_judge=False``), whose callbacks are :func:`native.native_marginal_model`'s."""
        from cjstats.estimators.bayes import native

        df = sj_scores(15, 2, 4, s2_sj=0.2, seed=8)
        kw = {"seed": 3, "draws": 500, "tune": 500, "chains": 2, "scenario_judge": model == "scenario_judge"}
        made = []
        factory = "native_sj_model" if model == "scenario_judge" else "native_marginal_model"
        real = getattr(native, factory)
        monkeypatch.setattr(native, factory, lambda density, init: made.append(real(density, init=init)) or made[-1])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CjstatsWarning)
            nat = cj.estimate(df, "bayes", **kw)
            again = cj.estimate(df, "bayes", **kw)
            monkeypatch.setattr(native, factory, lambda density, init: None)
            py = cj.estimate(df, "bayes", **kw)
        assert len(made) == 2 and all(m is not None for m in made)     # the C callbacks ran
        a, b = nat.posterior["x"].posterior, py.posterior["x"].posterior
        assert list(a.data_vars) == list(b.data_vars) and a["gamma"].dims == b["gamma"].dims
        assert list(a["judge"].values) == list(b["judge"].values)
        pd.testing.assert_frame_equal(nat.draws, again.draws)            # reproducible with a seed
        # the same positions; exp of a log scale may round differently in numba and numpy (1 ulp), |u| may not
        scales = ["sigma_scenario", "sigma_generation", "sigma_residual", "sigma_judge", "residual", "judge_population"]
        if model == "scenario_judge":
            np.testing.assert_array_equal(a["sigma_scenario_judge"].values, b["sigma_scenario_judge"].values)
            scales.append("scenario_judge")
        for nm in scales:
            np.testing.assert_allclose(a[nm].values, b[nm].values, rtol=1e-14, atol=0, err_msg=nm)
        # (mu, gamma): the same conditional normals, the same streams
        for nm in ("mu", "gamma", "judge_panel"):
            np.testing.assert_allclose(a[nm].values, b[nm].values, rtol=1e-13, atol=1e-13, err_msg=nm)
        assert nat.diagnostics["x"]["divergences"] == py.diagnostics["x"]["divergences"]

    def test_cached_callbacks_are_keyed_by_the_kernels_source(self, monkeypatch):
        """numba's disk cache keys a function by its own file, bytecode and closure, not by the kernels it calls
        from other files: each callback closes over a stamp of those files, so an edited kernel compiles again
        instead of loading the old machine code (which then ran with the new arguments: a wrong np.dot shape)."""
        from pathlib import Path

        from cjstats.estimators.bayes import native, scenario_judge

        stamp = native._source_stamp()
        assert native._SOURCE_STAMP == stamp
        for fn in (native._logp._pyfunc, native._cond_logp._pyfunc, native._cond_expand._pyfunc,
                   native._cond_call.py_func, native._sj_call.py_func, native._mg_call.py_func):
            assert stamp in [c.cell_contents for c in fn.__closure__], fn.__name__
        read = Path.read_bytes
        edited = Path(scenario_judge.__file__)
        monkeypatch.setattr(Path, "read_bytes", lambda p: read(p) + (b"# edited" if p == edited else b""))
        assert native._source_stamp() != stamp

    @pytest.mark.parametrize("density", ["scenario_judge", "paper"])
    def test_conditional_draws_have_one_stream_per_chain_and_seed(self, density):
        """nutpie hands every chain's Python expand function the same seeds, so (mu, gamma) are drawn after
        sampling from the stored conditional normal with default_rng([seed, chain]): two chains at the same scales
        get different draws, a seed repeats them, another seed changes them, and they follow N(mean, L^-T L^-1).
        The paper model's marginal density too (it drew them from nutpie's seeds: one stream for every chain
        and fit)."""
        import xarray as xr

        from cjstats.estimators.bayes.gaussian import MarginalDensity

        df = sj_scores(15, 2, 4, s2_sj=0.2, seed=8)
        unit = next(iter(build_stats(read_scores(df))))
        dens = (SJMarginalDensity(sj_data(unit), PRI) if density == "scenario_judge"
                else MarginalDensity(unit.for_gaussian(), PRI))
        e = dens.conditional_expand(dens.initial_point(np.random.default_rng(0)))
        n = 2000
        _, _, _, dims = dens.conditional_layout()
        ds = xr.Dataset({nm: (("chain", "draw", *dims.get(nm, ())), np.broadcast_to(v, (2, n, *np.shape(v))).copy())
                         for nm, v in e.items()}, coords={"chain": [0, 1], "draw": np.arange(n)})

        def mu_draws(seed):
            tree = xr.DataTree.from_dict({"posterior": ds})
            dens.conditional_draws(tree, names=dens.expanded_names(), seed=seed, judge=list(range(dens.k)))
            return tree.posterior["mu"].values

        a = mu_draws(1)
        assert not np.array_equal(a[0], a[1]) and not np.array_equal(a, mu_draws(2))
        np.testing.assert_array_equal(a, mu_draws(1))
        m = e["conditional_mean"][0] + dens.st.ybar
        sd = math.sqrt(float(np.sum(e["conditional_chol_inv"][:, 0] ** 2)))    # (L^-T L^-1)_00
        for c in range(2):                                   # 4 SE of a mean and of an SD of n normal draws
            assert abs(a[c].mean() - m) <= 4 * sd / math.sqrt(n)
            assert abs(a[c].std() / sd - 1) <= 4 / math.sqrt(2 * n)


class TestFit:
    def test_large_interaction_is_recovered_and_agrees_with_reml(self, big_sj):
        df, fit = big_sj
        d = fit.diagnostics["x"]
        assert d["r_hat_max"] <= 1.01 and d["divergences"] == 0 and d["converged"]
        assert d["scenario_judge"] == "fitted"
        assert list(fit.components["component"]) == list(COMPONENTS)
        sj = row(fit, "scenario_judge")
        assert sj["identifiable"] and sj["lower"] <= 0.5 <= sj["upper"]     # 95% interval, fixed seed
        assert sj["lower"] <= sj["estimate"] <= sj["upper"]
        reml = cj.estimate(df, "reml")
        assert row(reml, "scenario_judge")["identifiable"]
        for comp in ("mu", "scenario", "generation", "scenario_judge", "residual", "judge_panel"):
            b, r = row(fit, comp), row(reml, comp)
            # posterior mean vs the REML estimate (a mode): they differ by O(1/n) and by Monte Carlo error
            # sd/sqrt(ESS >= 400) <= 0.05 sd, far below half a posterior SD
            assert abs(b["estimate"] - r["estimate"]) <= 0.5 * b["std_error"], (comp, b["estimate"], r["estimate"])

    def test_draws_posterior_and_checks_carry_the_term(self, big_sj):
        _, fit = big_sj
        x = fit.draws["scenario_judge"]
        assert x.notna().all() and (x > 0).all()
        assert row(fit, "scenario_judge")["estimate"] == pytest.approx(float(x.mean()))
        post = fit.posterior["x"].posterior
        assert {"sigma_scenario_judge", "scenario_judge"} <= set(post.data_vars)
        np.testing.assert_allclose(post["scenario_judge"].values, post["sigma_scenario_judge"].values ** 2)
        tab = fit.diagnostics["x"]["per_variable"]
        assert {"sigma_scenario_judge", "scenario_judge"} <= set(tab.index)
        assert fit.provenance["options"]["scenario_judge"] == "auto"

    def test_one_generation_gives_the_not_identifiable_row(self):
        df = simulate_scores(n=30, m=1, k=4, s2_scenario=1.0, s2_generation=0.2, s2_residual=1.0,
                             judge_offsets=panel_offsets(4, 0.5), seed=6)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CjstatsWarning)   # short chains on purpose
            fit = cj.estimate(df, "bayes", seed=2, draws=300, tune=300, chains=2)
        sj = row(fit, "scenario_judge")
        assert not sj["identifiable"] and np.isnan(sj["estimate"]) and np.isnan(sj["lower"])
        assert sj["note"] == SJ_NOTE
        assert fit.diagnostics["model"]["scenario_judge"] == SJ_NOTE
        assert fit.draws["scenario_judge"].isna().all()
        assert "sigma_scenario_judge" not in fit.posterior["model"].posterior
        assert list(fit.components["component"]) == list(COMPONENTS)

    def test_true_on_one_generation_and_bad_values_are_refused(self):
        df = simulate_scores(n=10, m=1, k=3, s2_scenario=1.0, s2_generation=0.2, s2_residual=1.0,
                             judge_offsets=np.zeros(3), seed=1)
        with pytest.raises(CjstatsError, match="scenario_judge=True.*not identifiable"):
            cj.estimate(df, "bayes", seed=1, scenario_judge=True)
        with pytest.raises(CjstatsError, match="'scenario_judge' argument of estimate must be 'auto', True or False"):
            cj.estimate(df, "bayes", seed=1, scenario_judge="yes")
        m2 = simulate_scores(n=10, m=2, k=3, s2_scenario=1.0, s2_generation=0.2, s2_residual=1.0,
                             judge_offsets=np.zeros(3), seed=1)
        m2["score"] = np.clip(np.round(m2["score"]), -2, 2)
        with pytest.raises(CjstatsError, match="scenario_judge=True: likelihood='ordinal'"):
            cj.estimate(m2, "bayes", seed=1, likelihood="ordinal", scenario_judge=True)

    def test_false_reproduces_the_model_without_the_term(self):
        # scenario_judge=False runs the density and sampler of the backend before the term existed (commit
        # e340598). Its draws then equalled that commit's to rounding; since the statistics are summed in a fixed
        # order (einsum, not multi-threaded BLAS: the last bits of the sufficient statistics moved), NUTS follows
        # another path from the same seed, so the old numbers hold to Monte Carlo error (within 0.25 posterior
        # SD each, 600 draws) and the current ones are pinned to rounding.
        df = simulate_scores(n=20, m=3, k=4, s2_scenario=QWEN["scenario"], s2_generation=QWEN["generation"],
                             s2_residual=QWEN["residual"], judge_offsets=panel_offsets(4, QWEN["judge_panel"]),
                             mu=QWEN["mu"], model="Qwen", seed=31)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CjstatsWarning)
            fit = cj.estimate(df, "bayes", seed=3, draws=300, tune=300, chains=2, scenario_judge=False)
        before = {"mu": (7.350060357867184, 0.2141257735855498), "scenario": (0.6851480093698437, 0.30279563506324175),
                  "generation": (0.11030662059234485, 0.09987094878459879),
                  "residual": (1.3789118216010345, 0.14850587152834824),
                  "judge_panel": (1.0601434886618875, 0.15629187217741788),
                  "judge_population": (2.9837142133726897, 4.89851753125553)}
        # (mu, gamma) are drawn after sampling, one stream per chain (they shared one, TestNativeCallbacks)
        now = {"mu": (7.369212877420753, 0.20715402834088525), "scenario": (0.7192177719036409, 0.3635602250106793),
               "generation": (0.10669064120321849, 0.09904619333398833),
               "residual": (1.370778661808351, 0.14271188922690067),
               "judge_panel": (1.04634125316955, 0.1519578437625462),
               "judge_population": (2.9407478458077043, 6.4154593589788975)}
        for comp, (est, sd) in before.items():
            r = row(fit, comp)
            assert abs(r["estimate"] - est) <= 0.25 * sd, comp
            assert r["estimate"] == pytest.approx(now[comp][0], rel=1e-9)
            assert r["std_error"] == pytest.approx(now[comp][1], rel=1e-9)
        sj = row(fit, "scenario_judge")
        assert not sj["identifiable"] and "scenario_judge=False" in sj["note"]
        assert fit.draws["scenario_judge"].isna().all()


@pytest.mark.slow
class TestOtherPaths:
    """The joint parametrisation (numpy density, no kernel) and pm.sample on the PyMC model: minutes each."""

    def test_joint_parametrisation_and_pymc_sampler_agree_with_the_default(self, big_sj):
        df, fit = big_sj
        kw = {"draws": 500, "tune": 500, "chains": 2, "cores": 1}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CjstatsWarning)
            joint = cj.estimate(df, "bayes", seed=4, parametrisation="joint", **kw)
            ref = cj.estimate(df, "bayes", seed=5, sampler="pymc", **kw)
        assert ref.diagnostics["x"]["sampler"] == "pymc"
        for other in (joint, ref):
            for comp in ("mu", "scenario", "scenario_judge", "residual", "judge_panel"):
                a, b = row(fit, comp), row(other, comp)
                # independent runs: MC error of each mean <= sd/sqrt(ESS >= 200) = 0.07 sd
                assert abs(a["estimate"] - b["estimate"]) <= 0.3 * a["std_error"], comp
