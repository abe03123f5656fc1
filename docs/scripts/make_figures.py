"""Draw the documentation's figures from the bundled data: ``python docs/scripts/make_figures.py``.

Writes PNGs into ``docs/figures/`` (committed, so ``mkdocs build`` needs no computation). Deterministic: the
estimators are closed-form and the subsampling experiment is seeded.
"""

from __future__ import annotations

from pathlib import Path

import cjstats as cj
from cjstats import plots

OUT = Path(__file__).resolve().parent.parent / "figures"


def main() -> None:
    OUT.mkdir(exist_ok=True)
    plots.set_style()
    hanna = cj.datasets.load("hanna", composite=True, keep_sentinels=True)   # the figures show the complete table
    anova = cj.estimate(hanna, method="anova")
    reml = cj.estimate(hanna, method="reml")
    pool = cj.datasets.load("hanna", eval_prompt="as_generation", keep_sentinels=True)
    sub = cj.subsample_strategies(pool, model="GPT", criterion="Coherence", reps=2000, seed=0)
    figures = {
        "judge_bias_heatmap": plots.judge_bias_heatmap(hanna),
        "strategy_curves": plots.strategy_curves(sub),
        "components_forest": plots.components_forest({"anova": anova, "reml": reml},
                                                     components=["scenario", "residual", "judge_panel"]),
        "allocation_frontier": plots.allocation_frontier(cj.optimise(anova, budget=480, model="GPT")),
    }
    for name, fig in figures.items():
        fig.savefig(OUT / f"{name}.png", dpi=110)
        print(f"wrote {OUT / name}.png")


if __name__ == "__main__":
    main()
