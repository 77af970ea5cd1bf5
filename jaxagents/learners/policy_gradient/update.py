"""The PPO update of the policy-gradient family (IPPO, MAPPO, self-play, FCP):
clipped surrogate, clipped value loss, entropy bonus, over epochs x minibatches as
nested ``lax.scan`` loops.

Samples enter the losses with weight ``active & learner`` (inactive agents of
turn-based games and opponent-pool seats contribute nothing), so every mean below
is a weighted mean.

Data parallelism (``axis_name``): each device holds its own environments' samples
and computes its *share* of every weighted mean -- its sum divided by the weight
summed over all devices (``psum``) -- so the ``psum`` of the shares is the mean over
the whole batch. The gradient of the full-batch loss is then the ``psum`` of the
devices' gradients (taken before clipping and the optimiser, so every device applies
the same step and the parameters stay replicated), the loss metrics are ``psum``ed
the same way, and minibatch advantage normalisation uses the global weighted mean
and std. With ``num_minibatches > 1`` each device shuffles its own samples (the same
permutation of its local indices everywhere): a minibatch is ``1/M`` of every
device's samples, not a shuffle of the whole batch.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax
from flax import struct

from jaxagents.core.rng import permutation
from jaxagents.learners.skeleton import interface
from jaxagents.learners.skeleton.optim import make_optimizer


@struct.dataclass
class HParams(interface.ConfigHParams):
    """The hyper-parameters a population may vary: traced scalars, so
    ``vmap(train)`` over them works (PureJaxRL-style sweeps)."""

    lr: jax.Array
    ent_coef: jax.Array
    vf_coef: jax.Array
    clip_eps: jax.Array
    gamma: jax.Array
    gae_lambda: jax.Array
    max_grad_norm: jax.Array


# Where a population may move each of them: (low, high, scale). A config value
# outside a range widens it (``hparam_space``), so the default is always valid.
HPARAM_RANGES = {
    "lr": (1e-5, 1e-2, "log"),
    "ent_coef": (0.0, 0.5, "linear"),
    "vf_coef": (0.05, 2.0, "linear"),
    "clip_eps": (0.05, 0.5, "linear"),
    "gamma": (0.8, 0.9999, "linear"),
    "gae_lambda": (0.5, 1.0, "linear"),
    "max_grad_norm": (0.05, 10.0, "log"),
}
# Plain SGD steps are not normalised as Adam's are: its useful learning rates are
# two to three orders larger (Kuhn self-play trains with 0.8).
SGD_LR_RANGE = (1e-4, 2.0, "log")


def hparam_space(cfg) -> dict:
    """``{name: HParamSpec}`` of the PPO family's traced hyper-parameters, the
    defaults read from ``cfg`` (the learning rate's range follows the optimizer)."""
    ranges = dict(HPARAM_RANGES, lr=SGD_LR_RANGE) if getattr(cfg, "optimizer", "adam") == "sgd" else HPARAM_RANGES
    return interface.hparam_space(ranges, cfg)


@struct.dataclass
class Batch:
    """One role's training samples (any leading shape; see ``minibatches``).
    ``critic_in`` is None when the critic reads ``obs`` (IPPO); ``mask`` is None
    when every action is legal, ``weight`` None when every sample weighs 1."""

    obs: jax.Array
    critic_in: jax.Array | None
    action: jax.Array
    log_prob: jax.Array
    value: jax.Array
    mask: jax.Array | None
    reset: jax.Array
    advantage: jax.Array
    target: jax.Array
    weight: jax.Array | None


OPTIMIZERS = ("adam", "sgd")


def _wmean(x, w, axis_name=None):
    """The weighted mean of ``x`` (``w=None``: every weight 1); with ``axis_name``,
    this device's share of the weighted mean over every device (its sum over the
    total weight)."""
    local = jnp.asarray(x.size, jnp.float32) if w is None else jnp.sum(w)
    total = local if axis_name is None else jax.lax.psum(local, axis_name)
    return jnp.sum(x if w is None else x * w) / jnp.maximum(total, 1.0)


def role_loss(agents, role, params, b: Batch, hp: HParams, h0, value_loss: bool, normalize: bool, axis_name=None,
              magnet=None, magnet_weight: float = 1.0):
    """PPO loss of one role on one minibatch ``[T, E, n, ...]``; with ``axis_name``
    the loss and metrics are this device's shares (see the module docstring).

    The regulariser, weighted by ``hp.ent_coef``: the policy's entropy ``H(pi)`` (a pull
    towards the uniform policy), or with ``magnet`` (a params tree of the role's network,
    not differentiated) ``(1 - w) H(pi) - w KL(pi || magnet)``, ``w = magnet_weight``:
    up to terms constant in ``pi`` that is ``-KL(pi || rho)`` for the magnet
    ``rho ~ magnet^w * uniform^(1 - w)`` (magnetic mirror descent's regulariser)."""
    _, out, value = agents.apply(params, role, h0, b.obs, b.critic_in, b.reset)
    dist = agents.distribution(params, role, out, b.mask)
    log_prob = dist.log_prob(b.action)
    entropy = dist.entropy()
    if magnet is None:
        reg = entropy
    else:
        magnet = jax.lax.stop_gradient(magnet)
        _, m_out, _ = agents.apply(magnet, role, h0, b.obs, b.critic_in, b.reset)
        kl = dist.kl_divergence(agents.distribution(magnet, role, m_out, b.mask))
        reg = (1.0 - magnet_weight) * entropy - magnet_weight * kl
    w = b.weight
    adv = b.advantage
    if normalize:
        if axis_name is None:
            mean = _wmean(adv, w)
            std = jnp.sqrt(_wmean((adv - mean) ** 2, w))
        else:  # the global weighted mean and std, from the devices' shares
            mean = jax.lax.psum(_wmean(adv, w, axis_name), axis_name)
            std = jnp.sqrt(jax.lax.psum(_wmean((adv - mean) ** 2, w, axis_name), axis_name))
        adv = (adv - mean) / (std + 1e-8)
    log_ratio = log_prob - b.log_prob
    ratio = jnp.exp(log_ratio)
    pg = -jnp.minimum(ratio * adv, jnp.clip(ratio, 1.0 - hp.clip_eps, 1.0 + hp.clip_eps) * adv)
    mean = lambda x: _wmean(x, w, axis_name)  # noqa: E731
    pg_loss = mean(pg)
    ent = mean(entropy)
    reg_mean = ent if magnet is None else mean(reg)
    if value_loss:
        v_clip = b.value + jnp.clip(value - b.value, -hp.clip_eps, hp.clip_eps)
        v_loss = 0.5 * mean(jnp.maximum((value - b.target) ** 2, (v_clip - b.target) ** 2))
    else:
        v_loss = jnp.zeros(())
    total = pg_loss + hp.vf_coef * v_loss - hp.ent_coef * reg_mean
    metrics = {
        "policy_loss": pg_loss,
        "value_loss": v_loss,
        "entropy": ent,
        "approx_kl": mean((ratio - 1.0) - log_ratio),
        "clip_frac": mean((jnp.abs(ratio - 1.0) > hp.clip_eps).astype(jnp.float32)),
    }
    if magnet is not None:
        metrics["magnet_kl"] = mean(kl)
    return total, metrics


def minibatches(batch: Batch, h0, key, num_minibatches: int, recurrent: bool):
    """Shuffle and split ``[T, E, n, ...]`` samples into ``num_minibatches``.

    Feed-forward: all ``T*E*n`` samples are shuffled and split into ``[M, B/M, ...]``;
    ``ppo_epochs`` gives each minibatch unit time and agent axes, ``[1, B/M, 1, ...]``
    (added inside the step rather than here: stacked ``[M, 1, B/M, 1, ...]`` arrays get
    a slow strided layout from XLA's CPU backend). Recurrent: whole
    sequences are kept; environments are shuffled and a minibatch is
    ``[T, E/M, n, ...]`` with its initial memory ``h0[E/M, n, H]``.

    With one minibatch nothing is shuffled: the loss is a mean over the whole batch,
    so the order cannot matter, and a permutation is a multi-round sort
    (a quarter of a Kuhn self-play update at 32,768 samples).
    """
    if num_minibatches == 1:
        if recurrent:
            return jax.tree.map(lambda x: x[None], batch), jax.tree.map(lambda x: x[None], h0)
        t, e, n = batch.obs.shape[:3]
        return jax.tree.map(lambda x: x.reshape(1, t * e * n, *x.shape[3:]), batch), None
    if recurrent:
        e = batch.obs.shape[1]
        perm = permutation(key, e)
        split = lambda x: jnp.moveaxis(jnp.take(x, perm, axis=1).reshape(x.shape[0], num_minibatches, e // num_minibatches, *x.shape[2:]), 1, 0)
        hsplit = lambda x: jnp.take(x, perm, axis=0).reshape(num_minibatches, e // num_minibatches, *x.shape[1:])
        return jax.tree.map(split, batch), jax.tree.map(hsplit, h0)
    t, e, n = batch.obs.shape[:3]
    size = t * e * n
    perm = permutation(key, size)

    def split(x):
        x = jnp.take(x.reshape(size, *x.shape[3:]), perm, axis=0)
        return x.reshape(num_minibatches, size // num_minibatches, *x.shape[1:])

    return jax.tree.map(split, batch), None


def subsample_agents(batch: Batch, h0, key, k: int):
    """Keep ``k`` randomly chosen agent slots of a role's ``[T, E, n, ...]`` batch
    (the same slots for every time step and environment; ``h0[E, n, H]`` likewise).

    For populations sharing one network (10^4-10^6 agents) the gradient of the mean
    loss over a uniform subsample of agents is unbiased, and the update's cost no
    longer grows with ``n``. Roles with ``n <= k`` are returned unchanged."""
    n = batch.obs.shape[2]
    if n <= k:
        return batch, h0
    idx = jax.random.choice(key, n, (k,), replace=False)
    batch = jax.tree.map(lambda x: jnp.take(x, idx, axis=2), batch)
    h0 = None if h0 is None else jax.tree.map(lambda x: jnp.take(x, idx, axis=1), h0)
    return batch, h0


def ppo_epochs(
    agents, params, opt_state, batches: dict, h0: dict, key, hp: HParams, lr_scale, *,
    update_epochs: int, num_minibatches: int, optimizer: str = "adam", clip_per_stream: bool = False,
    normalize_minibatch: bool = True, value_loss: bool = True, axis_name=None, magnets: dict | None = None,
    magnet_weight: float = 1.0,
):
    """``update_epochs`` passes of ``num_minibatches`` gradient steps over
    ``{role: Batch}``. Each role has its own Adam state and its own gradient clip
    (one role's large gradients must not shrink another's steps).

    ``lr_scale``: one scalar, or ``{role: scalar}`` for per-role step sizes;
    ``normalize_minibatch``: advantages normalised per minibatch inside the loss;
    ``value_loss``: whether the critic is trained (critic-free estimators: no);
    ``axis_name``: the data axis the batch is split over (gradients and metrics
    ``psum``ed, see the module docstring); ``magnets``: ``{role: params}``, the policies
    the roles' regularisers pull towards with weight ``magnet_weight`` (``role_loss``;
    a role not in it, or None: the entropy bonus alone)."""
    txs = {r: make_optimizer(hp, lr_scale[r] if isinstance(lr_scale, dict) else lr_scale, optimizer,
                             clip_per_stream) for r in agents.roles}
    recurrent = agents.network.recurrent
    normalize = normalize_minibatch

    def loss_fn(p, mb, hmb):
        total, metrics = 0.0, {}
        for role in agents.roles:
            h = hmb[role] if recurrent else agents.modules[role].initial_state(mb[role].obs.shape[1:3])
            magnet = None if magnets is None else magnets.get(role)
            loss, m = role_loss(agents, role, p[role], mb[role], hp, h, value_loss, normalize, axis_name, magnet,
                                magnet_weight)
            total = total + loss
            metrics.update({f"{k}/{role}": v for k, v in m.items()})
        return total, metrics

    # Observations travel through the shuffle flattened to one feature axis and get their
    # shape back inside the step (a free reshape there): XLA's CPU gather copies along
    # the minor dimension of its output, and an image-like observation's minor dimension
    # (Overcooked's 26 channels of a [4, 5, 26] grid) is far shorter than its row (520).
    # Gathering [..., 4, 5, 26] rows cost ~3% of a 16-member IPPO update.
    obs_shapes = {role: b.obs.shape[3:] for role, b in batches.items()}
    flat = {role: b.replace(obs=b.obs.reshape(*b.obs.shape[:3], -1)) for role, b in batches.items()}

    def minibatch_step(carry, mb):
        p, s = carry
        mb, hmb = mb
        if not recurrent:  # [B/M, ...] -> [T=1, B/M, n=1, ...]
            mb = jax.tree.map(lambda x: x[None, :, None], mb)
        mb = {role: b.replace(obs=b.obs.reshape(*b.obs.shape[:3], *obs_shapes[role])) for role, b in mb.items()}
        grads, metrics = jax.grad(loss_fn, has_aux=True)(p, mb, hmb)
        if axis_name is not None:  # the devices' shares -> the full batch's gradient and metrics
            grads, metrics = jax.lax.psum((grads, metrics), axis_name)
        new_p, new_s = {}, {}
        for role in agents.roles:
            metrics[f"grad_norm/{role}"] = optax.global_norm(grads[role])
            upd, new_s[role] = txs[role].update(grads[role], s[role], p[role])
            new_p[role] = optax.apply_updates(p[role], upd)
        return (new_p, new_s), metrics

    def epoch(carry, k):
        ks = jax.random.split(k, len(agents.roles))
        mbs, hs = {}, {}
        for kr, role in zip(ks, agents.roles):
            mbs[role], hs[role] = minibatches(flat[role], h0[role], kr, num_minibatches, recurrent)
        return jax.lax.scan(minibatch_step, carry, (mbs, hs if recurrent else None))

    (params, opt_state), metrics = jax.lax.scan(epoch, (params, opt_state), jax.random.split(key, update_epochs))
    return params, opt_state, jax.tree.map(jnp.mean, metrics)
