"""Variance components of every backend asked for: the tables with standard deviations beside variances, their
notes, the scenario x judge interaction where it was fitted, the forest plot (one row of panels per scale), and for
a Bayesian or ordinal fit its posterior densities or category boundaries."""

from __future__ import annotations

from typing import Any

import pandas as pd

from cjstats.reporting.items import figure, format_table, heading, text


def components_table(fit: Any) -> pd.DataFrame:
    """Components with standard deviations beside variances (:func:`cjstats.results.tables.long`), notes as markers."""
    from cjstats.results.tables import long

    t = fit.components
    out = long(fit).drop(columns=["method", "ci_level", "identifiable"])
    out["ci_method"] = t["ci_method"].to_numpy()
    notes = list(dict.fromkeys(n for n in t["note"] if n))
    if notes:                                   # no column of empty markers when nothing has a note
        out["note"] = [f"[{notes.index(n) + 1}]" if n else "" for n in t["note"]]
    return out


def compact_items(fit: Any, method: str, level: float) -> list[dict[str, Any]]:
    """The compact, lme4-style table of one backend's fit (:func:`cjstats.results.components.compact_frame`): one
    row per model, one column per identified component, ``estimate [interval]`` from each cell's own standard
    error; then the legend of the short method labels and what the data left unidentified."""
    from cjstats.results.components import compact_frame

    frame, legend, left = compact_frame(fit.summary())
    t = fit.components
    items = [format_table(frame, caption=f"{method}: estimate [{100 * level:g}% interval] per model (variances; "
                                          "mu the mean score)")]
    lines = [f"Methods: {legend}." if legend else "",
             ("Not identified by these data: " + ", ".join(left) + " (why: the notes below)."
              if left else ""),
             "* at the boundary (reported as 0)." if t["at_boundary"].astype(bool).any() else ""]
    line = " ".join(x for x in lines if x)
    if line:
        items.append(text(line))
    return items


def _notes(fit: Any) -> list[dict[str, Any]]:
    notes = list(dict.fromkeys(n for n in fit.components["note"] if n))
    return [text(f"[{i}] {n}") for i, n in enumerate(notes, 1)]


def _scenario_judge(inputs: Any) -> list[dict[str, Any]]:
    """The scenario x judge interaction where it was fitted: each group's estimate, interval and test, and whether
    it changes the recommended design of the drawn group (computed by
    :func:`cjstats.decisions.optimise.scenario_judge_verdict`)."""
    lines = inputs.main.scenario_judge_lines()
    if not lines:
        return []
    items = [heading("Judges who disagree about scenarios (scenario x judge interaction)"),
             text("A judge scored several generations of a scenario, so its own deviation on each scenario "
                  "(scenario_judge) is separated from the within-cell residual.")]
    items.extend(text(line + ".") for line in lines)
    if inputs.scenario_judge_verdict:
        items.append(text(f"For {inputs.group.label}: {inputs.scenario_judge_verdict}."))
    return items


def render(inputs: Any) -> list[dict[str, Any]]:
    from cjstats import plots

    main, g, level = inputs.main, inputs.group, inputs.level
    scale_text = ("Variances on the latent scale of the cumulative-link model (the residual is fixed by the link: "
                  "1 for probit, pi^2/3 for logit); mu is the panel's expected score in score points."
                  if inputs.latent else "Variances in score points squared, sd and mu in score points.")
    items: list[dict[str, Any]] = [text(
        "mu is the panel-mean score; scenario, generation, residual are variances; judge_panel is the paper's "
        "sigma2_gamma of this panel (judges fixed); judge_population treats judges as drawn from a population. "
        + scale_text)]
    for m, fit in inputs.fits.items():
        items.append(heading(f"Backend {m}"))
        items.extend(compact_items(fit, m, level))
        items.extend(_notes(fit))
    items.extend(_scenario_judge(inputs))
    scales = {getattr(f, "scale", "score") for f in inputs.fits.values()}
    items.append(figure(plots.components_forest(inputs.fits, by_scale=True),
                        "Every component with its interval, backends side by side (hollow: at the boundary, reported "
                        "as 0)" + ("; one row of panels per scale, since latent-scale and score-scale variances are "
                                   "not on one axis." if len(scales) > 1 else "."),
                        "forest plot of variance components"))
    items.append(heading("Every component row (the long table)"))
    for m, fit in inputs.fits.items():
        items.append(format_table(components_table(fit), caption=f"{m}: estimate, sd = sqrt(variance), "
                                  f"{100 * level:g}% interval", se_column="std_error",
                                  value_columns=("estimate", "std_error", "lower", "upper", "sd", "sd_lower",
                                                 "sd_upper")))
    if "bayes" in inputs.fits:
        items.append(figure(plots.posterior(inputs.fits["bayes"], model=g.model, criterion=g.criterion),
                            f"Posterior densities of the Bayesian components of {g.label}.", "posterior densities"))
    if getattr(main.model, "likelihood", None) == "cumulative" and not main.posterior:   # the ML cumulative fit
        items.append(figure(plots.ordinal_plot(main, model=g.model, criterion=g.criterion), f"Each judge's category "
                            f"boundaries on the latent scale and its offset, {g.label}: a judge whose boundaries sit "
                            "apart from the others uses the score scale differently.", "ordinal fit"))
    return items
