"""The JaxMARL backend: ``benchmark_jaxmarl`` measures a JaxMARL environment with its own
step (auto-reset included) and random legal actions drawn by the same sampler as ours.

Nothing JaxMARL-specific is re-implemented here: the id is resolved by
``jaxagents.compat.make_jaxmarl`` (as the runner's is), and action spaces and
legal-action masks are converted by ``jaxagents.compat.jaxmarl.convert``, as
``from_jaxmarl`` converts them.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Callable, Sequence

import jax
import jax.numpy as jnp

from jaxagents.bench.protocol import DEFAULT_NUM_ENVS, _check_args, _measure_sizes, _scan_rollout, _version, machine_info
from jaxagents.bench.results import BenchResult, BenchRow
from jaxagents.compat.jaxmarl.convert import mask_function, role_masks, space_from_jaxmarl
from jaxagents.compat.jaxmarl.make import import_jaxmarl, make_jaxmarl
from jaxagents.core import spaces as ja_spaces
from jaxagents.core.env import random_actions
from jaxagents.core.types import Role


def _jaxmarl_program(env, num_envs: int, steps: int, key: jax.Array, emit: bool = False):
    """``(run, args)`` for ``jax.vmap(env.step)`` (JaxMARL's step, its own auto-reset
    included) with random legal actions; args = (key, state, (obs, info), None): the
    observations and info of the last step are carried, so that XLA computes them as
    it computes ours (``emit``: see ``_scan_rollout``)."""
    agents = list(env.agents)
    # Each JaxMARL agent becomes a one-agent role, so our random_actions (the sampler of
    # the jaxagents path) draws its actions: same masking rule, same distributions.
    roles = {
        a: Role(1, ja_spaces.Box(0.0, 1.0, (1,)),
                space_from_jaxmarl(env.action_space(a), what=f"benchmark_jaxmarl: action space of {a!r}"))
        for a in agents
    }
    role_agents = {a: [a] for a in agents}
    shim = SimpleNamespace(roles=roles)
    all_legal = {a: jnp.ones(r.mask_shape, bool) for a, r in roles.items()}
    k_reset, k_run = jax.random.split(key)
    obs, state = jax.jit(jax.vmap(env.reset))(jax.random.split(k_reset, num_envs))
    one_state = jax.tree_util.tree_map(lambda x: x[0], state)
    mask_fn = mask_function(env, one_state, {a: r.num_actions for a, r in roles.items()}, what="benchmark_jaxmarl")

    def sample_one(k, s):
        masks = role_masks(mask_fn, s, role_agents, roles)  # {agent: bool[1, n]}
        acts = random_actions(shim, k, SimpleNamespace(action_mask=all_legal if masks is None else masks))
        return {a: acts[a][0] for a in agents}  # JaxMARL wants unbatched per-agent actions

    sample_batch = jax.vmap(sample_one)
    vstep = jax.vmap(env.step)

    def sample(k, state, aux):
        return sample_batch(jax.random.split(k, num_envs), state)

    def step(k, state, aux, actions, params):
        obs, state, rewards, dones, info = vstep(jax.random.split(k, num_envs), state, actions)
        r = sum(jnp.sum(rewards[a], dtype=jnp.float32) for a in agents)
        return state, (obs, info), r, jnp.sum(dones["__all__"], dtype=jnp.int32)

    # the info's structure: JaxMARL's reset does not return one
    info0 = jax.tree_util.tree_map(
        lambda x: jnp.zeros(x.shape, x.dtype),
        jax.eval_shape(lambda k, s: vstep(jax.random.split(k, num_envs), s, sample(k, s, None))[4], k_run, state))
    return _scan_rollout(sample, step, steps, emit), (k_run, state, (obs, info0), None)


def _jaxmarl_label(jaxmarl_id: str, make_kwargs: dict) -> str:
    shown = {k: v for k, v in make_kwargs.items() if isinstance(v, (str, int, float, bool))}
    return jaxmarl_id + ("(" + ",".join(f"{k}={v}" for k, v in shown.items()) + ")" if shown else "")


def benchmark_jaxmarl(
    jaxmarl_id_or_env,
    num_envs: int | Sequence[int] = DEFAULT_NUM_ENVS,
    steps: int = 1000,
    repeats: int = 3,
    *,
    seed: int = 0,
    progress: Callable[[BenchRow], None] | None = None,
    **make_kwargs,
) -> BenchResult:
    """Measure a JaxMARL environment with the same protocol, in this process.

    The timed program is ``jit`` of ``lax.scan`` over ``steps`` of ``jax.vmap(env.step)``
    (JaxMARL's step, which resets every environment every step and selects) with random
    actions, masked by ``get_avail_actions`` (Hanabi: ``get_legal_moves``) when the env
    defines it. Agents per environment = ``env.num_agents``. Rows have
    ``library="jaxmarl"`` and ``mode="jaxmarl"``.

    Args:
        jaxmarl_id_or_env: a ``jaxmarl.make`` id (``"MPE_simple_spread_v3"``,
            ``"overcooked"``, ``"hanabi"``, ...) or a JaxMARL environment instance.
        num_envs, steps, repeats, seed, progress: as in ``benchmark``.
        **make_kwargs: passed to ``jaxmarl.make`` through ``compat.make_jaxmarl``
            (``layout="cramped_room"`` for ``"overcooked"`` and ``scenario="3m"`` for
            SMAX are accepted as names).

    Raises:
        ImportError: JaxMARL is not installed (``pip install 'jaxagents[jaxmarl]'``).
    """
    sizes, steps, repeats, _ = _check_args(num_envs, steps, repeats)
    jaxmarl = import_jaxmarl()
    if isinstance(jaxmarl_id_or_env, str):
        env = make_jaxmarl(jaxmarl_id_or_env, **make_kwargs)
        label = _jaxmarl_label(jaxmarl_id_or_env, make_kwargs)
    else:
        if make_kwargs:
            raise ValueError("make_kwargs only apply to a JaxMARL id, not to an environment instance")
        env, label = jaxmarl_id_or_env, type(jaxmarl_id_or_env).__name__
    key = jax.random.key(seed)
    rows = _measure_sizes(lambda n: _jaxmarl_program(env, n, steps, key), sizes, steps, repeats, progress,
                          library="jaxmarl", env=label, mode="jaxmarl", num_agents=int(env.num_agents))
    machine = machine_info()
    machine["jaxmarl"] = _version("jaxmarl") or getattr(jaxmarl, "__version__", None)
    return BenchResult(rows=rows, machine=machine)

