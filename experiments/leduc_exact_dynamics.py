"""Why self-play PPO stalls on Leduc hold'em: the *expected* self-play dynamics, with exact
gradients from the game tree (no sampling), for a tabular policy and for the learner's MLP.

The sampled self-play loss (per-sample mean of ``A * log pi`` plus ``ent_coef`` times the
entropy, both seats in one batch) has, in expectation and up to a constant factor, the
gradient of ``v_p(pi) + tau * sum_n P(n) H(pi(I_n))`` for each player ``p`` over its own
information states, ``P(n)`` being the node's reach probability (chance and both players)
and ``tau`` the entropy coefficient in chips (``ent_coef`` times the per-role standard
deviation of the returns when advantages are normalised per role; about 4.2 chips on Leduc).
This script follows that gradient exactly, three ways:

* ``tabular``: a logits table ``f32[936, 3]``, plain gradient ascent (``--lr``);
* ``network``: the learner's actor (``jaxagents.nn.ActorCritic``, MLP ``--hidden``, tanh) on
  every information state's observation, the table's gradient pulled back through the
  network (``jax.vjp``), plain gradient ascent on the parameters;
* ``--average own`` / ``visit`` (tabular, network): next to each iterate, the exploitability
  of the running average of the iterates' policies, per information state weighted by its
  owner's own reach (the sequence-form average of CFR and fictitious play) or by its full
  reach (how often sampled play visits it: what a network fitted to the sampled actions
  averages); ``--schedule linear`` weights iterate ``t`` by ``t``;
* ``--magnet-every M`` (tabular): the entropy replaced by ``-KL(pi || rho)`` to a magnet
  ``rho`` that is replaced by the current policy every ``M`` steps (R-NaD's and moving-magnet
  MMD's proximal-point scheme);
* ``fit``: first ``tabular`` for ``--iters`` steps, then the network fitted to that fixed
  point by Adam on cross-entropy over all information states (``--fit-weight uniform`` or
  ``reach``): can the network *represent* a low-exploitability policy?

Exact exploitability (``jaxagents.evaluation.exploitability``) is printed ``--points`` times
and written as JSON (``--out``); ``--plot`` draws every JSON given to it.

    python experiments/leduc_exact_dynamics.py tabular --tau 0.3 --lr 10 --iters 4000 --out t.json
    python experiments/leduc_exact_dynamics.py network --tau 0.3 --lr 0.05 --iters 2000 --out n.json
    python experiments/leduc_exact_dynamics.py tabular --tau 0.05 --lr 3 --iters 5000 --average own
    python experiments/leduc_exact_dynamics.py tabular --tau 0.3 --lr 10 --iters 8000 --magnet-every 1000
    python experiments/leduc_exact_dynamics.py fit --tau 0.3 --lr 10 --iters 1500 --out f.json
    python experiments/leduc_exact_dynamics.py plot t.json n.json f.json --fig FIG.png
"""

from __future__ import annotations

import argparse
import json
import time

import jax
import jax.numpy as jnp
import optax
from jaxagents_environments.games.leduc import LeducPoker

from jaxagents.outputs import check_outputs  # output paths checked before computing
from jaxagents.core import Discrete
from jaxagents.evaluation import exploitability as X
from jaxagents.nn import ActorCritic, NetworkConfig


def probs_of(tree: X.GameTree, logits: jax.Array) -> jax.Array:
    return jax.nn.softmax(jnp.where(tree.legal, logits, -1e9), -1)


def objective(tree: X.GameTree, sigma: jax.Array, p: int, tau: float, magnet: jax.Array | None = None) -> jax.Array:
    """``v_p + tau * sum over p's nodes of P(n) H(pi(I_n))`` of the policy table ``sigma``;
    with a ``magnet`` table ``rho``, ``-KL(pi(I_n) || rho(I_n))`` in place of the entropy."""
    logs = jnp.log(jnp.maximum(sigma, 1e-30))
    if magnet is not None:
        logs = logs - jnp.log(jnp.maximum(magnet, 1e-30))
    ent = -jnp.sum(jnp.where(tree.legal, sigma * logs, 0.0), -1)  # [S]
    own = jnp.where(tree.player == p, ent[jnp.maximum(tree.infostate, 0)], 0.0)
    return X.policy_value(tree, sigma)[p] + tau * jnp.sum(X.node_reach(tree, sigma) * own)


