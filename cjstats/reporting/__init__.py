"""A self-contained HTML report of a score table: data, design, components, judges, strategies, allocation.

:func:`report` is three steps. :func:`cjstats.reporting.plan.compute_inputs` computes every result the report shows,
once, with the library's public functions (the fits, the judge tests, the strategies, the allocation, the
comparisons). Each registered section (:mod:`cjstats.reporting.registry`, one module per section in
:mod:`cjstats.reporting.sections`) renders those results to items: figures of :mod:`cjstats.plots`, tables through
:func:`format_table`, sentences. The Jinja2 template ``templates/report.html.j2`` shipped with the package lays the
items out in one HTML file: figures are embedded as base64 PNG, the style is inline, and nothing is loaded from
elsewhere, so the file opens offline and can be mailed. Nothing in this package fits or tests anything outside
``plan.py``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from cjstats.exceptions import CjstatsError
from cjstats.reporting.items import (
    figure as _figure, format_table, heading as _heading, se_text as _se_text, text as _text,  # noqa: F401
)
from cjstats.reporting.writing import atomic_write, default_mode  # noqa: F401  (re-exported)
from cjstats.reporting.registry import SECTIONS, Section, ordered_sections, register_section

__all__ = ["report", "write_html", "format_table", "SECTION_TITLES", "Section", "SECTIONS", "register_section"]


class _Titles(Mapping[str, str]):
    """Section name -> title of every registered section, in report order (a live view of the registry)."""

    def __getitem__(self, key: str) -> str:
        return SECTIONS[key].title

    def __iter__(self) -> Iterator[str]:
        return iter([s.name for s in ordered_sections()])

    def __len__(self) -> int:
        return len(SECTIONS)

    def __repr__(self) -> str:
        return repr(dict(self))


#: The report's sections and their titles, in order (a section without results to show is left out).
SECTION_TITLES: Mapping[str, str] = _Titles()


#: The file types report writes, by extension.
OUTPUT_SUFFIXES = (".html", ".htm", ".pdf")


def check_output(output: str | os.PathLike[str], force: bool) -> Path:
    path = Path(output)
    if path.suffix.lower() not in OUTPUT_SUFFIXES:
        got = f"the extension '{path.suffix}'" if path.suffix else "no extension"
        raise CjstatsError(f"The output `{path}` has {got}, which report cannot write; name it "
                           f"`{path.with_suffix('.html').name}` (HTML) or `{path.with_suffix('.pdf').name}` (PDF).")
    if not path.parent.is_dir():
        raise CjstatsError(f"The folder `{path.parent}` of the output `{path}` does not exist; create it first or "
                           "choose another path.")
    if path.is_dir():
        raise CjstatsError(f"The output `{path}` is a folder; give a file name such as `{path / 'report.html'}`.")
    if path.exists() and not force:
        raise CjstatsError(f"The output `{path}` already exists; pass force=True (--force) to overwrite it.")
    return path


def write_html(text: str, output: str | os.PathLike[str], *, force: bool = False) -> Path:
    """Write ``text`` to ``output`` atomically: a temporary file in the same folder, then a rename.

    Nothing is half-written: a missing folder or an existing file (without ``force``) is refused before
    anything is written, and a failure while writing leaves no file behind.
    """
    path = check_output(output, force)
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def render_sections(inputs: Any, *, progress: bool | None = False) -> list[dict[str, Any]]:
    """Every registered section that has something to show, in order: ``{"id", "title", "items"}`` (counted on
    stderr with ``progress``, :mod:`cjstats._progress`)."""
    from cjstats._progress import progress_iter

    out = []
    for section in progress_iter(list(ordered_sections()), "report: sections", progress=progress):
        items = section.render(inputs)
        if items:
            out.append({"id": section.name, "title": section.title, "items": list(items)})
    return out


def report(scores: Any, *, output: str | os.PathLike[str] | None = None, method: str | Sequence[str] = "auto",
           budget: float | None = None, model: str | None = None, criterion: str | None = None,
           comparisons: Any = "auto", human_agreement: Any = "auto", ci_level: float | None = None,
           seed: int | None = 0, title: str | None = None, force: bool = False,
           subsample_reps: int = 1000, browser: str | None = None,
           backend_options: Mapping[str, Mapping[str, Any]] | None = None, diagnosis: Any = None,
           drift: Any = None, sequences: Any = None, covariates: Any = None, gstudy: Any = None,
           progress: bool | None = None) -> str:
    """Render a self-contained HTML report of a score table (and write it when ``output`` is given).

    Sections (:data:`SECTION_TITLES`, in order): what the file holds, when a diagnosis is given (the data first);
    design summary; the components of every backend asked for, with intervals and standard deviations beside
    variances, and a forest plot (one row of panels per scale when an ordinal fit's latent-scale variances sit
    beside score-scale ones); the judge tables (paper Table 1), judge offsets and the
    judge-bias heatmap (paper Fig. 2); the judge F tests (App. G); strategy curves (paper Fig. 1, exact
    Eqs. 3-5, with the App. F subsampling experiment when the table has several generations per scenario);
    the allocation recommendation (:func:`cjstats.optimise`) and its frontier; for a Bayesian fit, posterior
    densities; and, when given, model comparisons and human agreement (their tidy frames, rendered generically).

    Parameters
    ----------
    scores : Scores
        A validated score table (:func:`cjstats.read_scores`, :func:`cjstats.datasets.load`).
    output : path, optional
        Write the HTML here (atomically; the folder must exist; an existing file needs ``force=True``). A path
        ending in ``.pdf`` writes the report as PDF instead, printed by headless Chromium (A4 landscape;
        :mod:`cjstats.reporting.pdf`); the HTML is still returned. Other extensions than ``.html``, ``.htm`` and
        ``.pdf`` are refused before anything is fitted.
    browser : str, optional
        For a PDF: the Chromium or Chrome executable (default: the first of ``chromium``, ``chromium-browser``,
        ``google-chrome`` on PATH).
    method : str or sequence of str
        Backends to fit (``anova``, ``reml``, ``bayes``); the first drives the judge test, strategy and
        allocation sections. ``"auto"`` (default) stands for ``anova`` when every group is complete and balanced
        and ``reml`` otherwise (:func:`cjstats.estimators.auto_method`); the design section says which and why.
    budget : float, optional
        Judge-call budget for the allocation (default: the calls in the data for the chosen model).
    model, criterion : str, optional
        The group drawn in the strategy, allocation and posterior sections (default: the group with the highest
        panel mean ``mu`` of the first backend, the leader, ties to the first in sorted order; with ``model`` alone,
        that model's criterion with the highest mean; both sections say which group they draw, why, and how to
        choose another). The strategy curves give the SE of
        the mean on the table's scenarios, the allocation the SE including scenario sampling (sigma2_alpha/n);
        the allocation callout gives both for the recommended design.
    comparisons, human_agreement : result object, DataFrame, mapping of them, "auto" or None
        Rendered as tables (every DataFrame attribute); a comparison with ``.ranks`` also gets a rank plot.
        ``"auto"`` (default): with two or more models, :func:`cjstats.compare_models` on the table (on the
        composite of the criteria when there are several; as ``cjstats compare --method auto``: the joint ordinal
        model for verdicts and short rating scales where it can run, shown first as pass rates or expected ratings
        with their differences and intervals and then on its latent scale, else anova when complete and balanced,
        else reml); with
        reference (human) raters in the table, :func:`cjstats.judge_agreement`. A comparison the data cannot
        support is reported in its section with the reason. ``None`` leaves the section out.
    ci_level : float, optional
        Interval level (default 0.95).
    seed : int, optional
        Seed of the backends and the subsampling experiment.
    subsample_reps : int
        Repetitions per (strategy, budget) of the subsampling experiment.
    backend_options : mapping, optional
        Options of a backend's fit, by method, e.g. ``{"bayes": {"draws": 500, "tune": 500}}``.
    gstudy : GStudy, mapping of labelled ones, or None
        How reliable the ranking is (:func:`cjstats.g_study`): its figure and table of E rho^2 and Phi per design.
    diagnosis, drift, sequences, covariates : result, mapping of labelled results, or None
        The audit sections (:mod:`cjstats.reporting.sections`), each with its figure, table and one paragraph
        saying what it means: a :class:`~cjstats.results.diagnosis.Diagnosis` (``diagnosis="auto"``:
        :func:`cjstats.diagnose` of ``scores``), a :class:`~cjstats.estimators.drift.DriftResult`
        (:func:`cjstats.judge_drift`), and :class:`~cjstats.results.sequential.SequenceResult` /
        :class:`~cjstats.results.sequential.SequentialPlan` (:func:`cjstats.confidence_sequence`,
        :func:`cjstats.sequential_plan`), and a covariate fit (``cj.fit_joint(scores, covariates=["length"])``:
        each judge's slope and the model means at the mean covariate). None (default) leaves a section out.
    progress : bool, optional
        Say on stderr when the fitting starts and count the sections rendered; None (default): only when stderr is a
        terminal.

    Returns
    -------
    str
        The HTML text.

    Examples
    --------
    >>> import cjstats as cj
    >>> html = cj.report(cj.datasets.load("hanna", composite=True))      # doctest: +SKIP
    >>> cj.report(scores, output="report.html", method=["anova", "reml"])  # doctest: +SKIP
    """
    from cjstats._validate import require_packages

    require_packages("report", "jinja2", "matplotlib", extra="report")
    import jinja2

    from cjstats import __version__
    from cjstats._validate import resolve_ci_level
    from cjstats.io.scores import Scores
    from cjstats.reporting.plan import check_audit, compute_inputs, resolve_methods
    from cjstats.reporting.sections.generic import check_generic

    if not isinstance(scores, Scores):
        raise CjstatsError(f"report takes a Scores table (cj.read_scores(path) or cj.datasets.load(name)); got "
                           f"{type(scores).__name__}.")
    methods, auto_why = resolve_methods(method, scores)
    level = resolve_ci_level(ci_level)
    check_audit(diagnosis=diagnosis, drift=drift, sequences=sequences, covariates=covariates,
                gstudy=gstudy)  # before fitting
    for what, given in (("comparisons", comparisons), ("human_agreement", human_agreement)):
        if given is not None and not (isinstance(given, str) and given == "auto"):
            check_generic(given, what)
    if output is not None:
        check_output(output, force)                 # refuse before the (slow) fitting starts
        if _is_pdf(output):
            from cjstats.reporting.pdf import require_browser

            require_browser(browser)                 # no Chromium: say so before fitting
    from cjstats._progress import Progress

    with Progress(None, "report: fitting " + ", ".join(methods), progress=progress) as bar:
        inputs = compute_inputs(scores, methods=methods, auto_why=auto_why, level=level, seed=seed, model=model,
                                criterion=criterion, budget=budget, comparisons=comparisons,
                                human_agreement=human_agreement, subsample_reps=subsample_reps,
                                backend_options=backend_options, diagnosis=diagnosis, drift=drift,
                                sequences=sequences, covariates=covariates, gstudy=gstudy)
        bar.update()
    sections = render_sections(inputs, progress=progress)

    env = jinja2.Environment(loader=jinja2.PackageLoader("cjstats.reporting", "templates"),
                             autoescape=jinja2.select_autoescape(["html", "j2"]), trim_blocks=True,
                             lstrip_blocks=True, undefined=jinja2.StrictUndefined)
    env.filters["breakable"] = breakable
    source = scores.provenance.get("source", "score table") if isinstance(scores.provenance, Mapping) else "scores"
    html = env.get_template("report.html.j2").render(
        title=title or "cjstats report", version=__version__, sections=sections, level=f"{100 * level:g}%",
        created=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), source=str(source))
    if output is not None and _is_pdf(output):
        from cjstats.reporting.pdf import write_pdf

        write_pdf(html, check_output(output, force), browser=browser)
    elif output is not None:
        write_html(html, output, force=force)
    return html


#: A ``_``, ``/`` or ``.`` between a letter or digit and a letter: where :func:`breakable` lets a cell wrap.
_JOINS = re.compile(r"(?<=[A-Za-z0-9])([_/.])(?=[A-Za-z])")


def breakable(value: Any) -> Any:
    """A table cell's text, HTML-escaped, with a break opportunity (``<wbr>``) after every ``_``, ``/`` and ``.``
    between letters: identifiers such as ``judge_population`` or ``org/model-name`` then wrap at those joins, and
    the stylesheet never breaks a word elsewhere (``overflow-wrap: break-word`` breaks only a word wider than the
    page, which no table holds)."""
    from markupsafe import Markup, escape

    return Markup(_JOINS.sub(r"\1<wbr>", str(escape(value))))


def _is_pdf(output: str | os.PathLike[str]) -> bool:
    return Path(output).suffix.lower() == ".pdf"


from cjstats.reporting import sections as _sections  # noqa: E402,F401  (registers the sections)
