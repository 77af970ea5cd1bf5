"""Build ``environments/economy/econgym/data/scf2022.npz``: the households EconGym's
society starts from (rows of the 2022 Survey of Consumer Finances, as EconGym samples
them, and their survey weights).

EconGym (commit d81cd5d) reads ``agents/data/advanced_scfp2022_1110.csv``, drops rows
with a missing or infinite value, and draws households with replacement with
probability proportional to ``WGT``; each starts with assets ``ASSET``, education
``EDUC`` (its initial productivity), income ``INCOME``, age ``AGE``, labour-force
status ``LF`` (hours ``LF x h_max``) and risky share ``FIN / ASSET``. This keeps
those columns (float32) and nothing else.

Regenerate (the CSV from EconGym's repository at that commit):

    git --git-dir=PATH/TO/EconGym/.git show d81cd5de66db2e00e40eb5fb5dd243741da5525f:agents/data/advanced_scfp2022_1110.csv > /tmp/scf.csv
    python tests/environments/economy/make_scf_table.py --csv /tmp/scf.csv \
        --out environments/economy/econgym/data/scf2022.npz
"""

from __future__ import annotations

import argparse
import csv
import os
import tempfile

import numpy as np

COLUMNS = ("WGT", "ASSET", "EDUC", "INCOME", "AGE", "LF", "FIN")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    with open(args.csv, newline="") as f:
        rows = list(csv.DictReader(f))
    header = rows[0].keys()
    data = {c: np.array([float(r[c]) if r[c] not in ("", "nan") else np.nan for r in rows]) for c in header}
    keep = np.all([np.isfinite(v) for v in data.values()], axis=0)  # EconGym drops any row with a NaN/inf
    out = {c.lower(): data[c][keep].astype(np.float32) for c in COLUMNS if c != "FIN"}
    out["risky_share"] = (data["FIN"][keep] / (data["ASSET"][keep] + 1e-4)).astype(np.float32)
    out["weight"] = (data["WGT"][keep] / data["WGT"][keep].sum()).astype(np.float64)
    del out["wgt"]
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(args.out)), suffix=".npz")
    os.close(fd)
    np.savez_compressed(tmp, **out)
    os.replace(tmp, args.out)
    print(f"{keep.sum()} of {len(rows)} rows -> {args.out} ({os.path.getsize(args.out) / 1024:.0f} KiB)")


if __name__ == "__main__":
    main()
