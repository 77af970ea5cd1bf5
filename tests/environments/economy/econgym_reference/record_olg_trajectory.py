"""Record a whole overlapping-generations trajectory of EconGym's own step loop.

The households of an OLG economy age every year (EconGym's ``OLG_step`` adds one year to
every age at every step, the first included, and skips only deaths and births at
``t == 0``); this recording lets a replay compare ages, retirement, pensions and wealth
year after year. Same machinery, key scheme and venv as ``record_econgym.py`` (imported
from it); only the scenario differs:

* ``olg_trajectory``: 40 OLG households, a pension government, a perfect market and the
  non-profit bank for ``STEPS`` years; the retirement age is drawn in whole years every
  year (EconGym's annuity table has integer keys), the consumption tax is 0, and the
  estate tax takes the whole estate (rate 1, exemption 0), so deaths happen with
  EconGym's draws and leave no bequest to settle (the estate rules are compared in
  ``test_econgym_parity.py`` block by block). EconGym's birth rate 0.011 gives
  ``int(40 * 0.011) = 0`` births.
* ``olg_births``: the same economy with births (``int(N * 0.05)`` a year, newborns
  appended at age 24) and a 20% estate tax above 100,000 dollars: EconGym's estates,
  its carried and ``N``-fold estate tax, and newborns inheriting.

Usage (from the jaxagents repo root, venv from ``setup_venv.sh``):
    VENV/bin/python tests/environments/economy/econgym_reference/record_olg_trajectory.py \
        --econgym VENV/econgym --out tests/environments/economy/data/econgym_olg_trajectory.npz
"""
import argparse
import json
import os
import sys

import numpy as np

STEPS = 12
SEED = 109


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--econgym", required=True, help="EconGym source tree (pinned commit)")
    parser.add_argument("--out", required=True, help="output .npz")
    args = parser.parse_args()
    out = os.path.abspath(args.out)
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    import record_econgym as R  # noqa: E402  (the shared recorder)

    R.N_STEPS = STEPS

    class WholeYears(R.ActionDrawer):
        def government(self, env, t):
            out_ = super().government(env, t)
            out_["pension"][0] = float(np.round(out_["pension"][0]))
            return out_

    R.ActionDrawer = WholeYears
    specs = {
        "olg_trajectory": dict(seed=SEED, overlay=R._overlay(
            env_core={"consumption_tax_rate": 0.0, "estate_tax_rate": 1.0, "estate_tax_exemption": 0.0},
            gov={"type": "pension"}, hh={"type": "OLG", "households_n": R.HOUSEHOLDS_N},
            market={"type": "perfect"}, bank={"type": "non_profit"})),
        "olg_births": dict(seed=SEED + 1, overlay=R._overlay(
            env_core={"consumption_tax_rate": 0.0, "estate_tax_rate": 0.2, "estate_tax_exemption": 1e5},
            gov={"type": "pension"}, hh={"type": "OLG", "households_n": R.HOUSEHOLDS_N},
            hh_sections={"OLG": {"birth_rate": 0.05, "initial_working_age": 24}},
            market={"type": "perfect"}, bank={"type": "non_profit"})),
    }

    econgym = os.path.abspath(args.econgym)
    os.chdir(econgym)
    sys.path.insert(0, econgym)
    rec = R.Recorder()
    infos = {}
    for name, spec in specs.items():
        info = infos[name] = R.record_scenario(name, spec, rec)
        print(f"{name} steps={info['steps_recorded']} terminated_early={info['terminated_early']} "
              f"N_final={info['households_n_final']}" + (f" error={info['error']}" if info["error"] else ""))
    meta = {
        "econgym_commit": R.ECONGYM_COMMIT, "n_steps": STEPS, "households_n": R.HOUSEHOLDS_N,
        "scenarios": list(specs), "scenario_info": infos,
        "regenerate": [
            "ECONGYM_GIT=<EconGym git dir, optional> tests/environments/economy/econgym_reference/"
            "setup_venv.sh /tmp/econgym_venv",
            "/tmp/econgym_venv/bin/python tests/environments/economy/econgym_reference/"
            "record_olg_trajectory.py --econgym /tmp/econgym_venv/econgym "
            "--out tests/environments/economy/data/econgym_olg_trajectory.npz",
        ],
    }
    arrays = dict(rec.data)
    arrays["meta"] = np.array(json.dumps(meta))
    np.savez_compressed(out, **arrays)
    print(f"wrote {out}: {len(arrays)} arrays, {os.path.getsize(out) / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
