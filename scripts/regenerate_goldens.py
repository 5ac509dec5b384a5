"""Write the golden files in tests/data again from the current code, or check that the current code still writes
them byte for byte.

    python scripts/regenerate_goldens.py            # rewrite every golden, print what it wrote
    python scripts/regenerate_goldens.py --check    # write nothing; exit 1 if a golden would change, and say how

The goldens record seeded toy runs (tests/goldens.py lists the cases, the metrics each file keeps and what each
protects); tests/test_train_policies.py compares the current loop with them. Each run is seeded (seed 3, its own
generators), so on one machine the script writes the same bytes every time; another CPU's kernels may move the
last digits of a float32 metric, which the test's tolerance allows for.

Regenerating is a deliberate act, never a way to make a failing test pass: a golden says the numbers have not
moved, and rewriting it says they were meant to. Do it only for a change that is meant to change the training
curves (a fix to the algorithm, a new default), in a commit of its own whose message says which change moved them,
why that is right, and how far they moved (``--check`` prints the largest relative change of each metric).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests/goldens.py, run from any directory

import torch  # noqa: E402

from tests import goldens  # noqa: E402


def _differences(old: dict, new: dict) -> list[str]:
    """Per case: cases added or dropped, metrics added or dropped, and each changed metric's largest relative change."""
    lines = []
    for case in sorted(old.keys() | new.keys()):
        if case not in new or case not in old:
            lines.append(f"  {case}: {'dropped' if case not in new else 'added'}")
            continue
        for kind in ("records", "evals"):
            was, now = old[case][kind], new[case][kind]
            if len(was) != len(now):
                lines.append(f"  {case} {kind}: {len(was)} entries, now {len(now)}")
                continue
            keys_was, keys_now = set(was[0]) if was else set(), set(now[0]) if now else set()
            for key in sorted(keys_was ^ keys_now):
                lines.append(f"  {case} {kind}: {key} {'dropped' if key in keys_was else 'added'}")
            for key in sorted(keys_was & keys_now):
                pairs = [(w[key], n[key]) for w, n in zip(was, now) if w[key] != n[key]]
                if pairs:
                    size = max(abs(n - w) for w, n in pairs)
                    rel = max((abs(n - w) / abs(w) for w, n in pairs if w != 0), default=None)
                    change = f"max |change| {size:.1e}" + (f", max relative {rel:.1e}" if rel is not None else "")
                    zeros = sum(w == 0 for w, _ in pairs)
                    was_zero = f" ({zeros} of them recorded as 0)" if zeros else ""
                    lines.append(f"  {case} {kind}: {key} differs at {len(pairs)}/{len(was)} steps{was_zero}, {change}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a golden would change")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # as the test suite runs (tests/conftest.py)
    changed = 0
    for golden in goldens.GOLDENS:
        text = goldens.render(golden, {case: goldens.toy_history(case) for case in golden.cases})
        old = golden.path.read_text() if golden.path.is_file() else None
        where = golden.path.relative_to(ROOT)
        if old == text:
            print(f"{where}: unchanged ({len(golden.cases)} runs: {', '.join(golden.cases)})")
            continue
        changed += 1
        if args.check:
            print(f"{where}: would change")
            print("\n".join(_differences(json.loads(old), json.loads(text)) if old else ["  (no such file)"]))
        else:
            golden.path.write_text(text)
            print(f"{where}: written ({len(golden.cases)} runs: {', '.join(golden.cases)}; {len(text):,} bytes)")
    if args.check and changed:
        print(f"{changed} of {len(goldens.GOLDENS)} golden files would change: see this script's docstring first")
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
