"""EconGym's behaviour-cloned households (``bc.py``): the JAX network against EconGym's
``mlp_net`` on recorded household states, the converter (``bc_convert.py``) on small
networks of EconGym's architecture, and the households acting by the network in a task.

``data/econgym_bc.npz`` comes from ``econgym_reference/record_bc.py`` (EconGym's venv
with PyTorch): four small seeded networks (one per household type) saved by
``torch.save``, converted by ``bc_convert.convert``, and EconGym's forward pass on
households' states of the recorded EconGym trajectories. EconGym's own trained
networks are not shipped; ``experiments/econgym_bc_parity.py`` checks them against the
same recording for whoever converts them from an EconGym checkout.
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxagents_environments.economy.econgym import bc
from jaxagents_environments.economy.econgym.tasks import EconGymTask

DATA = os.path.join(os.path.dirname(__file__), "data", "econgym_bc.npz")
TYPES = ("ramsey", "OLG", "ramsey_risk_invest", "OLG_risk_invest")


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """A directory of the recorded small networks, as ``bc_convert.py`` writes them."""
    folder = tmp_path_factory.mktemp("bc")
    rec = np.load(DATA)
    for name in TYPES:
        np.savez(folder / f"{name}.npz", **{k: rec[f"small/{name}/{k}"] for k in bc.ACTOR_KEYS})
    return str(folder), rec


@pytest.mark.parametrize("households", ["ramsey", "olg", "ramsey_risk_invest", "olg_risk_invest"])
def test_network_matches_econgyms_on_recorded_states(small, households):
    folder, rec = small
    name = bc.TYPE_FILES[households]
    w = bc.weights_for(households, folder)
    x = jnp.asarray(rec["inputs/OLG" if households.startswith("olg") else "inputs/ramsey"])
    mu, sigma = bc.actor(w, x)
    want = rec[f"small/{name}/mu"]
    assert np.std(want, axis=0).min() > 0.05, "the recorded outputs must vary with the state"
    np.testing.assert_allclose(np.asarray(mu), want, rtol=0, atol=1e-5)
    np.testing.assert_allclose(np.asarray(sigma), rec[f"small/{name}/sigma"], rtol=1e-6)


@pytest.mark.slow  # compiles a task's step
def test_bc_households_act_in_a_task(small):
    folder, _ = small
    env = EconGymTask("delayed_retirement", num_households=12, horizon=3, bc_weights=folder)
    assert env.households_policy == "bc" and "household" not in env.roles
    p = env.default_params()
    state, ts = env.reset(jax.random.key(0), p)
    act = env.policies["household"](jax.random.key(1), state.env_state, state.last, p)
    w = bc.weights_for("olg", folder)
    mu, sigma = bc.actor(w, bc.inputs(state.env_state, olg=True))
    # EconGym passes the network's outputs unscaled: savings share mu_0 (clipped to
    # [-0.5, 1]) and labour share mu_1 (clipped to [0, 1]); ours map onto the same
    # values, up to the noise N(0, (0.01 sigma)^2)
    lo, hi = np.asarray(p.env_params.save_range) if hasattr(p, "env_params") else np.asarray(p.save_range)
    save = lo + (np.asarray(act[:, 0]) + 1) / 2 * (hi - lo)
    work = (np.asarray(act[:, 1]) + 1) / 2
    noise = 6 * 0.01 * np.asarray(sigma) + 1e-6
    assert act.shape == mu.shape
    assert np.all(np.abs(save - np.clip(np.asarray(mu[:, 0]), lo, hi)) <= noise[0])
    assert np.all(np.abs(work - np.clip(np.asarray(mu[:, 1]), 0, 1)) <= noise[1])
    real = jnp.asarray([[0.3, 0.5], [-2.0, 2.0]])
    u = bc.to_actions(real, p, 1, jax.random.key(0))
    np.testing.assert_allclose(np.asarray(u), [[2 * (0.3 - lo) / (hi - lo) - 1, 0.0], [-1.0, 1.0]], atol=1e-6)
    state, ts = env.step(jax.random.key(2), state, {"pension": jnp.zeros((1, 2))}, p)
    assert np.isfinite(float(ts.info["gdp"])) and not bool(ts.info["illegal_action"])
    rule = EconGymTask("delayed_retirement", num_households=12, horizon=3, households="rule", bc_weights=folder)
    assert rule.households_policy == "rule"


def test_bad_bc_settings_are_refused(small, tmp_path, monkeypatch):
    folder, rec = small
    monkeypatch.delenv(bc.ENV_VAR, raising=False)
    with pytest.raises(ValueError, match="households='bc' needs bc_weights="):
        EconGymTask("delayed_retirement", num_households=8, households="bc")
    with pytest.raises(ValueError, match="households must be 'bc' or 'rule'"):
        EconGymTask("delayed_retirement", num_households=8, households="nn")
    with pytest.raises(ValueError, match="no converted network at"):
        EconGymTask("delayed_retirement", num_households=8, bc_weights=str(tmp_path))
    np.savez(tmp_path / "OLG.npz", **{k: rec[f"small/ramsey/{k}"] for k in bc.ACTOR_KEYS})
    with pytest.raises(ValueError, match="the network reads 2 inputs"):
        EconGymTask("delayed_retirement", num_households=8, bc_weights=str(tmp_path))
    # without weights anywhere, a task whose households are EconGym's networks uses its rule households
    assert EconGymTask("delayed_retirement", num_households=8).households_policy == "rule"
