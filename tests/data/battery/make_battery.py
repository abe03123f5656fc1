"""Regenerate the regression battery's fixtures: every frame of tests/battery.py's fits, as parquet, plus index.json.

Run from the repository root, on code whose numbers are the reference:

    python tests/data/battery/make_battery.py            # every tier
    python tests/data/battery/make_battery.py --check    # compare with the stored fixtures instead of writing

The battery itself (tables, fits, decision-layer grid) is defined once, in tests/battery.py, which
tests/test_numbers_unchanged.py also imports. Regenerate only on purpose (a deliberate change of numbers or
labels), and say so in the commit.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))      # tests/, for `import battery`

import battery  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the stored fixtures; write nothing")
    parser.add_argument("--tier", action="append", choices=battery.TIERS,
                        help="only these tiers (with --check; writing always runs every tier)")
    args = parser.parse_args()
    tiers = tuple(args.tier) if args.check and args.tier else battery.TIERS
    t0 = time.perf_counter()
    frames = battery.build_battery(tiers)
    secs = time.perf_counter() - t0
    if args.check:
        stored = {(e["fit"], e["frame"]): e for e in battery.read_index()["frames"] if e["tier"] in tiers}
        problems = [f"{k}: not stored" for k in frames if k not in stored]
        problems += [f"{k}: stored, not produced" for k in stored if k not in frames]
        for key, entry in stored.items():
            if key in frames:
                problems += battery.compare_frames(battery.read_frame(entry), frames[key],
                                                   where=f"{key[0]} / {key[1]}")
        print("\n".join(problems) or f"all {len(frames)} frames unchanged ({secs:.1f} s)")
        return 1 if problems else 0
    index = battery.write_battery(frames)
    size = sum(f.stat().st_size for f in battery.DATA_DIR.glob("*.parquet"))
    print(f"wrote {len(index['frames'])} frames ({size / 1e6:.2f} MB) to {battery.DATA_DIR} in {secs:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
