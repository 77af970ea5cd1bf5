"""A distilled average policy: a second network fitted by supervised learning to the
actions the learner's own policy takes in its rollouts (NFSP's average network).

Why: when self-play iterates cycle or oscillate around an equilibrium, the time average
of their *policies* -- per information state, weighted by how often each iterate reaches
it -- can be much closer to the equilibrium than any iterate (fictitious play; CFR's
average strategy), while the average of their *parameters* need not be a policy average
at all. Cross-entropy on sampled (observation, action) pairs fits exactly such an
average: the samples weight each state by how often it was visited. With a constant
step size the network follows a recency-weighted average of recent iterates (a window
of roughly ``1 / lr`` updates for SGD-like steps), not the uniform average over all of
training; experiments/leduc_exact_dynamics.py (``--average visit``) measures
what such averages are worth with exact dynamics.

The network is the learner's own (``Agents``: the same architecture and torso; its critic
head is unused, its gradient is zero) with its own optimiser (Adam after global-norm
clipping). It only reads the rollout: the learner's training, its random draws and its
results do not change when it is switched on.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import optax
from flax import struct

from jaxagents.core.validate import check_float, check_positive_int
from jaxagents.learners.partners.part import Context, Exact, Part
from jaxagents.learners.skeleton.optim import full_batch_steps


@dataclasses.dataclass(frozen=True)
class AveragePolicyConfig:
    """``lr``: Adam's step size; ``epochs``: full-batch steps per update on the rollout;
    ``max_grad_norm``: global-norm clipping before Adam."""

    lr: float = 1e-3
    epochs: int = 1
    max_grad_norm: float = 1.0

    def __post_init__(self):
        object.__setattr__(self, "lr", check_float("average_policy.lr", self.lr, low=0.0, low_open=True))
        object.__setattr__(self, "epochs", check_positive_int("average_policy.epochs", self.epochs))
        object.__setattr__(self, "max_grad_norm", check_float("average_policy.max_grad_norm", self.max_grad_norm,
                                                              low=0.0, low_open=True))

    def optimizer(self) -> optax.GradientTransformation:
        """Global-norm clipping at ``max_grad_norm``, then Adam at ``lr``."""
        return optax.chain(optax.clip_by_global_norm(self.max_grad_norm), optax.adam(self.lr))


@struct.dataclass
class AveragePolicy:
    """``params``: the average network (one role's params tree); ``opt_state``: its optimiser's state."""

    params: dict
    opt_state: optax.OptState


def init(cfg: AveragePolicyConfig, params: dict) -> AveragePolicy:
    """Start from ``params`` (the learner's initial network: the average of no iterates yet
    is the first iterate)."""
    return AveragePolicy(params, cfg.optimizer().init(params))


def fit(cfg: AveragePolicyConfig, agents, role: str, avg: AveragePolicy, tr, axis_name: str | None = None):
    """``cfg.epochs`` Adam steps of cross-entropy to the actions of one role's rollout.

    ``tr``: the role's ``rollout.Transition`` (``obs[T, E, n, ...]``, ``action[T, E, n]``,
    ``mask[T, E, n, A]``); only the samples of the learning policy's own moves count
    (``active & learner``: not the turns where another seat moved, not an opponent
    snapshot's moves). With ``axis_name`` (environments split over devices) the loss is
    the mean over every device's samples. Returns ``(avg, mean cross-entropy f32[])``
    (before the last step)."""
    weight = (tr.active & tr.learner).astype(jnp.float32).reshape(-1)
    obs_shape = agents.roles[role].observation_space.shape
    obs = tr.obs.reshape(-1, *obs_shape)
    action = tr.action.reshape(-1)
    mask = None if tr.mask is None else tr.mask.reshape(-1, tr.mask.shape[-1])  # None: all legal
    total = jnp.sum(weight) if axis_name is None else jax.lax.psum(jnp.sum(weight), axis_name)
    total = jnp.maximum(total, 1.0)
    def loss(params):
        out = agents.logits_fn(params, role)(obs)
        nll = -agents.distribution(params, role, out, mask).log_prob(action)
        return jnp.sum(weight * nll) / total, ()  # this device's share of the mean

    params, opt_state, (value, _) = full_batch_steps(loss, avg.params, avg.opt_state, cfg.optimizer(), cfg.epochs,
                                                     axis_name)
    return AveragePolicy(params, opt_state), value


class DistilledAverage(Part):
    """The ``distilled`` part: an ``AveragePolicy`` ``fit`` after every update to the
    rollout's own moves (``average_policy/loss``), evaluated under ``eval/distilled/``."""

    field = "distilled"

    def __init__(self, cfg: AveragePolicyConfig, agents, role: str, axis_name: str | None = None):
        self.cfg, self.agents, self.role, self.axis_name = cfg, agents, role, axis_name

    def init(self, params, key):
        return init(self.cfg, params)

    def after_update(self, avg: AveragePolicy, ctx: Context):
        avg, loss = fit(self.cfg, self.agents, self.role, avg, ctx.traj, self.axis_name)
        return avg, {"average_policy/loss": loss}

    def evaluate(self, avg: AveragePolicy, exact: Exact):
        return exact(avg.params, "eval/distilled/")


class ParameterAverage(Part):
    """The ``average`` part: an exponential moving average of the parameters (Polyak
    averaging), ``a <- decay * a + (1 - decay) * params`` after every update, from the
    initial parameters; evaluated under ``eval/average/``. Unlike ``DistilledAverage``
    it averages weights, not policies: cheap, and close to the iterates' policy average
    only where the iterates stay close to each other."""

    field = "average"

    def __init__(self, decay: float):
        self.decay = decay

    def init(self, params, key):
        return params

    def after_update(self, avg: dict, ctx: Context):
        d = self.decay
        return jax.tree.map(lambda a, p: d * a + (1.0 - d) * p, avg, ctx.params), {}

    def evaluate(self, avg: dict, exact: Exact):
        return exact(avg, "eval/average/")
