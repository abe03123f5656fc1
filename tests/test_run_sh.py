"""scripts/run.sh: installs only when needed and resolves paths from the caller's folder.

The venv is a stand-in (bin/python forwards to this interpreter but only logs ``pip install``; bin/cjstats runs
this checkout's CLI), so the test neither touches the network nor the real environment.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


@pytest.fixture
def fake_venv(tmp_path):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    log = tmp_path / "pip.log"
    py = venv / "bin" / "python"
    py.write_text(f"""#!/usr/bin/env bash
if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then echo "$@" >> "{log}"; exit 0; fi
exec "{sys.executable}" "$@"
""")
    cj = venv / "bin" / "cjstats"
    cj.write_text(f"""#!/usr/bin/env bash
PYTHONPATH="{ROOT}" exec "{sys.executable}" -c "from cjstats.cli import main; main()" "$@"
""")
    py.chmod(0o755)
    cj.chmod(0o755)
    return venv, log


def _run(args, cwd, venv):
    env = {**os.environ, "CJSTATS_VENV": str(venv)}
    return subprocess.run(["bash", str(ROOT / "scripts" / "run.sh"), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_relative_path_from_another_folder_and_install_only_once(tmp_path, fake_venv, small_balanced_frame):
    venv, log = fake_venv
    work = tmp_path / "elsewhere" / "sub"
    work.mkdir(parents=True)
    small_balanced_frame.to_csv(work / "scores.csv", index=False)
    r = _run(["decompose", "scores.csv", "--format", "csv"], work, venv)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("model,component,estimate")
    assert log.read_text().count("install") == 1 and f"-e {ROOT}[all]" in log.read_text()
    r = _run(["decompose", "scores.csv", "--format", "csv"], work, venv)
    assert r.returncode == 0, r.stderr
    assert log.read_text().count("install") == 1  # the stamp matched: no second install


def test_a_missing_relative_file_is_named_as_typed(tmp_path, fake_venv):
    venv, _ = fake_venv
    r = _run(["decompose", "nope.csv"], tmp_path, venv)
    assert r.returncode == 1 and r.stderr == "The score file `nope.csv` does not exist.\n"


def test_license_is_mit_and_citation_cites_the_paper():
    yaml = pytest.importorskip("yaml")

    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    ref = cff["preferred-citation"]
    assert ref["title"] == "CyclicJudge: Mitigating Judge Bias Efficiently in LLM-based Evaluation"
    assert [a["family-names"] for a in ref["authors"]] == ["Zhu", "Tieleman", "Bukhtiyarov", "Chen"]
    assert cff["license"] == "MIT"


def test_demo_then_test_then_demo_installs_once_per_extras_set(tmp_path, fake_venv):
    """Switching between `demo` (extra all) and `test` (extra test) installs the union once, then never again."""
    venv, log = fake_venv
    (tmp_path / "test_ok.py").write_text("def test_ok():\n    assert True\n")
    steps = [["demo", "--help"], ["test", str(tmp_path / "test_ok.py"), "-q", "-p", "no:cacheprovider"],
             ["demo", "--help"], ["test", str(tmp_path / "test_ok.py"), "-q", "-p", "no:cacheprovider"]]
    installs = []
    for args in steps:
        r = _run(args, tmp_path, venv)
        assert r.returncode == 0, r.stdout + r.stderr
        installs.append(log.read_text().count("install") if log.exists() else 0)
    assert installs == [1, 2, 2, 2]          # [all], then [all,test]; the second demo and test install nothing
    lines = log.read_text().splitlines()
    assert lines[0].endswith(f"-e {ROOT}[all]") and lines[1].endswith(f"-e {ROOT}[all,test]")
    stamp = (venv / ".cjstats-install-stamp").read_text().splitlines()
    assert stamp[1] == "all test"


def test_a_changed_pyproject_installs_again(tmp_path, fake_venv):
    venv, log = fake_venv
    r = _run(["demo", "--help"], tmp_path, venv)
    assert r.returncode == 0, r.stderr
    stamp = venv / ".cjstats-install-stamp"
    stamp.write_text("0" * 64 + f" {ROOT}\nall test\n")   # as if pyproject.toml had another hash
    r = _run(["demo", "--help"], tmp_path, venv)
    assert r.returncode == 0, r.stderr
    assert log.read_text().count("install") == 2 and log.read_text().splitlines()[1].endswith(f"-e {ROOT}[all]")
