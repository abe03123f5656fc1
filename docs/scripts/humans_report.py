"""Numbers of ``docs/humans.md``: judges against humans on HANNA and MentalAlign.

Run:  .venv/bin/python docs/scripts/humans_report.py --write docs/humans.md
(replaces the text between ``<!-- humans_report:start -->`` and ``<!-- humans_report:end -->``; without
``--write`` it prints the section). ``tests/test_humans_docs.py`` runs :func:`report` on a slice.

Sections per dataset:

1. which judge is closest to the humans per criterion (``judge_agreement``: Pearson r, bias with its
   scenario-clustered interval), and the human ceiling where stories have several human raters (HANNA);
2. how biased the panel is per criterion (panel bias = panel mean - human mean, with its interval);
3. how many human labels make the model ranking trustworthy: labels on n scenarios (drawn with several
   seeds), PPI++ with the panel as prediction (``ppi_means``); against the ranking by ALL human labels, the
   Kendall tau of the PPI++ ranking and of the human-only ranking of the same labels, and the share of model
   pairs whose 95% interval excludes 0 with the sign of the all-label ranking; the judge-only ranking (no
   human label at all) is the first row.
"""

from __future__ import annotations

import argparse
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

import cjstats as cj

START, END = "<!-- humans_report:start -->", "<!-- humans_report:end -->"


def _md(df: pd.DataFrame, digits: int = 2) -> str:
    df = df.copy()
    for c in df.columns:
        if pd.api.types.is_float_dtype(df[c]):
            df[c] = df[c].map(lambda v: "" if pd.isna(v) else f"{v:.{digits}f}")
    def cell(v: object) -> str:     # a bare "|" (a header such as "smallest |bias|") would end the cell
        return str(v).replace("|", "\\|")

    head = "| " + " | ".join(map(cell, df.columns)) + " |"
    rule = "|" + "|".join("---" for _ in df.columns) + "|"
    body = ["| " + " | ".join(map(cell, r)) + " |" for r in df.itertuples(index=False)]
    return "\n".join([head, rule, *body])


