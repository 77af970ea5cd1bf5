"""Run by tests/population/test_data_axis.py in a subprocess with 4 fake CPU devices
(XLA_FLAGS must be set before JAX starts): members whose environments are split over
the mesh's ``data`` axis against the same members on one device (a data axis of 1).
Prints one JSON line: per case, the largest absolute and relative differences of the
parameters, the rest of the train state and the metrics. Argument: ``ppo`` (IPPO and
self-play, the default) or ``pqn`` (PQN-VDN feed-forward on Overcooked, and
independent recurrent PQN on Kuhn poker)."""

import json
import sys

import jax
import numpy as np

import jaxagents
from jaxagents.learners import PPOConfig
from jaxagents.learners.policy_gradient import ppo
from jaxagents.learners.policy_gradient import selfplay
from jaxagents.learners.value_based.pqn import PQNConfig
from jaxagents.learners.value_based.pqn import make_train as make_pqn
from jaxagents.learners.policy_gradient.selfplay import SelfPlayConfig
from jaxagents.population import Population, make_mesh

E, T, U = 16, 16, 3  # environments, steps, updates


def ippo(d):
    """IPPO on Kuhn poker: GAE, minibatch advantage normalisation, 2 epochs."""
    cfg = PPOConfig(num_envs=E, num_steps=T, total_timesteps=E * T * U, update_epochs=2, num_minibatches=1,
                    advantage="gae", normalize="minibatch")
    return ppo.make_train(cfg, jaxagents.make("kuhn_poker"), data_axis="data", data_shards=d)


def selfplay_rae(d):
    """Self-play on Kuhn poker: RAE table, batch normalisation, a league over the
    opponent pool (PFSP from the payoff table, the latest snapshot) with a main
    exploiter (its draws, its psummed policy gradient), the parameter average and the
    exact exploitability."""
    league = dict(weighting="hard", self_play=0.4, pfsp=0.2, latest=0.1, exploiter=dict(share=0.3, epochs=2, lr=0.01))
    cfg = SelfPlayConfig(ppo=PPOConfig(num_envs=E, num_steps=T, total_timesteps=E * T * U, update_epochs=2, num_minibatches=1,
                                       advantage="rae", normalize="batch", optimizer="sgd", lr=0.5),
                         pool_size=2, pool_every=1, league=league, average_decay=0.9, eval_every=U, eval_envs=16, eval_steps=8)
    return selfplay.make_train(cfg, jaxagents.make("kuhn_poker"), data_axis="data", data_shards=d)


def pqn_vdn(d):
    """PQN-VDN on Overcooked cramped_room, feed-forward: 6-step episodes, so
    truncations bootstrap inside the rollout; shaped reward. One minibatch (with more,
    each device shuffles its own samples and the minibatches differ from one
    device's)."""
    cfg = PQNConfig(num_envs=4, num_steps=8, total_timesteps=4 * 8 * U, update_epochs=2, num_minibatches=1, vdn=True,
                    lr=1e-3, eps_decay=0.5, shaped_reward="shaped_reward", shaped_reward_horizon=1e5,
                    network=dict(hidden=[16]))
    return make_pqn(cfg, jaxagents.make("overcooked", layout="cramped_room", horizon=6), data_axis="data", data_shards=d)


def pqn_rnn(d):
    """Independent recurrent PQN on Kuhn poker (turn-based: inactive steps masked)."""
    cfg = PQNConfig(num_envs=E, num_steps=T, total_timesteps=E * T * U, update_epochs=2, num_minibatches=1, lr=1e-3,
                    network=dict(hidden=[16], recurrent=True, gru_size=8))
    return make_pqn(cfg, jaxagents.make("kuhn_poker"), data_axis="data", data_shards=d)


def run(make, size, pop, data):
    pop_ = Population(make(data), size, mesh=make_mesh(pop, data=data))
    state, metrics = jax.jit(pop_.train)(jax.random.key(3))
    env_devices = {len(x.sharding.device_set) for x in jax.tree.leaves(state.members.env)}
    return state, {k: np.asarray(v) for k, v in metrics.items()}, sorted(env_devices)


def diff(a, b):
    a, b = (jax.random.key_data(x) if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key) else x for x in (a, b))  # the league's key
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    nan = np.isnan(a) | np.isnan(b)
    assert (np.isnan(a) == np.isnan(b)).all(), "NaN in one run only"
    d = np.abs(np.where(nan, 0.0, a - b))
    return float(d.max(initial=0.0)), float((d / np.maximum(np.abs(np.where(nan, 0.0, b)), 1e-3)).max(initial=0.0))


def compare(one, many):
    (s1, m1, _), (s4, m4, dev) = one, many
    out = {"env_devices": dev}
    parts = {"params": (s1.members.params, s4.members.params), "opt_state": (s1.members.opt_state, s4.members.opt_state),
             "baseline": (getattr(s1.members, "baseline", None), getattr(s4.members, "baseline", None)),
             "extra": (getattr(s1.members, "extra", None), getattr(s4.members, "extra", None)),
             "env": (s1.members.env.episode_return, s4.members.env.episode_return)}
    for name, (a, b) in parts.items():
        ds = [diff(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b))] or [(0.0, 0.0)]
        out[name] = [max(d[0] for d in ds), max(d[1] for d in ds)]
    ds = {k: diff(m1[k], m4[k]) for k in m1}
    out["metrics"] = [max(d[0] for d in ds.values()), max(d[1] for d in ds.values())]
    out["worst_metric"] = max(ds, key=lambda k: ds[k][1])
    out["same_metric_names"] = sorted(m1) == sorted(m4)
    out["episodes_equal"] = bool(np.array_equal(m1["episodes"], m4["episodes"]))
    return out


def main():
    assert len(jax.devices()) == 4, jax.devices()
    res = {}
    cases = {"ppo": (("ippo", ippo), ("selfplay_rae", selfplay_rae)), "pqn": (("pqn_vdn", pqn_vdn), ("pqn_rnn", pqn_rnn))}
    which = sys.argv[1] if len(sys.argv) > 1 else "ppo"
    # each pair covers both layouts once (every layout-learner pair doubles the compiles)
    (first, make_first), (second, make_second) = cases[which]
    # one member, its environments over 4 devices
    res[f"{first}/1x4"] = compare(run(make_first, 1, 1, 1), run(make_first, 1, 1, 4))
    # 2 members x 2 data devices
    res[f"{second}/2x2"] = compare(run(make_second, 2, 1, 1), run(make_second, 2, 2, 2))
    print(json.dumps(res))


if __name__ == "__main__":
    sys.exit(main())
