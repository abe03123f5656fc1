"""save/load do not trust the directory (issue 31).

save writes into a sibling temporary folder and swaps it in, replacing only an earlier save that holds nothing but
the files its manifest lists: a user's file in the folder is refused and kept, and a failure while writing leaves
the old save as it was. load looks the result type up in ``RESULT_TYPES`` (a module named in result.json is never
imported), and every damaged or mismatched directory is one CjstatsError naming the file and what is wrong.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import cjstats as cj
from cjstats.exceptions import CjstatsError
from cjstats.results import persist
from sim_helpers import table3_frame as _sim

ROOT = Path(cj.__file__).resolve().parent


@pytest.fixture(scope="module")
def scores():
    return cj.read_scores(pd.concat([_sim(10, 2, 4, 1, "Qwen"), _sim(10, 2, 4, 2, "GPT")], ignore_index=True))


@pytest.fixture(scope="module")
def fits(scores):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cj.CjstatsWarning)
        anova = cj.estimate(scores, "anova")
        return {"anova": anova, "reml": cj.estimate(scores, "reml"), "joint": cj.fit_joint(scores, "anova")}


def _one_sentence_naming(exc: pytest.ExceptionInfo, file: Path) -> str:
    msg = str(exc.value)
    assert type(exc.value) is CjstatsError, type(exc.value)
    assert str(file) in msg, f"{msg!r} does not name {file}"
    assert "\n" not in msg and msg.endswith("."), msg
    return msg


def _meta(path: Path) -> dict:
    return json.loads((path / "result.json").read_text())


def _put_meta(path: Path, meta: dict) -> None:
    (path / "result.json").write_text(json.dumps(meta))


def _siblings(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir())


# ------------------------------------------------------------------------------------------------------ save
def test_save_over_an_earlier_save_refuses_and_keeps_a_users_file(fits, tmp_path):
    out = fits["anova"].save(tmp_path / "fit")
    (out / "notes.txt").write_text("mine")
    (out / "covariance.0_GPT" / "mine.csv").write_text("also mine")
    with pytest.raises(CjstatsError) as exc:
        fits["reml"].save(out)
    msg = _one_sentence_naming(exc, out)
    assert "covariance.0_GPT/mine.csv" in msg and "another directory" in msg
    assert (out / "notes.txt").read_text() == "mine"
    assert (out / "covariance.0_GPT" / "mine.csv").read_text() == "also mine"
    back = cj.VarianceComponents.load(out)            # the earlier save is untouched
    assert back.method == "anova"
    assert _siblings(tmp_path) == ["fit"]             # no temporary folder left beside it


def test_save_over_an_earlier_save_alone_replaces_it_and_round_trips(fits, tmp_path):
    target = tmp_path / "fit"
    fits["joint"].save(target)                        # another type first: none of its files may survive
    fits["anova"].save(target)
    meta = _meta(target)
    on_disk = sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file())
    assert sorted(meta["files"]) == on_disk           # the manifest lists exactly what the save wrote
    assert not (target / "cell_means.npy").exists()
    back = cj.VarianceComponents.load(target)
    pd.testing.assert_frame_equal(back.components, fits["anova"].components, check_exact=True)
    assert _siblings(tmp_path) == ["fit"]


def test_save_into_an_empty_folder_works_and_a_foreign_folder_is_refused(fits, tmp_path):
    (tmp_path / "empty").mkdir()
    fits["anova"].save(tmp_path / "empty")
    assert cj.VarianceComponents.load(tmp_path / "empty").method == "anova"
    (tmp_path / "other" / "sub").mkdir(parents=True)
    (tmp_path / "other" / "sub" / "data.csv").write_text("x")
    with pytest.raises(CjstatsError, match="exists and is not a saved result"):
        fits["anova"].save(tmp_path / "other")
    assert (tmp_path / "other" / "sub" / "data.csv").read_text() == "x"


def test_save_refuses_to_replace_a_save_without_a_manifest(fits, tmp_path):
    """A result.json without its file list (a version-1 save, or another program's) cannot tell save which
    files are its own, so nothing is replaced."""
    out = fits["anova"].save(tmp_path / "fit")
    meta = _meta(out)
    del meta["files"]
    _put_meta(out, meta)
    before = sorted(p.name for p in out.rglob("*"))
    with pytest.raises(CjstatsError, match="cannot tell its files from yours"):
        fits["reml"].save(out)
    assert sorted(p.name for p in out.rglob("*")) == before


def test_a_failure_while_writing_leaves_the_old_save_and_no_temporary_folder(fits, tmp_path, monkeypatch):
    out = fits["anova"].save(tmp_path / "fit")
    calls = []

    def broken(path, *args, **kwargs):
        calls.append(path)
        raise OSError("disk full")

    monkeypatch.setattr(np, "save", broken)
    with pytest.raises(OSError, match="disk full"):
        fits["reml"].save(out)
    monkeypatch.undo()
    assert calls
    assert cj.VarianceComponents.load(out).method == "anova"
    assert _siblings(tmp_path) == ["fit"]


def test_save_refuses_to_move_the_working_directory(fits, tmp_path, monkeypatch):
    """Swapping the folder in would move the folder the process runs in, so '.' (even empty) is refused."""
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    for target in (".", "./", ".."):
        with pytest.raises(CjstatsError, match="is the working directory"):
            fits["anova"].save(target)
    assert fits["anova"].save("fit") == Path("fit") and _siblings(Path.cwd()) == ["fit"]


# ------------------------------------------------------------------------------------------------- hostile
EVIL = """
from pathlib import Path
Path({marker!r}).write_text("imported")

class Boom:
    def __init__(self, **kwargs):
        Path({marker!r}).write_text("constructed")
"""


@pytest.mark.parametrize("where", ["top", "nested"])
@pytest.mark.parametrize("type_name", ["evil.Boom", "cjstats.evil.Boom", "Boom"])
def test_a_planted_module_named_in_result_json_is_never_imported(fits, tmp_path, monkeypatch, where, type_name):
    lib = tmp_path / "lib"
    lib.mkdir()
    marker = tmp_path / "marker.txt"
    (lib / "evil.py").write_text(EVIL.format(marker=str(marker)))
    monkeypatch.syspath_prepend(str(lib))
    monkeypatch.delitem(sys.modules, "evil", raising=False)
    out = fits["anova"].save(tmp_path / "fit")
    record = out if where == "top" else out / "covariance.0_GPT"
    meta = _meta(record)
    meta["type"] = type_name
    _put_meta(record, meta)
    for load in (persist.load, cj.VarianceComponents.load):
        with pytest.raises(CjstatsError) as exc:
            load(out)
        msg = _one_sentence_naming(exc, record / "result.json")
        assert "not a cjstats result type" in msg
    assert not marker.exists(), marker.read_text()
    assert "evil" not in sys.modules


@pytest.mark.parametrize("name", ["../outside.parquet", "/tmp/outside.parquet", "sub/../../outside.parquet",
                                  "link.parquet"])
def test_a_file_name_leading_out_of_the_directory_is_refused(fits, tmp_path, name):
    outside = tmp_path / "outside.parquet"
    fits["anova"].components.to_parquet(outside)      # a readable table, so only the check can refuse it
    out = fits["anova"].save(tmp_path / "fit")
    if name == "link.parquet":
        (out / "link.parquet").symlink_to(outside)
    elif name.startswith("/tmp/"):
        name = str(outside)
    meta = _meta(out)
    meta["fields"]["components"] = {"__table__": name}
    _put_meta(out, meta)
    with pytest.raises(CjstatsError) as exc:
        cj.VarianceComponents.load(out)
    assert "not a file inside the saved directory" in _one_sentence_naming(exc, out / "result.json")


# ------------------------------------------------------------------------------------------------- damaged
def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _edit(path: Path, change) -> None:
    meta = _meta(path)
    change(meta)
    _put_meta(path, meta)


# each case: (damage the save at `out`, the file the message must name (relative to `out`), words it must hold)
DAMAGE = {
    "json_cut_short": (lambda out: _truncate(out / "result.json"), "result.json", "cut short or not JSON"),
    "not_json": (lambda out: (out / "result.json").write_text("fit = {'method': 'anova'}"), "result.json",
                 "cut short or not JSON"),
    "json_not_an_object": (lambda out: (out / "result.json").write_text("[1, 2]"), "result.json", "format marker"),
    "wrong_format_marker": (lambda out: _edit(out, lambda m: m.update(format="mlflow-model")), "result.json",
                            "'mlflow-model'"),
    "newer_format_version": (lambda out: _edit(out, lambda m: m.update(format_version=99)), "result.json",
                             "upgrade cjstats"),
    "bad_format_version": (lambda out: _edit(out, lambda m: m.update(format_version="two")), "result.json",
                           "format_version"),
    "missing_parquet": (lambda out: (out / "components.parquet").unlink(), "components.parquet", "is missing"),
    "damaged_parquet": (lambda out: _truncate(out / "components.parquet"), "components.parquet", "damaged"),
    "missing_npy": (lambda out: (out / "covariance.0_GPT" / "cov.npy").unlink(), "covariance.0_GPT/cov.npy",
                    "is missing"),
    "damaged_npy": (lambda out: _truncate(out / "covariance.0_GPT" / "cov.npy"), "covariance.0_GPT/cov.npy",
                    "damaged"),
    "pickled_npy": (lambda out: np.save(out / "covariance.0_GPT" / "cov.npy", np.array([{"a": 1}], dtype=object),
                                        allow_pickle=True), "covariance.0_GPT/cov.npy", "damaged"),
    "missing_nc": (lambda out: (out / "posterior.0_GPT" / "posterior.nc").unlink(), "posterior.0_GPT/posterior.nc",
                   "is missing"),
    "damaged_nc": (lambda out: _truncate(out / "posterior.0_GPT" / "posterior.nc"), "posterior.0_GPT/posterior.nc",
                   "damaged"),
    "nested_json_cut_short": (lambda out: _truncate(out / "covariance.0_GPT" / "result.json"),
                              "covariance.0_GPT/result.json", "cut short"),
    "missing_nested_record": (lambda out: [p.unlink() for p in (out / "covariance.0_GPT").iterdir()],
                              "covariance.0_GPT/result.json", "is missing"),
    "unknown_type": (lambda out: _edit(out, lambda m: m.update(type="VarianceComponentz")), "result.json",
                     "'VarianceComponentz'"),
    "unknown_field": (lambda out: _edit(out, lambda m: m["fields"].update(colour="red")), "result.json",
                      "'colour'"),
    "missing_required_field": (lambda out: _edit(out, lambda m: m["fields"].pop("method")), "result.json",
                               "'method'"),
    "fields_not_a_mapping": (lambda out: _edit(out, lambda m: m.update(fields=[1])), "result.json", "'fields'"),
    "malformed_tag": (lambda out: _edit(out, lambda m: m["fields"].update(design={"__pairs__": 3})), "result.json",
                      "'design'"),
    "unknown_tag": (lambda out: _edit(out, lambda m: m["fields"].update(design={"__pickle__": "x"})),
                    "result.json", "cannot read"),
}


@pytest.fixture(scope="module")
def with_posterior(fits):
    """The ANOVA fit with a small hand-made posterior, so the netCDF files are exercised without PyMC."""
    import xarray as xr

    tree = xr.DataTree.from_dict({"posterior": xr.Dataset({"mu": (("chain", "draw"), np.arange(8.0).reshape(2, 4))},
                                                          attrs={"sampler": "test"})})
    return dataclasses.replace(fits["anova"], posterior={"GPT": tree})


@pytest.mark.parametrize("case", list(DAMAGE))
def test_every_damaged_directory_is_one_sentence_naming_the_file(with_posterior, tmp_path, case):
    damage, file, words = DAMAGE[case]
    out = with_posterior.save(tmp_path / "fit")
    damage(out)
    with pytest.raises(CjstatsError) as exc:
        cj.VarianceComponents.load(out)
    msg = _one_sentence_naming(exc, out / file)
    assert words in msg, msg


def test_the_posterior_round_trips(with_posterior, tmp_path):
    back = cj.VarianceComponents.load(with_posterior.save(tmp_path / "fit"))
    a, b = with_posterior.posterior["GPT"], back.posterior["GPT"]
    np.testing.assert_array_equal(a["posterior"]["mu"].values, b["posterior"]["mu"].values)
    assert b["posterior"].attrs == {"sampler": "test"}


def test_loading_the_wrong_type_is_one_sentence_before_any_data_is_read(fits, tmp_path):
    out = fits["joint"].save(tmp_path / "joint")
    (out / "components.parquet").unlink()         # the type is refused from result.json alone
    with pytest.raises(CjstatsError) as exc:
        cj.VarianceComponents.load(out)
    msg = _one_sentence_naming(exc, out)
    assert "holds a JointFit, not a VarianceComponents" in msg and "JointFit.load(path)" in msg


def test_a_version_1_save_still_loads(fits, tmp_path):
    """Version 1 stored the module path as the type and no manifest; only its class name is looked up."""
    out = fits["anova"].save(tmp_path / "fit")
    for meta_file in out.rglob("result.json"):
        meta = json.loads(meta_file.read_text())
        cls = persist.result_type(meta["type"])
        meta.update(format_version=1, type=f"{cls.__module__}.{cls.__qualname__}")
        meta.pop("files", None)
        meta_file.write_text(json.dumps(meta))
    back = cj.VarianceComponents.load(out)
    pd.testing.assert_frame_equal(back.components, fits["anova"].components, check_exact=True)


# ------------------------------------------------------------------------------------------------ registry
def _dataclasses_of_the_package() -> dict[str, tuple[str, set[str], set[str]]]:
    """Every dataclass defined in cjstats: name -> (module, base-class names, names used in its field types)."""
    out = {}
    for path in ROOT.rglob("*.py"):
        module = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ClassDef):
                continue
            decorators = {ast.unparse(d).split("(")[0] for d in node.decorator_list}
            if not decorators & {"dataclass", "dataclasses.dataclass"}:
                continue
            bases = {ast.unparse(b).rpartition(".")[2] for b in node.bases}
            used = {w for stmt in node.body if isinstance(stmt, ast.AnnAssign)
                    for w in re.findall(r"[A-Za-z_]\w*", ast.unparse(stmt.annotation))}
            out[node.name] = (module, bases, used)
    return out


def _saveable(classes: dict[str, tuple[str, set[str], set[str]]]) -> dict[str, str]:
    """The dataclasses that subclass Result (directly or through another one), and every dataclass their
    fields hold (a fit's covariances, the joint fit inside a comparison), to a fixed point."""
    found = {n for n, (_, bases, _) in classes.items() if "Result" in bases}
    while True:
        more = {n for n, (_, bases, _) in classes.items() if bases & found}
        more |= {w for n in found for w in classes[n][2] if w in classes}
        if more <= found:
            return {n: classes[n][0] for n in sorted(found)}
        found |= more


def test_every_saveable_result_class_is_registered():
    saveable = _saveable(_dataclasses_of_the_package())
    assert {"VarianceComponents", "JointFit", "ModelComparison", "ParameterCovariance", "JointCovariance"} <= set(
        saveable)
    assert saveable == persist.RESULT_TYPES, "RESULT_TYPES must list every saveable result class, by name"
    for name, module in persist.RESULT_TYPES.items():
        cls = persist.result_type(name)
        assert cls.__name__ == name and cls.__module__ == module


def test_the_registry_check_sees_a_new_result_class():
    classes = _dataclasses_of_the_package()
    classes["Planted"] = ("cjstats.results.planted", {"Result"}, {"PlantedRecord"})
    classes["PlantedRecord"] = ("cjstats.results.planted", set(), set())
    assert {"Planted", "PlantedRecord"} <= set(_saveable(classes))


def test_save_refuses_an_unregistered_record(fits, tmp_path):
    @dataclasses.dataclass(frozen=True)
    class Unregistered:
        x: int = 1

    with pytest.raises(CjstatsError, match="not a saveable cjstats result type"):
        persist.save(Unregistered(), tmp_path / "u")
    bad = dataclasses.replace(fits["anova"], diagnostics={"extra": Unregistered()})
    with pytest.raises(CjstatsError, match="not a saveable cjstats result type"):
        bad.save(tmp_path / "v")
    assert _siblings(tmp_path) == []


# ------------------------------------------------------------------------------------------------ Scores
def test_scores_save_keeps_a_users_file_and_load_names_a_damaged_table(scores, tmp_path):
    out = scores.save(tmp_path / "scores")
    assert json.loads((out / "scores.json").read_text())["files"] == ["scores.parquet", "scores.json"]
    scores.save(out)                                   # an earlier saved table alone is replaced
    (out / "notes.txt").write_text("mine")
    with pytest.raises(CjstatsError, match="'notes.txt', which save did not write"):
        scores.save(out)
    assert (out / "notes.txt").read_text() == "mine"
    (out / "notes.txt").unlink()
    _truncate(out / "scores.parquet")
    with pytest.raises(CjstatsError) as exc:
        cj.Scores.load(out)
    assert "damaged" in _one_sentence_naming(exc, out / "scores.parquet")
    _truncate(out / "scores.json")
    with pytest.raises(CjstatsError) as exc:
        cj.Scores.load(out)
    assert "cut short or not JSON" in _one_sentence_naming(exc, out / "scores.json")
    assert _siblings(tmp_path) == ["scores"]
