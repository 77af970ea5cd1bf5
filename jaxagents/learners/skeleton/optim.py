"""The optimiser every learner builds inside its traced update (Adam or SGD after
gradient clipping, the hyper-parameters traced), and the full-batch fits of the side
networks the partner parts keep (``partners.average_policy``, ``partners.exploiter``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax

CRITIC_MODULES = ("critic", "v")  # ActorCritic's critic stream and value head


def clip_by_stream_norm(max_norm) -> optax.GradientTransformation:
    """``clip_by_global_norm`` applied to the critic's parameters (``CRITIC_MODULES``)
    and to the rest (the actor) separately: what two optimisers with their own clips
    do (JaxMARL's MAPPO), so that a large value-loss gradient does not shrink the
    policy's step. Same (empty) state as ``clip_by_global_norm``."""

    def is_critic(path) -> bool:
        keys = [getattr(k, "key", None) for k in path]
        return any(k in CRITIC_MODULES for k in keys[:2])

    def update(updates, state, params=None):
        flat = jax.tree_util.tree_flatten_with_path(updates)[0]
        norms = {}
        for critic in (False, True):
            leaves = [g for path, g in flat if is_critic(path) == critic]
            norms[critic] = optax.global_norm(leaves) if leaves else jnp.zeros(())

        def clip(path, g):
            n = norms[is_critic(path)]
            return jnp.where(n < max_norm, g, g * (max_norm / jnp.maximum(n, 1e-30)))

        return jax.tree_util.tree_map_with_path(clip, updates), state

    return optax.GradientTransformation(lambda params: optax.EmptyState(), update)


def make_optimizer(hp, lr_scale: jax.Array, optimizer: str = "adam",
                   clip_per_stream: bool = False) -> optax.GradientTransformation:
    """``hp``: any hyper-parameters with ``lr`` and ``max_grad_norm`` (traced scalars).

    Adam (eps 1e-5) after global-norm clipping, as PureJaxRL/JaxMARL, or plain SGD
    after the same clipping. Built inside the traced update so ``lr``/``max_grad_norm``
    may be traced; the optimiser state does not depend on them. ``clip_per_stream``
    clips the actor's and the critic's gradients separately (``clip_by_stream_norm``);
    Adam is per parameter, so one Adam after that equals one Adam per stream.

    SGD is for self-play in zero-sum games: its step is proportional to the gradient,
    so the (entropy-regularised) game dynamics settle at the equilibrium, whereas
    Adam's per-parameter normalisation keeps the step size fixed as the gradient
    vanishes and makes the iterates cycle around it."""
    clip = clip_by_stream_norm(hp.max_grad_norm) if clip_per_stream else optax.clip_by_global_norm(hp.max_grad_norm)
    if optimizer == "sgd":
        return optax.chain(clip, optax.sgd(hp.lr * lr_scale))
    return optax.chain(clip, optax.adam(hp.lr * lr_scale, eps=1e-5))


def full_batch_steps(loss_fn, params, opt_state, tx: optax.GradientTransformation, epochs: int,
                     axis_name: str | None = None):
    """``epochs`` steps of ``tx`` on one full batch, as a ``lax.scan`` (the side networks'
    fits: ``average_policy.fit``, ``exploiter.fit``).

    ``loss_fn(params) -> (loss, aux)``: this device's share of a weighted mean (``jaxagents.learners.policy_gradient.update``'s
    docstring); with ``axis_name`` the loss, ``aux`` and the gradients are
    ``psum``med before the optimiser, so every device takes the same step. Returns
    ``(params, opt_state, (loss, aux))``, the loss and ``aux`` of the last step's
    parameters *before* that step."""

    def step(carry, _):
        params, opt_state = carry
        out, grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
        if axis_name is not None:
            out, grads = jax.lax.psum((out, grads), axis_name)
        updates, opt_state = tx.update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state), out

    (params, opt_state), outs = jax.lax.scan(step, (params, opt_state), None, length=epochs)
    return params, opt_state, jax.tree.map(lambda x: x[-1], outs)
