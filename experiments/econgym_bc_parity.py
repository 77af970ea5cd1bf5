"""EconGym's own behaviour-cloned households in JAX against EconGym's PyTorch networks.

Reads the networks ``environments/economy/econgym/bc_convert.py`` converted from an
EconGym checkout (``--weights``; jaxagents does not ship them) and compares our
``bc.actor`` with EconGym's ``mlp_net`` outputs recorded on households' states of the
recorded EconGym trajectories (``tests/environments/economy/data/econgym_bc.npz``,
``real/*``; ``econgym_reference/record_bc.py`` recorded them). Prints the largest
absolute difference of the action means and of the noise scales per household type.

    ECONGYM_PYTHON environments/economy/econgym/bc_convert.py --econgym EconGym --out bc_weights
    python experiments/econgym_bc_parity.py --weights bc_weights
"""

from __future__ import annotations

import argparse
import os
import sys

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "environments", "economy", "data",
                    "econgym_bc.npz")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--weights", required=True, help="directory of converted networks (bc_convert.py --out)")
    ap.add_argument("--tol", type=float, default=1e-5, help="largest allowed absolute difference (default 1e-5)")
    a = ap.parse_args(argv)
    if not os.path.isdir(a.weights):
        ap.error(f"--weights: no directory {a.weights}")

    import jax.numpy as jnp
    import numpy as np

    from jaxagents_environments.economy.econgym import bc

    rec = np.load(DATA)
    worst = 0.0
    print("| households | states | max abs diff, mean | max abs diff, scale | varying action means |")
    print("|---|---|---|---|---|")
    for households, name in bc.TYPE_FILES.items():
        w = bc.weights_for(households, a.weights)
        x = jnp.asarray(rec["inputs/OLG" if households.startswith("olg") else "inputs/ramsey"])
        mu, sigma = bc.actor(w, x)
        d_mu = float(np.max(np.abs(np.asarray(mu) - rec[f"real/{name}/mu"])))
        d_sigma = float(np.max(np.abs(np.asarray(sigma) - rec[f"real/{name}/sigma"])))
        varying = int(np.sum(np.std(rec[f"real/{name}/mu"], axis=0) > 1e-6))
        worst = max(worst, d_mu, d_sigma)
        print(f"| {name} | {x.shape[0]} | {d_mu:.2e} | {d_sigma:.2e} | {varying} of {mu.shape[1]} |")
    print(f"largest difference {worst:.2e} (tolerance {a.tol:g})")
    return 0 if worst <= a.tol else 1


if __name__ == "__main__":
    sys.exit(main())
