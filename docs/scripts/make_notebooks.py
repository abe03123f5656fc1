"""Write and execute the example notebooks: ``python docs/scripts/make_notebooks.py [name ...]``.

Each notebook is defined here as a list of markdown and code cells, executed top to bottom with nbclient, and
saved into ``notebooks/`` with its outputs and figures. ``tests/test_notebooks.py`` re-executes the stored
notebooks, so what is checked in is what runs.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent.parent
OUT = ROOT / "notebooks"

SETUP = "%matplotlib inline\nimport cjstats as cj\nfrom cjstats import plots\n\nplots.set_style()"

NOTEBOOKS: dict[str, list[tuple[str, str]]] = {
    "01_hanna_judge_bias": [
        ("md", "# Judge bias on real data: HANNA\n\nVariance components of HANNA story ratings by 5 LLM judges "
               "(bundled with cjstats), with intervals, judge offsets, the judge F test, the per-judge rankings "
               "(the paper's Table 1), the judge-bias heatmap (its Fig. 2) and the strategy curves (its Fig. 1)."),
        ("code", SETUP + "\n\nscores = cj.datasets.load(\"hanna\", composite=True)   # 11 models x 96 prompts x "
                 "5 judges, m = 1\nscores.design.head()"),
        ("md", "## Variance components\n\nWith one story per prompt (m = 1) the generation component is not "
               "identifiable: the `scenario` row holds scenario + generation, and the `generation` row says so "
               "instead of printing a number."),
        ("code", "fit = cj.estimate(scores, method=\"anova\")\nfit.components.query(\"model == 'GPT-2'\")"
                 "[[\"component\", \"estimate\", \"lower\", \"upper\", \"ci_method\", \"view\", \"note\"]]"),
        ("md", "`judge_panel` is the paper's sigma2_gamma of this fixed panel, tight; `judge_population` treats the "
               "5 judges as a random draw, with 4 degrees of freedom: wide, honestly. Standard deviations beside "
               "the variances (`cj.tables.wide`), and the same as a booktabs LaTeX table for a paper:"),
        ("code", "cj.tables.wide(fit, stats=(\"estimate\", \"sd\")).round(3)"),
        ("code", "print(cj.tables.as_latex(cj.estimate(scores.subset(models=[\"GPT\", \"GPT-2\"]))))"),
        ("md", "## Does the judge matter? F test, single-judge rankings, heatmap"),
        ("code", "cj.judge_f_test(scores).head()"),
        ("code", "table = cj.judge_table(scores)\ntable.wide()"),
        ("code", "table.top_model_changes"),
        ("code", "plots.judge_bias_heatmap(scores)"),
        ("md", "ChatGPT scores every source about one point below the panel and Llama-13B well above it. The "
               "forest plot sets the components of two backends side by side (on balanced data REML equals ANOVA "
               "wherever no estimate is truncated; the intervals differ):"),
        ("code", "reml = cj.estimate(scores, method=\"reml\")\n"
                 "plots.components_forest({\"anova\": fit, \"reml\": reml}, "
                 "components=[\"scenario\", \"residual\", \"judge_panel\"])"),
        ("md", "## Bayesian posterior of one model\n\nA short run (2 chains x 300 draws) for one model; "
               "`judge_population` is wide and prior-sensitive with 5 judges."),
        ("code", "bayes = cj.estimate(scores.subset(models=[\"GPT\"]), method=\"bayes\", draws=300, tune=300, "
                 "chains=2, seed=0)\nplots.posterior(bayes)"),
        ("md", "## Strategies A, B, C (paper Fig. 1, App. F)\n\nHANNA rates every story under 4 judge-prompt variants. "
               "Used as repeated measurements (`eval_prompt=\"as_generation\"`), they give a pool on which the "
               "subsampling experiment runs; the lines are its exact predictions."),
        ("code", "pool = cj.datasets.load(\"hanna\", eval_prompt=\"as_generation\")\n"
                 "sub = cj.subsample_strategies(pool, model=\"GPT\", criterion=\"Coherence\", reps=1000, seed=0)\n"
                 "plots.strategy_curves(sub)"),
        ("code", "sub[[\"strategy\", \"budget\", \"variance\", \"predicted\", \"z\"]].head(10)"),
        ("md", "## Per criterion\n\nThe same analysis runs per (model, criterion) when the table has a criterion "
               "column."),
        ("code", "per_criterion = cj.estimate(cj.datasets.load(\"hanna\"))\n"
                 "per_criterion.components.query(\"component == 'judge_panel'\").pivot(index=\"model\", "
                 "columns=\"criterion\", values=\"estimate\").round(3)"),
    ],
    "02_mentalalign": [
        ("md", "# MentalAlign: several models, seven criteria, four LLM judges\n\nMentalAlign-70k (bundled): "
               "responses of 10 sources to 1,000 mental-health questions, rated on 7 criteria by 4 LLM judges; "
               "human ratings of a subset ship in the same file (`judge_type == \"human\"`). One judge call is "
               "missing for some cells, so the design is unbalanced and the components come from REML."),
        ("code", SETUP + "\n\nscores = cj.datasets.load(\"mentalalign\")\nprint(scores.models)\n"
                 "print(scores.criteria)\nprint(scores.judges)\nscores.design[[\"model\", \"criterion\", \"n_rows\", "
                 "\"n_scenarios\", \"n_judges\", \"n_missing\", \"complete\"]].head()"),
        ("md", "## Components per model and criterion"),
        ("code", "fit = cj.estimate(scores, method=\"reml\")\n"
                 "fit.components.query(\"component == 'judge_panel'\").pivot(index=\"model\", columns=\"criterion\", "
                 "values=\"estimate\").round(3)"),
        ("md", "The judge panel's share of the variance of a single-judge score, per criterion (averaged over "
               "models): where the judges disagree most."),
        ("code", "t = fit.components.pivot_table(index=[\"model\", \"criterion\"], columns=\"component\", "
                 "values=\"estimate\")\nshare = t[\"judge_panel\"] / (t[\"scenario\"] + t[\"residual\"] + "
                 "t[\"judge_panel\"])\nshare.groupby(\"criterion\").mean().sort_values().round(3)"),
        ("code", "plots.judge_bias_heatmap(scores, criterion=\"Safety\")"),
        ("code", "plots.judge_bias_heatmap(scores.composite())"),
        ("md", "Components of a few models, all criteria, side by side:"),
        ("code", "few = cj.estimate(scores.subset(models=[\"gpt-4o\", \"qwen3-4b\", \"human-original\"], "
                 "criteria=[\"Empathy\", \"Safety\"]), method=\"reml\")\n"
                 "plots.components_forest(few, components=[\"scenario\", \"residual\", \"judge_panel\"])"),
        ("md", "## Does the top model depend on the judge?"),
        ("code", "table = cj.judge_table(scores)\nprint(\"top model changes across judges:\", "
                 "table.top_model_changes)\ntable.top_model.pivot(index=\"criterion\", columns=\"judge\", "
                 "values=\"top_model\")"),
        ("md", "## Human raters in the file\n\nThe human ratings are not used by the LLM-judge analysis above; "
               "here is what the file holds (rows per model and criterion), the raw material of a human "
               "reference."),
        ("code", "frame = cj.datasets.load_frame(\"mentalalign\")\nhuman = frame[frame[\"judge_type\"] == \"human\"]\n"
                 "human.pivot_table(index=\"model\", columns=\"criterion\", values=\"score\", aggfunc=\"count\")"),
        ("md", "## A report to share\n\n`cj.report(scores.composite(), output=\"mentalalign.html\", "
               "method=\"reml\")` (or `cjstats report scores.csv -o mentalalign.html --method reml`) writes "
               "all of the above, with the allocation, as one self-contained HTML file."),
    ],
    "03_choosing_an_estimator": [
        ("md", "# Choosing an estimator: a small simulation study\n\nKnown components (the paper's Table 3, "
               "Qwen), a small design (n = 30 scenarios, m = 2 generations, K = 4 judges), complete or with 10% "
               "of the judge calls lost. Each replicate is simulated with `cjstats.simulate.simulate_scores` and "
               "fitted with every backend that applies; we record the estimate and whether the 95% interval "
               "covers the truth. 30 replicates keep it fast; Monte Carlo standard errors say how far to trust "
               "each number."),
        ("code", SETUP + "\nimport time\nfrom types import SimpleNamespace\n\nimport numpy as np\nimport pandas as pd\n"
                 "from cjstats.simulate import TABLE3_MTBENCH, panel_offsets, simulate_scores\n\n"
                 "truth = TABLE3_MTBENCH[\"Qwen\"]\nK = 4\n"
                 "gamma = panel_offsets(K, truth[\"judge_panel\"])   # a fixed "
                 "panel: mean(gamma^2) = judge_panel exactly\nCOMPS = [\"scenario\", \"generation\", \"residual\", "
                 "\"judge_panel\"]"),
        ("code", "rows = []\nfor design, missing, methods in [(\"complete\", 0.0, (\"anova\", \"reml\")), "
                 "(\"10% missing\", 0.1, (\"reml\",))]:\n    for rep in range(30):\n"
                 "        df = simulate_scores(n=30, m=2, k=K, s2_scenario=truth[\"scenario\"], "
                 "s2_generation=truth[\"generation\"],\n                             s2_residual=truth[\"residual\"], "
                 "judge_offsets=gamma, mu=truth[\"mu\"], missing=missing, seed=rep)\n"
                 "        scores = cj.read_scores(df)\n        for method in methods:\n"
                 "            t0 = time.perf_counter()\n"
                 "            fit = cj.estimate(scores, method=method, seed=rep)\n"
                 "            seconds = time.perf_counter() - t0\n"
                 "            for r in fit.components[fit.components[\"component\"].isin(COMPS)].itertuples():\n"
                 "                rows.append({\"design\": design, \"method\": method, \"component\": r.component,\n"
                 "                             \"truth\": truth[r.component], \"estimate\": r.estimate, "
                 "\"lower\": r.lower, \"upper\": r.upper,\n"
                 "                             \"at_boundary\": r.at_boundary, \"seconds\": seconds})\n"
                 "runs = pd.DataFrame(rows)\nlen(runs)"),
        ("md", "Summaries with Monte Carlo standard errors: bias (sd / sqrt(R)), coverage (sqrt(p(1-p)/R))."),
        ("code", "def summarise(g):\n    R = len(g)\n    err = g[\"estimate\"] - g[\"truth\"]\n"
                 "    cover = ((g[\"lower\"] <= g[\"truth\"]) & (g[\"truth\"] <= g[\"upper\"])).mean()\n"
                 "    return pd.Series({\"truth\": g[\"truth\"].iloc[0], \"mean_estimate\": g[\"estimate\"].mean(),\n"
                 "                      \"bias\": err.mean(), \"bias_mcse\": err.std(ddof=1) / np.sqrt(R),\n"
                 "                      \"rmse\": np.sqrt((err ** 2).mean()), \"coverage\": cover,\n"
                 "                      \"coverage_mcse\": np.sqrt(cover * (1 - cover) / R),\n"
                 "                      \"mean_width\": (g[\"upper\"] - g[\"lower\"]).mean(), "
                 "\"boundary_rate\": g[\"at_boundary\"].mean(),\n"
                 "                      \"seconds_per_fit\": g[\"seconds\"].mean(), \"replicates\": R})\n\n"
                 "summary = runs.groupby([\"design\", \"method\", \"component\"], sort=False).apply(summarise, "
                 "include_groups=False).reset_index()\nsummary.round(3)"),
        ("md", "Coverage by design, method and component; the grey band is where a correct 95% interval's "
               "coverage falls 95% of the time with this many replicates."),
        ("code", "plots.coverage_plot(SimpleNamespace(summary=summary))"),
        ("md", "Which coverages fall outside the band? With this few replicates, a row here is a reason for a "
               "longer run, not yet a verdict (the package's own coverage tests use 2,000 replicates; see the "
               "Backends page)."),
        ("code", "band = 2 * np.sqrt(0.95 * 0.05 / summary[\"replicates\"])\n"
                 "summary.loc[(summary[\"coverage\"] - 0.95).abs() > band, [\"design\", \"method\", \"component\", "
                 "\"coverage\", \"coverage_mcse\"]]"),
        ("md", "And the biases, in Monte Carlo standard errors (|z| above 2 would deserve a look):"),
        ("code", "summary.assign(z=summary[\"bias\"] / summary[\"bias_mcse\"]).pivot(index=[\"design\", \"method\"], "
                 "columns=\"component\", values=\"z\").round(1)"),
        ("md", "Only REML fits the table with lost calls (`anova` refuses incomplete data unless told to drop "
               "incomplete cells). The Bayesian backend (`method=\"bayes\"`) fits the same model with a "
               "posterior; it takes seconds per fit, so it is left out of this quick study."),
    ],
    "04_planning_a_cyclicjudge_run": [
        ("md", "# Planning a CyclicJudge run\n\nFrom components (estimated on a pilot, here HANNA's GPT stories) "
               "to a design: how many scenarios, generations and judge calls, which strategy, and the schedule "
               "of who judges what."),
        ("code", SETUP + "\n\nscores = cj.datasets.load(\"hanna\", composite=True)\nfit = cj.estimate(scores)\n"
                 "fit.estimates(model=\"GPT\")"),
        ("md", "## The strategies against the budget (paper Fig. 1)\n\nWith m = 1 in the pilot the generation "
               "variance is not identifiable; the curves draw it at 0 (a lower bound) and say so."),
        ("code", "plots.strategy_curves(fit, model=\"GPT\")"),
        ("md", "## The optimiser\n\n480 judge calls: the best design of each strategy, with SE intervals from the "
               "component intervals and the probability that each is best."),
        ("code", "allocation = cj.optimise(fit, budget=480, model=\"GPT\")\nprint(allocation)"),
        ("code", "plots.allocation_frontier(allocation)"),
        ("md", "With prices per judge the optimiser also considers Neyman/Cochran judge frequencies:"),
        ("code", "judges = sorted(fit.judge_offsets[\"judge\"].unique())\nprices = dict(zip(judges, [1.0, 5.0, 1.0, "
                 "0.5, 1.0]))\npriced = cj.optimise(fit, budget=480, model=\"GPT\", judge_costs=prices)\n"
                 "priced.strategies"),
        ("md", "## The schedule\n\nOne rotation of the judges across a seeded shuffle of the scenarios; the "
               "audit checks the balance, and the realised variance accounts for the exact assignment."),
        ("code", "schedule = cj.cyclic_schedule(range(96), judges, generations=1, seed=0)\nschedule.head()"),
        ("code", "audit = cj.schedule_audit(schedule)\naudit.per_judge"),
        ("code", "cj.realised_variance(schedule, fit, model=\"GPT\")"),
        ("md", "For a target precision instead of a budget: `cj.scenarios_for_target_se(...)` and "
               "`cj.optimise(fit, target_se=0.05, model=\"GPT\")`; see the docs page *Planning a budget*."),
    ],
}


def build(name: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.cells = [nbformat.v4.new_markdown_cell(src) if kind == "md" else nbformat.v4.new_code_cell(src)
                for kind, src in NOTEBOOKS[name]]
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute()
    path = OUT / f"{name}.ipynb"
    nbformat.write(nb, path)
    return path


if __name__ == "__main__":
    for name in sys.argv[1:] or list(NOTEBOOKS):
        print(f"wrote {build(name)}")
