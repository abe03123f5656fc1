"""Record the numbers tests/estimators/test_covariates_pinned.py pins (run from the repository root:
python tests/data/covariates_pinned/record.py). Recorded at commit 19f38cb, before covariates were fitted from the
statistics layer through the joint registry; the refactor kept them to 1e-12."""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "estimators"))
from test_covariates_pinned import CASES, numbers  # noqa: E402

out = {name: numbers(name) for name in CASES}
(Path(__file__).parent / "pinned.json").write_text(json.dumps(out, indent=1))
