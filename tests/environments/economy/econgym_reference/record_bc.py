"""Record EconGym's behaviour-cloning network (``agents/rl/models.py:mlp_net``) on recorded
household states, as parity data for ``bc.py``.

Runs in the EconGym venv of ``setup_venv.sh`` with PyTorch added (``pip install
torch``). Writes ``data/econgym_bc.npz``:

* ``small/{type}/{key}``: a small network of EconGym's architecture per household type
  (``mlp_net(D, A, hidden_dim=16)``, seeded, weights redrawn so that no output
  saturates), saved with ``torch.save`` and converted back by ``bc_convert.py`` (the
  converter under test); ``small/{type}/mu``, ``small/{type}/sigma``: EconGym's
  ``mlp_net.forward`` on ``inputs/{ramsey|OLG}``.
* ``inputs/ramsey`` ``[N, 2]`` (education, wealth) and ``inputs/OLG`` ``[N, 3]`` (and
  age): households' states of the recorded EconGym trajectories
  (``econgym_reference.npz`` scenario ``ramsey_tax``, ``econgym_olg_trajectory.npz``),
  the rows EconGym's network reads.
* ``real/{type}/mu``, ``real/{type}/sigma`` (only with ``--econgym``): EconGym's own
  trained networks (its ``trained_models/*.pt``) on the same inputs. Their weights are
  not written (EconGym's repository has no licence).

Usage (from the jaxagents repo root):
    VENV/bin/python tests/environments/economy/econgym_reference/record_bc.py \\
        --econgym VENV/econgym --out tests/environments/economy/data/econgym_bc.npz
"""
import argparse
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data")
TYPES = {"ramsey": (2, 2), "OLG": (3, 2), "ramsey_risk_invest": (2, 3), "OLG_risk_invest": (3, 3)}


def recorded_inputs():
    ref = np.load(os.path.join(DATA, "econgym_reference.npz"))
    traj = np.load(os.path.join(DATA, "econgym_olg_trajectory.npz"))
    ramsey = [np.stack([ref[f"ramsey_tax/{t}/post/households.e"].ravel(),
                        ref[f"ramsey_tax/{t}/post/households.at_next"].ravel()], 1) for t in range(8)]
    olg = [np.stack([traj[f"olg_trajectory/{t}/post/households.{k}"].ravel() for k in ("e", "at_next", "age")], 1)
           for t in range(12)]
    return {"ramsey": np.concatenate(ramsey).astype(np.float32), "OLG": np.concatenate(olg).astype(np.float32)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--econgym", required=True, help="EconGym source tree (pinned commit)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    out = os.path.abspath(a.out)
    econgym = os.path.abspath(a.econgym)
    sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "..", "environments", "economy", "econgym"))
    import bc_convert  # noqa: E402  (the converter under test; torch + numpy only)
    import torch

    inputs = recorded_inputs()
    os.chdir(econgym)
    sys.path.insert(0, econgym)
    from agents.rl.models import mlp_net

    arrays = {f"inputs/{k}": v for k, v in inputs.items()}
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        for name, (d, n_act) in TYPES.items():
            x = torch.tensor(inputs["OLG" if d == 3 else "ramsey"])
            net = mlp_net(state_dim=d, num_actions=n_act, hidden_dim=16)
            with torch.no_grad():  # raw dollars saturate EconGym's first layer: small input weights
                net.fc1_a.weight.normal_(0.0, 1e-6)
                net.fc1_a.weight[:, 0].normal_(0.0, 0.2)
                if d == 3:
                    net.fc1_a.weight[:, 2].normal_(0.0, 0.05)
                net.action_mean.weight.normal_(0.0, 0.5)
                net.sigma_log.normal_(0.0, 0.5)
            path = os.path.join(tmp, f"{name}.pt")
            torch.save(net.state_dict(), path)
            converted = bc_convert.convert(path, os.path.join(tmp, f"{name}.npz"))
            arrays.update({f"small/{name}/{k}": v for k, v in converted.items()})
            with torch.no_grad():
                _, (mu, sigma) = net(x)
            arrays[f"small/{name}/mu"], arrays[f"small/{name}/sigma"] = mu.numpy(), sigma[0].numpy()
            real = os.path.join(econgym, bc_convert.CHECKPOINTS[name])
            net = mlp_net(state_dim=d, num_actions=n_act)
            net.load_state_dict(torch.load(real, weights_only=True))
            with torch.no_grad():
                _, (mu, sigma) = net(x)
            arrays[f"real/{name}/mu"], arrays[f"real/{name}/sigma"] = mu.numpy(), sigma[0].numpy()
    np.savez_compressed(out, **arrays)
    print(f"wrote {out}: {len(arrays)} arrays ({os.path.getsize(out) / 1e3:.0f} kB); torch {torch.__version__}")


if __name__ == "__main__":
    main()
