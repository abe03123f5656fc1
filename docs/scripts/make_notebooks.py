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
                 "5 judges, m = 1\nprint(scores.provenance[\"dropped_sentinels\"], \"parse-failure scores dropped\")\n"
                 "scores.design.head()"),
        ("md", "`load` drops HANNA's parse-failure sentinels: LLM scores below the 1-5 rubric, where the authors "
               "coded an unparsed answer 0 or -1 and averaged it in (`keep_sentinels=True` keeps them). Five "
               "(story, judge) cells of CTRL and GPT lose all six criteria, so the composite misses 5 judge calls: "
               "the ANOVA below drops those scenarios and says so, REML keeps every call.\n\n"
               "## Variance components\n\nWith one story per prompt (m = 1) the generation component is not "
               "identifiable: the `scenario` row holds scenario + generation, and the `generation` row says so "
               "instead of printing a number."),
        ("code", "fit = cj.estimate(scores, method=\"anova\", incomplete=\"drop\")\n"
                 "fit.components.query(\"model == 'GPT-2'\")"
                 "[[\"component\", \"estimate\", \"lower\", \"upper\", \"ci_method\", \"view\", \"note\"]]"),
        ("md", "`judge_panel` is the paper's sigma2_gamma of this fixed panel, tight; `judge_population` treats the "
               "5 judges as a random draw, with 4 degrees of freedom: wide, honestly. Standard deviations beside "
               "the variances (`cj.tables.wide`), and the same as a booktabs LaTeX table for a paper:"),
        ("code", "cj.tables.wide(fit, stats=(\"estimate\", \"sd\")).round(3)"),
        ("code", "print(cj.tables.as_latex(cj.estimate(scores.subset(models=[\"GPT-2\", \"Human\"]))))"),
        ("md", "## Does the judge matter? F test, single-judge rankings, heatmap"),
        ("code", "cj.judge_f_test(scores, method=\"reml\").head()"),
        ("code", "table = cj.judge_table(scores)\ntable.wide()"),
        ("code", "table.top_model_changes"),
        ("code", "plots.judge_bias_heatmap(scores)"),
        ("md", "ChatGPT scores every source about one point below the panel and Llama-13B well above it. The "
               "forest plot sets the components of two backends side by side (where the ANOVA dropped nothing REML "
               "equals it wherever no estimate is truncated; the intervals differ):"),
        ("code", "reml = cj.estimate(scores, method=\"reml\")\n"
                 "plots.components_forest({\"anova\": fit, \"reml\": reml}, "
                 "components=[\"scenario\", \"residual\", \"judge_panel\"])"),
        ("md", "## Bayesian posterior of one model\n\nA short run (2 chains x 300 draws) for one model; "
               "`judge_population` is wide and prior-sensitive with 5 judges."),
        ("code", "bayes = cj.estimate(scores.subset(models=[\"GPT\"]), method=\"bayes\", draws=300, tune=300, "
                 "chains=2, seed=0)\nplots.posterior(bayes)"),
        ("md", "## Strategies A, B, C (paper Fig. 1, App. F)\n\nHANNA rates every story under 4 judge-prompt variants. "
               "Used as repeated measurements (`eval_prompt=\"as_generation\"`), they give a pool on which the "
               "subsampling experiment runs; the lines are its exact predictions. Subsampling needs a complete "
               "pool, so this one keeps the parse-failure scores (`keep_sentinels=True`)."),
        ("code", "pool = cj.datasets.load(\"hanna\", eval_prompt=\"as_generation\", keep_sentinels=True)\n"
                 "sub = cj.subsample_strategies(pool, model=\"GPT\", criterion=\"Coherence\", reps=1000, seed=0)\n"
                 "plots.strategy_curves(sub)"),
        ("code", "sub[[\"strategy\", \"budget\", \"variance\", \"predicted\", \"z\"]].head(10)"),
        ("md", "## Per criterion\n\nThe same analysis runs per (model, criterion) when the table has a criterion "
               "column."),
        ("code", "per_criterion = cj.estimate(cj.datasets.load(\"hanna\"), method=\"reml\")   # a few calls missing\n"
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
        ("md", "## Which model is better, and how sure?\n\nOne joint fit of all models on the composite score "
               "(`cj.compare_models`): the models share the scenarios and the judges, so every difference is "
               "paired and the scenario effects cancel. `incomplete=\"drop\"` keeps the scenarios that every "
               "judge scored for every model. Rank intervals are simultaneous (Tukey), `p_best` is the probability "
               "of being best."),
        ("code", "composite = scores.composite()\ncomparison = cj.compare_models(composite, method=\"anova\", "
                 "incomplete=\"drop\")\ncomparison.ranks"),
        ("code", "plots.rank_plot(comparison)"),
        ("code", "comparison.differences.head(10)"),
        ("md", "## Does a judge favour its own family?\n\nThree of the judges belong to evaluated families. "
               "`self_preference[l,p]` is how much more judge l scores its own model p, relative to the other "
               "judges, than it scores the other models; the judge x model interaction (`judge_model`) is "
               "tested as a whole."),
        ("code", "families = {\"gpt-4o\": [\"gpt-4o\", \"gpt-4o-mini\"], \"o4-mini\": [\"gpt-4o\", "
                 "\"gpt-4o-mini\"],\n            \"gemini-2.5-flash-preview-04-17\": \"gemini-2.0-flash\",\n"
                 "            \"claude-3-7-sonnet-20250219\": \"claude-3.5-haiku\"}\n"
                 "sp = cj.self_preference(composite, families, fit=comparison.fit)\nsp.contrasts"),
        ("md", "## Judges against the human expert\n\n`humans=True` keeps the `human-expert` ratings as the "
               "reference raters (they never enter the LLM-judge analyses above). `bias[l]` is judge minus human "
               "on the same items, with a cluster-robust interval by scenario."),
        ("code", "with_humans = cj.datasets.load(\"mentalalign\", humans=True)\n"
                 "agreement = cj.judge_agreement(with_humans)\nagreement.table.head(10)"),
        ("md", "Prediction-powered means (PPI++) put each model on the human scale from all judge scores plus the "
               "human labels, here pretending only 100 scenarios were labelled."),
        ("code", "ppi = cj.ppi_means(with_humans.composite(), n_labels=100, seed=0, differences=False)\n"
                 "ppi.means.head(10)"),
        ("md", "## A report to share\n\n`cj.report(scores.composite(), output=\"mentalalign.html\", "
               "method=\"reml\")` (or `cjstats report scores.csv -o mentalalign.html --method reml`) writes "
               "all of the above, with the allocation, as one self-contained HTML file."),
    ],
    "03_choosing_an_estimator": [
        ("md", "# Choosing an estimator: a small simulation study\n\nKnown components (the paper's Table 3, "
               "Qwen), a small design (n = 30 scenarios, m = 2 generations, K = 4 judges), complete or with 10% "
               "of the judge calls lost at random (MCAR). `cj.simulation_study` simulates each replicate once, fits "
               "every method to the same data (so differences between methods are paired) and summarises bias, "
               "RMSE and coverage with Monte Carlo standard errors (Morris, White & Crowther 2019). 60 replicates "
               "keep it fast; the Monte Carlo standard errors say how far to trust each number."),
        ("code", SETUP + "\n\ntruth = cj.Truth.table3([\"Qwen\"])\n"
                 "designs = [cj.Design(n=30, m=2, k=4), cj.Design(n=30, m=2, k=4, misspec={\"mcar\": 0.1})]\n"
                 "study = cj.simulation_study(truth, designs, [\"anova\", \"reml\"], 60, seed=1)\nprint(study)"),
        ("md", "Coverage by design, method and component; the grey band is where a correct 95% interval's "
               "coverage falls with this many replicates. The method of moments refuses incomplete data unless "
               "told to drop incomplete cells, so under MCAR its fits are recorded as failures "
               "(`failure_rate`), never silently skipped."),
        ("code", "plots.coverage_plot(study)"),
        ("code", "study.measures[[\"design\", \"method\", \"component\", \"truth\", \"bias\", \"bias_mcse\", "
                 "\"coverage\", \"coverage_mcse\", \"failure_rate\"]].round(3)"),
        ("md", "Every replicate x method x component is kept in `study.replicates`, so anything else can be "
               "computed from it; `study.as_latex()` gives the summary as a booktabs table. A larger study runs "
               "in parallel (`jobs=2`, or a Dask cluster) and resumes from `checkpoint=\"study.parquet\"`; the "
               "reference study in the docs (*The reference simulation study*) says which estimator and which "
               "interval to trust where."),
        ("code", "study.replicates.head()"),
    ],
    "04_planning_a_cyclicjudge_run": [
        ("md", "# Planning a CyclicJudge run\n\nFrom components (estimated on a pilot, here HANNA's GPT stories) "
               "to a design: how many scenarios, generations and judge calls, which strategy, and the schedule "
               "of who judges what."),
        ("code", SETUP + "\n\nscores = cj.datasets.load(\"hanna\", composite=True)\n"
                 "fit = cj.estimate(scores, method=\"reml\")   # GPT misses 4 calls (parse failures dropped)\n"
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