def player_objective(tree: X.GameTree, logits: jax.Array, p: int, tau: float, magnet=None) -> jax.Array:
    """``objective`` of the softmax of ``logits`` (the expected sampled loss, negated)."""
    return objective(tree, probs_of(tree, logits), p, tau, magnet)


def selfplay_gradient(tree: X.GameTree, logits: jax.Array, tau: float, neurd: bool = False, magnet=None) -> jax.Array:
    """``f32[S, A]``: each information state's row is the gradient of its owner's objective
    (the other player's policy held fixed): simultaneous self-play gradient ascent.
    ``neurd``: the gradient with respect to the probabilities instead of the logits (the
    softmax's Jacobian skipped, as neural replicator dynamics): per information state, the
    owner's reach times its counterfactual action values (up to a shift that the softmax
    ignores): a multiplicative-weights (Hedge) step, with reach-scaled step sizes."""
    if neurd:
        sigma = probs_of(tree, logits)
        grad = lambda p: jax.grad(objective, 1)(tree, sigma, p, tau, magnet)
    else:
        grad = lambda p: jax.grad(player_objective, 1)(tree, logits, p, tau, magnet)
    g = jnp.zeros_like(logits)
    for p in (0, 1):
        g = g + jnp.where((tree.infostate_player == p)[:, None], grad(p), 0.0)
    return jnp.where(tree.legal, g, 0.0)


def infostate_weight(tree: X.GameTree, sigma: jax.Array, weight: str) -> jax.Array:
    """``f32[S]``: how much an iterate ``sigma`` counts at each information state in a
    policy average. ``own``: the owner's own reach probability (the sequence-form average
    that CFR and fictitious play keep; ``exploitability.own_reach``). ``visit``: the state's full reach
    (chance, both players), i.e. how often sampled self-play visits it -- what a network
    fitted to the iterates' sampled actions averages."""
    if weight == "own":
        return X.own_reach(tree, sigma)
    reach = X.node_reach(tree, sigma)
    seg = jnp.where(tree.infostate >= 0, tree.infostate, tree.num_infostates)  # terminals: a dump segment
    return jax.ops.segment_sum(reach, seg, tree.num_infostates + 1)[:-1]


