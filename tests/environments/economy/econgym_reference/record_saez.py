"""Record EconGym's Saez government (``agents/saez.py``) for fixed income streams, as
parity test data for ``environments/economy/econgym/saez.py``.

Runs in the venv made by ``setup_venv.sh``. EconGym's ``SaezGovernment`` is imported
from ``--econgym`` and called unchanged, year by year, the way ``Government.compute_tax``
calls it: ``saez_step()``, ``update_saez_buffer(income)``, ``tax_due(income)``.

    VENV/bin/python tests/environments/economy/econgym_reference/record_saez.py \
        --econgym VENV/econgym --out tests/environments/economy/data/econgym_saez.npz

Scenarios (incomes from their own numpy Generator; EconGym's random first rates come
from ``np.random`` seeded per scenario and are recorded):
    narrow   40 households, lognormal incomes (median 60k): one bracket, so the
             buffered rates never vary and the elasticity stays at 0.5
    spread   40 households, incomes across every bracket, a few negative and a few
             above the top cutoff: the elasticity fit runs
    masked   60 slots of which a random ~70% earn each year (EconGym gets those, in
             slot order): the buffer's "last 500 samples" over a changing population
    default  like ``spread`` with EconGym's period of 100 years

Keys: ``{sc}/alive`` ``bool[T, C]``, ``{sc}/income`` ``f[T, C]`` (0 where not alive),
``{sc}/rates`` ``f[T, B]`` in force in year t, ``{sc}/tax`` ``f[T, C]`` (0 where not
alive), ``{sc}/elasticity`` and ``{sc}/buffer_len`` ``f[T]`` after year t,
``{sc}/random`` ``bool[T]`` (rates drawn at random in year t), ``{sc}/period``,
``{sc}/cutoffs``; ``meta`` (JSON).
"""
import argparse
import json
import os
import sys

import numpy as np

ECONGYM_COMMIT = "d81cd5de66db2e00e40eb5fb5dd243741da5525f"
SCENARIOS = {
    "narrow": dict(seed=201, slots=40, steps=110, period=25, kind="narrow", alive=1.0),
    "spread": dict(seed=202, slots=40, steps=110, period=25, kind="spread", alive=1.0),
    "masked": dict(seed=203, slots=60, steps=110, period=25, kind="spread", alive=0.7),
    "default": dict(seed=204, slots=40, steps=210, period=100, kind="spread", alive=1.0),
}


def incomes(rng, kind, n):
    if kind == "narrow":
        return rng.lognormal(np.log(6e4), 0.6, n)
    z = rng.lognormal(np.log(3e5), 1.6, n)
    z = np.where(rng.uniform(size=n) < 0.05, -rng.uniform(0, 2e4, n), z)
    return z


def record(name, spec, arrays):
    from agents.saez import SaezGovernment

    np.random.seed(spec["seed"])
    rng = np.random.default_rng(spec["seed"])
    gov = SaezGovernment(period=spec["period"])
    t_n, c = spec["steps"], spec["slots"]
    out = {k: [] for k in ("alive", "income", "rates", "tax", "elasticity", "buffer_len", "random")}
    for t in range(t_n):
        alive = rng.uniform(size=c) < spec["alive"]
        alive[0] = True
        z = np.where(alive, incomes(rng, spec["kind"], c), 0.0)
        before = len(gov.saez_buffer)
        gov.saez_step()
        random = (t % spec["period"] == 0) and before < gov._buffer_size
        gov.update_saez_buffer(z[alive][:, None])
        tax = np.zeros(c)
        tax[alive] = gov.tax_due(z[alive][:, None])
        for k, v in (("alive", alive), ("income", z), ("rates", gov.curr_marginal_rates.copy()), ("tax", tax),
                     ("elasticity", gov.elas_t), ("buffer_len", len(gov.saez_buffer)), ("random", random)):
            out[k].append(v)
    for k, v in out.items():
        arrays[f"{name}/{k}"] = np.asarray(v)
    arrays[f"{name}/period"] = np.asarray(spec["period"])
    arrays[f"{name}/cutoffs"] = np.asarray(gov.bracket_cutoffs, np.float64)
    print(f"{name:8s} years {t_n} rates at the end {np.round(gov.curr_marginal_rates, 4)} "
          f"elasticity {gov.elas_t:.4f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--econgym", required=True, help="EconGym source tree (pinned commit)")
    ap.add_argument("--out", required=True, help="output .npz")
    a = ap.parse_args()
    out = os.path.abspath(a.out)
    sys.path.insert(0, os.path.abspath(a.econgym))
    arrays = {}
    for name, spec in SCENARIOS.items():
        record(name, spec, arrays)
    meta = dict(econgym_commit=ECONGYM_COMMIT, scenarios=SCENARIOS, numpy=np.__version__,
                python=sys.version.split()[0],
                regenerate="VENV/bin/python tests/environments/economy/econgym_reference/record_saez.py "
                           "--econgym VENV/econgym --out tests/environments/economy/data/econgym_saez.npz")
    arrays["meta"] = np.asarray(json.dumps(meta))
    tmp = out + ".tmp.npz"
    np.savez_compressed(tmp, **arrays)
    os.replace(tmp, out)
    print(f"wrote {out} ({os.path.getsize(out) / 1e3:.0f} kB)")


if __name__ == "__main__":
    main()
