"""Trajectory replay for the off-policy value learners (IQL, VDN, QMIX): a typed
layer over flashbax's trajectory buffer.

Why flashbax: it is the replay library of the JAX RL ecosystem (JaxMARL's and
Mava's Q-learning baselines use it), its buffers are pure functions over a state
that is an ordinary pytree, so ``add`` and ``sample`` live inside the jit-compiled
update and ``vmap`` over population members like any other state; and its
*trajectory* buffer keeps each environment's steps in time order, which recurrent
Q-networks need (they unroll over a sampled sequence).

Layout. The buffer holds ``num_envs`` rows, each a ring of ``capacity // num_envs``
consecutive steps of one environment (flashbax's ``[add_batch, time]``). Every
update appends the rollout's ``[T, E]`` steps (transposed to ``[E, T]``), so a row
continues across updates and a sampled sequence may span two rollouts and episode
boundaries (``Step.reset`` marks where the recurrent memory restarts). ``sample``
draws ``batch_size`` sequences of ``length`` steps, uniformly over rows and over
start times (flashbax's ``period = 1``), returned time-major ``[L, B, ...]``.

What is stored per step (``Step``), for every role: the observation the agents
acted on, their actions, rewards, legal-action masks and activity flags; the
transition's ``terminated``/``truncated``; whether the observation starts an
episode (``reset``); and the global observation (QMIX's hypernetwork input; None
otherwise, so no memory is spent on it). A transition ``t -> t + 1`` is read from
two consecutive steps of a sequence: step ``t``'s action, reward and flags and step
``t + 1``'s observation, mask and activity (the target's max).

Checkpointing. ``ReplayState`` is flashbax's ``TrajectoryBufferState`` (a chex
dataclass: the stored arrays, the write index and the full flag), kept in the
learner's train state; the checkpointer saves the train state as one pytree, so a
restored run samples exactly what the uninterrupted one would have.
"""

from __future__ import annotations

import flashbax as fbx
import jax
import jax.numpy as jnp
from flashbax.buffers.trajectory_buffer import TrajectoryBufferState
from flax import struct

from jaxagents.core.validate import check_positive_int

ReplayState = TrajectoryBufferState


@struct.dataclass
class Step:
    """One environment step of all agents, as stored (leading axes: any batch,
    ``[T, E]`` from a rollout, ``[L, B]`` from ``sample``).

    Attributes:
        obs: ``{role: [..., n, *obs_shape]}`` the observation acted on.
        action: ``{role: i32[..., n]}``.
        reward: ``{role: f32[..., n]}`` the transition's rewards.
        mask: ``{role: bool[..., n, A]}`` the legal actions at ``obs``.
        active: ``{role: bool[..., n]}`` whose action the step used.
        terminated, truncated: ``bool[...]`` the transition ended the episode.
        reset: ``bool[...]`` ``obs`` is the first of an episode (recurrent resets).
        global_obs: ``f32[..., *G]`` ``env.global_obs`` at ``obs``, or None.
    """

    obs: dict
    action: dict
    reward: dict
    mask: dict
    active: dict
    terminated: jax.Array
    truncated: jax.Array
    reset: jax.Array
    global_obs: jax.Array | None = None

    @classmethod
    def of_rollout(cls, traj: dict) -> "Step":
        """A rollout's record, ``{role: qnets.QTransition [T, E, n, ...]}`` ->
        ``Step [T, E, ...]``; the per-step flags, the same for every agent, are read
        off the first role's first agent."""
        first, field = next(iter(traj.values())), lambda name: {r: getattr(tr, name) for r, tr in traj.items()}  # noqa: E731
        return cls(obs=field("obs"), action=field("action"), reward=field("reward"), mask=field("mask"),
                   active=field("active"), terminated=first.terminated[..., 0], truncated=first.truncated[..., 0],
                   reset=first.reset[..., 0], global_obs=first.global_obs)


class Replay:
    """A trajectory buffer of ``Step`` records (see the module docstring).

    Args:
        num_envs: environments per rollout (the buffer's rows).
        capacity: steps stored in all (``capacity // num_envs`` per environment).
        batch_size: sequences per ``sample``.
        length: steps per sampled sequence (``L``; one-step targets use ``L - 1``
            transitions of it).
        chunk: steps per ``add`` (the rollout length); must fit in a row.
    """

    def __init__(self, num_envs: int, capacity: int, batch_size: int, length: int, chunk: int):
        self.num_envs = check_positive_int("num_envs", num_envs)
        self.batch_size = check_positive_int("batch_size", batch_size)
        self.length = check_positive_int("sample length", length)
        self.chunk = check_positive_int("num_steps", chunk)
        self.rows = check_positive_int("buffer_size", capacity) // self.num_envs
        if self.rows < max(self.length, self.chunk):
            raise ValueError(f"buffer_size={capacity} holds {self.rows} steps per environment (buffer_size // num_envs="
                             f"{self.num_envs}); it must hold at least max(sample length {self.length}, num_steps "
                             f"{self.chunk})")
        self.buffer = fbx.make_trajectory_buffer(
            add_batch_size=self.num_envs, sample_batch_size=self.batch_size, sample_sequence_length=self.length,
            period=1, min_length_time_axis=self.length, max_length_time_axis=self.rows,
        )

    def init(self, example: Step) -> ReplayState:
        """An empty buffer shaped after ``example``, one unbatched ``Step``."""
        return self.buffer.init(example)

    def add(self, state: ReplayState, steps: Step) -> ReplayState:
        """Append a rollout, ``steps`` time-major ``[T, E, ...]``."""
        return self.buffer.add(state, jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), steps))

    def sample(self, state: ReplayState, key: jax.Array) -> Step:
        """``batch_size`` sequences of ``length`` consecutive steps, time-major
        ``[L, B, ...]``. Only call it once ``length`` steps per row were added
        (``can_sample``); the learner guarantees it from its update count."""
        seq = self.buffer.sample(state, key).experience
        return jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), seq)

    def can_sample(self, state: ReplayState) -> jax.Array:
        """``bool[]``: whether every row holds at least ``length`` steps, so ``sample`` is valid."""
        return self.buffer.can_sample(state)