def follow(tree, step, policy_of, init, iters, points, average=None, schedule="uniform"):
    """Run ``iters`` steps ``x <- step(x)`` from ``init``; ``policy_of(x)`` is the iterate's
    ``f32[S, A]`` policy. Returns ``[(step, exploitability)]`` at ``points`` evenly spaced
    steps; with ``average`` (``own`` or ``visit``, ``infostate_weight``) also the running
    reach-weighted average of the iterates' policies, ``[(step, exploitability of the
    iterate, exploitability of the average)]``; ``schedule``: iterate ``t`` (from 1) counts
    ``1`` (``uniform``) or ``t`` (``linear``, as linear CFR)."""

    @jax.jit
    def advance(x, num, den, t):
        if average is not None:
            sigma = policy_of(x)
            w = infostate_weight(tree, sigma, average) * (t if schedule == "linear" else 1.0)
            num, den = num + w[:, None] * sigma, den + w
        return step(x), num, den

    x, num, den, curve = init, jnp.zeros(tree.legal.shape), jnp.zeros(tree.num_infostates), []
    for i in range(iters + 1):
        if i % max(iters // points, 1) == 0:
            row = (i, float(X.exploitability(tree, policy_of(x))))
            if average is not None:  # rows with no weight yet: normalize_policy makes them uniform
                row += (float(X.exploitability(tree, num / jnp.maximum(den, 1e-30)[:, None])),)
            curve.append(row)
        if i < iters:
            x, num, den = advance(x, num, den, jnp.float32(i + 1))
    return curve, x


def tabular(tree, tau, lr, iters, points, average=None, schedule="uniform", neurd=False, magnet_every=0):
    """Gradient ascent on a logits table; returns ``(curve, final logits)`` (``follow``).
    ``magnet_every`` > 0: the entropy becomes ``-KL(pi || rho)`` to a magnet ``rho``
    (uniform at first) replaced by the current policy every ``magnet_every`` steps --
    the proximal-point scheme of R-NaD and of magnetic mirror descent with a moving
    magnet, in the sampled loss's reach weighting."""
    th0 = jnp.zeros(tree.legal.shape, jnp.float32)
    if not magnet_every:
        step = lambda th: th + lr * selfplay_gradient(tree, th, tau, neurd)
        return follow(tree, step, lambda th: probs_of(tree, th), th0, iters, points, average, schedule)

    def step(x):
        th, rho, t = x
        th = th + lr * selfplay_gradient(tree, th, tau, neurd, magnet=rho)
        t = t + 1
        return th, jnp.where(t % magnet_every == 0, probs_of(tree, th), rho), t

    curve, (th, _, _) = follow(tree, step, lambda x: probs_of(tree, x[0]), (th0, X.uniform_policy(tree), jnp.int32(0)),
                               iters, points, average, schedule)
    return curve, th


def make_network(tree, hidden, seed, onehot=False):
    """The learner's actor on every information state's observation: ``(params, logits_fn)``.
    ``onehot``: the input is the information state's one-hot id instead of the env's
    observation (no input shared between information states)."""
    net = ActorCritic(NetworkConfig(hidden=tuple(hidden)), Discrete(tree.num_actions))
    obs = jnp.eye(tree.num_infostates) if onehot else tree.infostate_obs.reshape(tree.num_infostates, -1)
    obs = obs[None]  # [T=1, S, D]
    reset = jnp.zeros(obs.shape[:2], bool)
    params = net.init(jax.random.key(seed), (None, None), obs, None, reset)
    return params, lambda q: net.apply(q, (None, None), obs, reset, method=net.actor_only)[1][0]


def network(tree, tau, lr, iters, points, hidden, seed, onehot=False, average=None, schedule="uniform", neurd=False):
    """Gradient ascent on the actor's parameters; returns the curve (``follow``)."""
    params, logits_fn = make_network(tree, hidden, seed, onehot)

    def step(q):
        logits, pull_back = jax.vjp(logits_fn, q)
        (g,) = pull_back(selfplay_gradient(tree, logits, tau, neurd))
        return jax.tree.map(lambda a, b: a + lr * b, q, g)

    return follow(tree, step, lambda q: probs_of(tree, logits_fn(q)), params, iters, points, average, schedule)[0]


def fit(tree, target_logits, weight, steps, points, hidden, seed):
    """Adam (1e-3) on cross-entropy to the target policy over all information states."""
    params, logits_fn = make_network(tree, hidden, seed)
    target = probs_of(tree, target_logits)
    w = jnp.ones(tree.num_infostates) if weight == "uniform" else \
        jax.ops.segment_sum(X.node_reach(tree, target), jnp.where(tree.infostate >= 0, tree.infostate, tree.num_infostates),
                            tree.num_infostates + 1)[:-1]
    opt = optax.adam(1e-3)

    def loss(q):
        logp = jax.nn.log_softmax(jnp.where(tree.legal, logits_fn(q), -1e9))
        return jnp.sum(w * -jnp.sum(jnp.where(tree.legal, target * logp, 0.0), -1)) / jnp.sum(w)

    @jax.jit
    def step(q, s):
        u, s = opt.update(jax.grad(loss)(q), s)
        return optax.apply_updates(q, u), s

    s, curve = opt.init(params), []
    for i in range(steps + 1):
        if i % max(steps // points, 1) == 0:
            curve.append((i, float(X.exploitability(tree, probs_of(tree, logits_fn(params))))))
        if i < steps:
            params, s = step(params, s)
    return curve


def plot(files, fig):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=(7, 4.2))
    for f in files:
        r = json.load(open(f))
        x, y, *avg = zip(*r["curve"])
        line, = ax.plot(x, y, label=r["label"], ls="--" if r["mode"] == "fit" else "-")
        if avg:
            ax.plot(x, avg[0], color=line.get_color(), ls=":", label=f"{r['label']}: {r['args']['average']}-reach average, {r['args']['schedule']} weights")
    ax.set_yscale("log")
    ax.set_xlabel("exact gradient steps (fit: Adam steps)")
    ax.set_ylabel("exact exploitability")
    ax.set_title("Leduc: expected self-play dynamics, tabular vs the learner's MLP")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    plt.tight_layout()
    plt.savefig(fig, dpi=110)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("mode", choices=("tabular", "network", "fit", "plot"))
    p.add_argument("files", nargs="*", help="plot: the JSON files to draw")
    p.add_argument("--tau", type=float, default=0.3, help="entropy temperature in chips")
    p.add_argument("--lr", type=float, default=10.0)
    p.add_argument("--iters", type=int, default=2000)
    p.add_argument("--points", type=int, default=20)
    p.add_argument("--hidden", default="128,128")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--onehot", action="store_true", help="network: one-hot information-state ids as input")
    p.add_argument("--average", choices=("own", "visit"), default=None,
                   help="tabular/network: also the reach-weighted average of the iterates' policies")
    p.add_argument("--neurd", action="store_true", help="tabular/network: the probability gradient (no softmax Jacobian)")
    p.add_argument("--schedule", choices=("uniform", "linear"), default="uniform", help="the average's iterate weights")
    p.add_argument("--magnet-every", type=int, default=0,
                   help="tabular: KL to a magnet replaced by the current policy every this many steps (0: entropy)")
    p.add_argument("--fit-steps", type=int, default=4000)
    p.add_argument("--fit-weight", choices=("uniform", "reach"), default="reach")
    p.add_argument("--out", default=None)
    p.add_argument("--fig", default=None)
    a = check_outputs(p.parse_args())
    if a.mode == "plot":
        if not a.files or not a.fig:
            p.error("plot needs JSON files and --fig")
        return plot(a.files, a.fig)
    if a.magnet_every < 0 or (a.magnet_every and a.mode != "tabular"):
        p.error(f"--magnet-every must be >= 0 and goes with the tabular mode, got {a.magnet_every} ({a.mode})")
    tree, hidden, t0 = LeducPoker().game_tree(), [int(h) for h in a.hidden.split(",")], time.time()
    if a.mode == "tabular":
        curve, _ = tabular(tree, a.tau, a.lr, a.iters, a.points, a.average, a.schedule, a.neurd, a.magnet_every)
        magnet = f", magnet every {a.magnet_every}" if a.magnet_every else ""
        label = f"tabular{' NeuRD' if a.neurd else ''}, tau {a.tau}, lr {a.lr}{magnet}"
    elif a.mode == "network":
        curve = network(tree, a.tau, a.lr, a.iters, a.points, hidden, a.seed, a.onehot, a.average, a.schedule, a.neurd)
        label = f"MLP {a.hidden}{' on one-hot ids' if a.onehot else ''}{' NeuRD' if a.neurd else ''}, tau {a.tau}, lr {a.lr}"
    else:
        tab, theta = tabular(tree, a.tau, a.lr, a.iters, a.points)
        print(f"tabular fixed point after {a.iters} steps: {tab[-1][1]:.4f}")
        curve = fit(tree, theta, a.fit_weight, a.fit_steps, a.points, hidden, a.seed)
        label = f"MLP {a.hidden} fitted to the tabular tau {a.tau} point ({a.fit_weight} weights)"
    if a.average:
        print(f"  step  iterate  average ({a.average} reach, {a.schedule} weights)")
    for row in curve:
        print(f"{row[0]:6d} " + "  ".join(f"{e:.4f}" for e in row[1:]))
    print(f"{time.time() - t0:.0f} s")
    if a.out:
        json.dump({"mode": a.mode, "label": label, "args": vars(a), "curve": curve}, open(a.out, "w"))


if __name__ == "__main__":
    main()
