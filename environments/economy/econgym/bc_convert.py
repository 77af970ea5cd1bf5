"""Convert EconGym's behaviour-cloned household networks to arrays ``bc.py`` reads.

EconGym (``Miracle1207/EconGym``, commit d81cd5d) ships four PyTorch checkpoints of its
households' behaviour-cloning policy (``agents/behavior_cloning/trained_models``); its
repository carries no licence, so jaxagents does not ship them: this script reads them
from the user's EconGym checkout and writes one ``.npz`` per household type
(``ramsey``, ``OLG``, ``ramsey_risk_invest``, ``OLG_risk_invest``) holding the actor
half of EconGym's ``mlp_net`` (``fc1_a``, ``fc2_a``, ``action_mean`` weights and biases
and ``sigma_log``, float32, under their PyTorch names).

It needs PyTorch and numpy only (not jax, not jaxagents): run it with the Python of
EconGym's own environment, as a file:

    ECONGYM_PYTHON environments/economy/econgym/bc_convert.py --econgym PATH/TO/EconGym --out DIR

then pass ``bc_weights=DIR`` to ``EconGymTask`` (or set ``ECONGYM_BC_WEIGHTS=DIR``).
``--checkpoint FILE --type NAME`` converts a single state-dict file instead.
"""

import argparse
import os
import sys

CHECKPOINTS = {
    "ramsey": "agents/behavior_cloning/trained_models/ramsey_bc_net.pt",
    "OLG": "agents/behavior_cloning/trained_models/OLG_bc_net.pt",
    "ramsey_risk_invest": "agents/behavior_cloning/trained_models/risky_investment/ramsey_risk_invest_bc_net.pt",
    "OLG_risk_invest": "agents/behavior_cloning/trained_models/risky_investment/OLG_risk_invest_bc_net.pt",
}
ACTOR_KEYS = ("fc1_a.weight", "fc1_a.bias", "fc2_a.weight", "fc2_a.bias", "action_mean.weight",
              "action_mean.bias", "sigma_log")


def convert(checkpoint, out):
    """Write the actor arrays of the state dict at ``checkpoint`` to ``out`` (.npz)."""
    import numpy as np
    import torch

    state = torch.load(checkpoint, map_location="cpu", weights_only=True)
    missing = [k for k in ACTOR_KEYS if k not in state]
    if missing:
        raise ValueError(f"{checkpoint}: not an EconGym mlp_net state dict (missing {missing})")
    arrays = {k: state[k].detach().cpu().numpy().astype(np.float32) for k in ACTOR_KEYS}
    tmp = out + ".tmp.npz"
    np.savez(tmp, **arrays)
    os.replace(tmp, out)
    return arrays


def main(argv=None):
    """Command line: convert EconGym's four checkpoints (``--econgym``) or one
    (``--checkpoint`` ``--type``) into ``--out``; returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--econgym", help="EconGym checkout (its agents/behavior_cloning/trained_models)")
    ap.add_argument("--checkpoint", help="one state-dict file instead of --econgym")
    ap.add_argument("--type", choices=sorted(CHECKPOINTS), help="household type of --checkpoint")
    ap.add_argument("--out", required=True, help="output directory (created; files inside are replaced)")
    a = ap.parse_args(argv)
    if bool(a.econgym) == bool(a.checkpoint) or (a.checkpoint and not a.type):
        ap.error("give --econgym, or --checkpoint with --type")
    jobs = {a.type: a.checkpoint} if a.checkpoint else {
        name: os.path.join(a.econgym, rel) for name, rel in CHECKPOINTS.items()}
    absent = [p for p in jobs.values() if not os.path.isfile(p)]
    if absent:
        ap.error(f"no checkpoint at {absent}")
    os.makedirs(a.out, exist_ok=True)
    for name, path in jobs.items():
        arrays = convert(path, os.path.join(a.out, f"{name}.npz"))
        print(f"{name}: {path} -> {os.path.join(a.out, name + '.npz')} "
              f"(inputs {arrays['fc1_a.weight'].shape[1]}, hidden {arrays['fc1_a.weight'].shape[0]}, "
              f"actions {arrays['action_mean.weight'].shape[0]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
