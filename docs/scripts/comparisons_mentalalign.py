"""Numbers of docs/comparisons.md: model comparison and judge self-preference on MentalAlign-70k.

    PYTHONPATH=. .venv/bin/python docs/scripts/comparisons_mentalalign.py            # full table (prints markdown)
    PYTHONPATH=. .venv/bin/python docs/scripts/comparisons_mentalalign.py --scenarios 100   # a slice

Families (judge -> evaluated models of the same provider): OpenAI's judges gpt-4o and o4-mini -> gpt-4o and
gpt-4o-mini; Google's gemini-2.5-flash-preview -> gemini-2.0-flash; Anthropic's claude-3-7-sonnet ->
claude-3.5-haiku. Provider is the family because self-preference is usually attributed to shared training
data and style, which models of one provider share; the judges never score themselves (no judge is an
evaluated model), so the contrast is the family version of self-preference.
"""

from __future__ import annotations

import argparse

import cjstats as cj

__all__ = ["FAMILIES", "run"]

FAMILIES = {
    "gpt-4o": ["gpt-4o", "gpt-4o-mini"],
    "o4-mini": ["gpt-4o", "gpt-4o-mini"],
    "gemini-2.5-flash-preview-04-17": ["gemini-2.0-flash"],
    "claude-3-7-sonnet-20250219": ["claude-3.5-haiku"],
}


def run(scenarios: int | None = None) -> dict:
    """Fit both backends and return the tables (a slice of the first ``scenarios`` scenarios if given)."""
    scores = cj.datasets.load("mentalalign", composite=True)
    if scenarios is not None:
        f = scores.to_frame()
        keep = sorted(f["scenario"].unique())[:scenarios]
        scores = cj.read_scores(f[f["scenario"].isin(keep)].reset_index(drop=True))
    out = {}
    for method, opts in (("anova", {"incomplete": "drop"}), ("reml", {})):
        fit = cj.fit_joint(scores, method, **opts)
        out[method] = {"fit": fit, "compare": cj.compare_models(scores, fit=fit),
                       "compare_population": cj.compare_models(scores, fit=fit, view="population"),
                       "self_preference": cj.self_preference(scores, FAMILIES, fit=fit)}
    return out


def _md(df) -> str:
    head = "| " + " | ".join(map(str, df.columns)) + " |"
    sep = "| " + " | ".join("---" for _ in df.columns) + " |"
    body = ["| " + " | ".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in row) + " |"
            for row in df.itertuples(index=False)]
    return "\n".join([head, sep, *body])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenarios", type=int, default=None)
    res = run(ap.parse_args().scenarios)
    for method, r in res.items():
        print(f"## {method}\n")
        c = r["fit"].components
        print(_md(c[c["model"] == "(joint)"][["component", "view", "estimate", "lower", "upper", "note"]]))
        print()
        ranks = r["compare"].ranks.assign(letters=r["compare"].letters().reindex(r["compare"].ranks["model"]).values)
        print(_md(ranks))
        print()
        print(_md(r["compare_population"].ranks))
        print()
        sp = r["self_preference"]
        print(_md(sp.contrasts.drop(columns=["ci_level", "method"])))
        print(f"\ninteraction test: {sp.test}\n")
        d = r["compare"].differences
        print(_md(d[d["p_adjusted"] >= 0.05][["model_a", "model_b", "difference", "std_error", "p_adjusted"]]))
        print()


if __name__ == "__main__":
    main()