def agreement_tables(scores: cj.Scores) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(closest judge per criterion, panel bias per criterion, human ceiling)."""
    agr = cj.judge_agreement(scores)
    t = agr.table
    judges = t[t["judge"] != "panel"]
    rows = []
    for crit, part in judges.groupby("criterion", sort=True):
        best = part.loc[part["pearson"].idxmax()]
        least = part.loc[part["bias"].abs().idxmin()]
        rows.append({"criterion": crit, "highest r": best["judge"], "r": best["pearson"],
                     "r with one human": best["r_single"], "smallest |bias|": least["judge"],
                     "bias": least["bias"], "bias 95% CI": f"[{least['bias_lower']:.2f}, {least['bias_upper']:.2f}]"})
    closest = pd.DataFrame(rows)
    p = t[t["judge"] == "panel"]
    panel = pd.DataFrame({"criterion": p["criterion"], "panel bias": p["bias"],
                          "95% CI": [f"[{lo:.2f}, {hi:.2f}]" for lo, hi in zip(p["bias_lower"], p["bias_upper"])],
                          "slope": p["slope"], "r": p["pearson"], "alpha": p["alpha"]})
    ceiling = agr.humans.rename(columns={"human_alpha": "human alpha", "human_r": "human-human r"})
    return closest, panel, ceiling


def ranking_table(scores: cj.Scores, *, sizes: list[int], seeds: list[int]) -> pd.DataFrame:
    """Ranking agreement with the all-label human ranking, by number of labelled scenarios (see module doc)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cj.CjstatsWarning)
        full = cj.ppi_means(scores, differences=False)
    key = ["criterion"] if scores.has_criterion else []
    ref_sign = {crit: part.set_index("model")["human_only"]
                for crit, part in (full.means.groupby("criterion") if key else [(None, full.means)])}

    def taus(means: pd.DataFrame, col: str) -> float:
        out = []
        for crit, part in (means.groupby("criterion") if key else [(None, means)]):
            truth = ref_sign[crit].reindex(part["model"]).to_numpy()
            out.append(stats.kendalltau(part[col].to_numpy(), truth).statistic)
        return float(np.nanmean(out))

    def resolved(diffs: pd.DataFrame, lo: str, hi: str) -> float:
        hits = []
        for r in diffs.itertuples(index=False):
            r = r._asdict()
            truth = ref_sign[r.get("criterion")]
            sign = np.sign(truth[r["model_a"]] - truth[r["model_b"]])
            hits.append((r[lo] > 0 and sign > 0) or (r[hi] < 0 and sign < 0))
        return float(np.mean(hits))

    rows = [{"human labels (scenarios)": 0, "PPI++ tau": np.nan, "human-only tau": np.nan,
             "judge-only tau": taus(full.means, "judge_only"), "PPI++ pairs resolved": np.nan,
             "human-only pairs resolved": np.nan, "n_effective / n": np.nan}]
    for n in sizes:
        acc = []
        for seed in seeds:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", cj.CjstatsWarning)
                res = cj.ppi_means(scores, n_labels=n, seed=seed)
            m = res.means
            acc.append({"PPI++ tau": taus(m, "estimate"), "human-only tau": taus(m, "human_only"),
                        "PPI++ pairs resolved": resolved(res.differences, "lower", "upper"),
                        "human-only pairs resolved": resolved(res.differences, "human_only_lower",
                                                              "human_only_upper"),
                        "n_effective / n": float(np.nanmedian(m["n_effective"] / m["n_labeled"]))})
        rows.append({"human labels (scenarios)": n, **pd.DataFrame(acc).mean().to_dict(),
                     "judge-only tau": np.nan})
    cols = ["human labels (scenarios)", "judge-only tau", "PPI++ tau", "human-only tau", "PPI++ pairs resolved",
            "human-only pairs resolved", "n_effective / n"]
    return pd.DataFrame(rows)[cols]


def report(datasets: dict[str, cj.Scores], *, sizes: list[int], seeds: list[int]) -> str:
    """The markdown section of ``docs/humans.md`` for the given tables."""
    parts = [f"_Generated by `docs/scripts/humans_report.py` (label subsamples: seeds {seeds}); "
             f"cjstats {cj.__version__}._"]
    for name, scores in datasets.items():
        closest, panel, ceiling = agreement_tables(scores)
        parts += [f"### {name}: the judge closest to the humans", _md(closest),
                  f"### {name}: panel bias per criterion (panel mean - human mean)", _md(panel)]
        if len(ceiling):
            parts += [f"### {name}: human ceiling (two human raters of the same story)",
                      _md(ceiling[["criterion", "n_raters_max", "human alpha", "human-human r"]])]
        parts += [f"### {name}: human labels and the model ranking (mean over criteria and seeds)",
                  _md(ranking_table(scores, sizes=[s for s in sizes if s <= _n_labeled(scores)], seeds=seeds))]
    return "\n\n".join(parts) + "\n"


def _n_labeled(scores: cj.Scores) -> int:
    return int(scores.reference_frame()["scenario"].nunique())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--write", default=None, help="Markdown file whose marked section is replaced.")
    ap.add_argument("--seeds", type=int, default=5)
    args = ap.parse_args()
    data = {"HANNA": cj.datasets.load("hanna", humans=True),
            "MentalAlign": cj.datasets.load("mentalalign", humans=True)}
    text = report(data, sizes=[10, 25, 50, 96, 200, 400], seeds=list(range(args.seeds)))
    if args.write is None:
        print(text)
        return
    path = Path(args.write)
    doc = path.read_text()
    new = re.sub(re.escape(START) + r".*?" + re.escape(END), lambda _: f"{START}\n{text}{END}", doc, flags=re.S)
    path.write_text(new)


if __name__ == "__main__":
    main()
