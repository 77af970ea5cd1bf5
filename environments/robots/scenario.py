"""``RobotScenario``: the base class every arena scenario extends.

The base class owns the robots: roles (contiguous slices of one robot array), action
decoding (discrete waypoints or continuous ``(v, w)``), the ticks of the simulator with
or without the safety filter, time limits, the ``info`` of the arena, observation spaces
and the picture of the arena. A scenario adds its objects, rules, rewards and
observations through these hooks (the package docstring has a worked outline):

* ``default_params()``: a ``flax.struct`` dataclass with at least the fields
  ``arena: ArenaParams`` (``self.default_arena_params()``) and ``max_steps``;
* ``reset_task(key, params) -> state``: a ``flax.struct`` dataclass with at least
  ``pose`` ``f32[N, 3]`` (``self.spawn_robots(key, params)``) and ``t`` ``i32[]`` (0);
* ``update_task(key, prev, state, params) -> (state, reward f32[N], terminated, info)``:
  called after the robots moved (``state.pose`` is new, ``prev`` is the state before the
  step, ``state.t`` already counts this step); rewards are per robot, in robot order;
* ``observe(state, params) -> {role: f32[n_role, obs_dim(role)]}`` and ``obs_dim(role)``;
* ``global_obs(state, params) -> f32[global_obs_dim]`` and ``global_obs_dim``;
* optionally ``check_task_params(params)`` (host numpy only: ``jnp`` operations would be
  staged into a surrounding ``jit``; raise ``ValueError`` naming ``params.<field>``),
  ``draw_task(canvas, state, params)`` (objects under the robots),
  ``draw_overlay(canvas, state, params)`` (labels over them) and
  ``robot_colours(state, params)`` (see ``render.py`` for the ``Canvas``).

After ``reset`` every ``info`` entry is zero (same keys and dtypes as after ``step``,
found by tracing ``step_env`` abstractly once). Episodes end when ``update_task`` says
so (``terminated``) or at ``params.max_steps`` steps (``truncated``); stepping a finished
episode keeps simulating (no NaN, no freeze).

Constructor arguments common to every scenario (keyword-only):

* ``action_mode``: ``"discrete"`` (``Discrete(5)`` waypoints) or ``"continuous"``
  (``Box(-1, 1, (2,))`` normalised ``(v, w)``);
* ``safety``: run the safety filter (default True);
* ``zero_order_hold``: filter once per step and hold the command (default False: per tick);
* ``ticks_per_step`` (30, about 1 s), ``filter_iters`` (QP iterations per filtering, 20;
  the iteration cap of the robust filter), ``max_steps`` (default ``params.max_steps``,
  100), ``spawn_spacing`` (preferred start grid spacing, 0.4 m);
* ``barrier``: ``"guarded"`` (ours, default) or ``"robust"`` (JaxRobotarium's robust
  barrier, solved to ``filter_tol`` m/s, default 1e-4; see ``safety.py``);
* ``metrics``: ``"step"`` (default: ``collisions``, ``boundary`` and ``min_distance`` of
  the pose at the end of each step) or ``"tick"`` (at every tick, summed: for evaluation).

Booleans accept the usual spellings (``True``, ``"true"``, ``"yes"``, ``"on"``, ``1``...),
what ``--env-kwarg safety=true`` gives. Unknown keyword arguments are rejected with the
list of allowed ones, and errors name the public argument (``num_robots``).

They fix the compiled program (array shapes, which code runs), so they are constructor
arguments, not params: a traced switch between per-tick filtering and zero-order hold
would compute both branches under ``vmap``. Scenarios pass them through ``**kwargs``.
"""

from __future__ import annotations

import inspect

import numpy as np
import jax
import jax.numpy as jnp

from jaxagents.core import Box, Discrete, Env, Role
from jaxagents.core.validate import check_bool, check_choice, check_float, check_int
from jaxagents_environments.robots.arena import (
    X_MAX, X_MIN, Y_MAX, Y_MIN, ArenaParams, SpawnGrid, check_arena_params, default_arena_params, make_grid,
    spawn_poses,
)
from jaxagents_environments.robots.arena_sim import BARRIERS, METRICS, simulate
from jaxagents_environments.robots.controller import continuous_command, waypoints
from jaxagents.core import threefry as rng

ACTION_MODES = ("discrete", "continuous")
# the keyword arguments every scenario accepts (through ``**kwargs``)
COMMON_OPTIONS = ("action_mode", "safety", "zero_order_hold", "ticks_per_step", "filter_iters", "max_steps",
                  "spawn_spacing", "barrier", "filter_tol", "metrics")


def _check_int(name, value, low, high=None):
    return check_int(name, value, low=low, high=high)


def _public_args(cls) -> list:
    """The named constructor arguments of a scenario class (its own, then the common ones)."""
    own = [k for k, v in inspect.signature(cls.__init__).parameters.items()
           if k != "self" and v.kind in (v.POSITIONAL_OR_KEYWORD, v.KEYWORD_ONLY)]
    return own + [k for k in COMMON_OPTIONS if k not in own]


class RobotScenario(Env):
    """Base class of the arena scenarios (see the module docstring for the hooks).

    Args:
        role_sizes: ``{role: robot count}``; robots are numbered role by role in this order.
        action_mode, safety, zero_order_hold, ticks_per_step, filter_iters, max_steps,
            barrier, filter_tol, metrics: see the module docstring.
        spawn_spacing: preferred spacing (m) of the start grid; it shrinks when the robots
            do not fit, down to what the barriers need.
        robot_region: ``(x0, x1, y0, y1)`` where robots start (default: the whole arena).
        spawn_extra: additional cells the start grid must have (objects placed with
            ``spawn_robots``'s grid, e.g. resources that must not sit on a robot).
        size_args: ``{role: constructor argument}`` (``{"robot": "num_robots"}``): the
            name errors give for a role's robot count.
        **unknown: rejected (``ValueError`` listing the scenario's arguments).
    """

    def __init__(self, role_sizes: dict, *, action_mode: str = "discrete", safety: bool = True,
                 zero_order_hold: bool = False, ticks_per_step: int = 30, filter_iters: int = 20,
                 max_steps: int = 100, spawn_spacing: float = 0.4, barrier: str = "guarded",
                 filter_tol: float = 1e-4, metrics: str = "step", robot_region=None, spawn_extra: int = 0,
                 size_args: dict | None = None, **unknown):
        if unknown:
            raise ValueError(f"{type(self).__name__}: unknown argument(s) {', '.join(sorted(unknown))}; "
                             f"allowed: {', '.join(_public_args(type(self)))}")
        self.action_mode = check_choice("action_mode", action_mode, ACTION_MODES)
        self.safety = check_bool("safety", safety)
        self.zero_order_hold = check_bool("zero_order_hold", zero_order_hold)
        self.barrier = check_choice("barrier", barrier, BARRIERS)
        self.metrics = check_choice("metrics", metrics, METRICS)
        self.filter_tol = check_float("filter_tol", filter_tol, low=0.0, low_open=True)
        self.ticks_per_step = _check_int("ticks_per_step", ticks_per_step, 1, 10_000)
        self.filter_iters = _check_int("filter_iters", filter_iters, 1, 10_000)
        self._max_steps = _check_int("max_steps", max_steps, 1)
        # errors name the constructor argument a user typed (num_robots), not the role
        names = {k: f"number of {k} robots" for k in role_sizes} | dict(size_args or {})
        self.role_sizes = {k: _check_int(names[k], v, 1) for k, v in role_sizes.items()}
        self.num_robots = sum(self.role_sizes.values())
        start = np.cumsum([0] + list(self.role_sizes.values()))
        self.role_slices = {k: slice(int(a), int(b)) for k, a, b in zip(self.role_sizes, start[:-1], start[1:])}
        region = robot_region or (X_MIN, X_MAX, Y_MIN, Y_MAX)
        self.robot_grid: SpawnGrid = make_grid(self.num_robots + spawn_extra, spawn_spacing, region,
                                               name=" + ".join(names.values()) + (" and objects" if spawn_extra else ""))

        if action_mode == "discrete":
            act = Discrete(5)
        else:
            act = Box(-1.0, 1.0, (2,), jnp.float32)
        self.roles = {
            k: Role(n, Box(-np.inf, np.inf, (self.obs_dim(k),), jnp.float32), act, always_legal=True, always_active=True)
            for k, n in self.role_sizes.items()
        }
        self.global_obs_shape = (self.global_obs_dim,)
        self._info_template = None

    # ------------------------------------------------------------------ hooks
    def obs_dim(self, role: str) -> int:
        raise NotImplementedError

    @property
    def global_obs_dim(self) -> int:
        raise NotImplementedError

    def reset_task(self, key, params):
        raise NotImplementedError

    def update_task(self, key, prev, state, params):
        raise NotImplementedError

    def observe(self, state, params) -> dict:
        raise NotImplementedError

    def check_task_params(self, params) -> None:
        """Scenario-specific checks of host params (raise ``ValueError``)."""

    def draw_task(self, canvas, state, params) -> None:
        """Draw the scenario's objects (goals, resources...) under the robots."""

    def draw_overlay(self, canvas, state, params) -> None:
        """Draw labels on top of the robots (levels, capabilities...)."""

    def robot_colours(self, state, params) -> np.ndarray:
        """``uint8[N, 3]`` body colours: one colour per role by default."""
        from jaxagents_environments.robots.render import ROLE_COLOURS

        out = np.zeros((self.num_robots, 3), np.uint8)
        for i, sl in enumerate(self.role_slices.values()):
            out[sl] = ROLE_COLOURS[i % len(ROLE_COLOURS)]
        return out

    # ------------------------------------------------------------------ params
    def default_arena_params(self) -> ArenaParams:
        return default_arena_params(self.num_robots)

    def check_params(self, params) -> None:
        check_arena_params(params.arena, self.num_robots, self.robot_grid.spacing)
        if np.any(np.asarray(params.max_steps) < 1):
            raise ValueError(f"params.max_steps must be >= 1, got {params.max_steps}")
        self.check_task_params(params)

    # ------------------------------------------------------------------ helpers for scenarios
    def spawn_robots(self, key, params, extra: int = 0):
        """Start poses ``f32[N, 3]`` on distinct cells of the robot grid (barriers
        satisfied); with ``extra > 0`` (at most the constructor's ``spawn_extra``) also
        ``f32[extra, 2]`` object positions on further cells: ``(poses, positions)``."""
        return spawn_poses(key, self.robot_grid, self.num_robots, params.arena, extra)

    def split_roles(self, x) -> dict:
        """Per-robot array -> ``{role: slice}``."""
        return {k: x[sl] for k, sl in self.role_slices.items()}

    # ------------------------------------------------------------------ reset / step
    def reset_env(self, key, params):
        state = self.reset_task(key, params)
        if self._info_template is None:
            acts = {k: jnp.zeros((r.num_agents,) + r.action_space.shape, r.action_space.dtype)
                    for k, r in self.roles.items()}
            self._info_template = jax.eval_shape(self.step_env, key, state, acts, params)[1].info
        info = jax.tree_util.tree_map(lambda s: jnp.zeros(s.shape, s.dtype), self._info_template)
        return state, self.make_timestep(obs=self.observe(state, params), info=info)

    def step_env(self, key, state, actions, params):
        k_sim, k_task = rng.split(key)  # jax.random.split's keys, one fused kernel (see rng.py)
        a = jnp.concatenate([actions[k] for k in self.roles], 0)
        p = params.arena
        if self.action_mode == "discrete":
            target = waypoints(a, state.pose, p)
        else:
            target = continuous_command(a, p)
        pose, sim_info = simulate(k_sim, state.pose, target, p, waypoint=self.action_mode == "discrete",
                                  safety=self.safety, hold=self.zero_order_hold, ticks=self.ticks_per_step,
                                  iters=self.filter_iters, metrics=self.metrics, barrier=self.barrier,
                                  tol=self.filter_tol)
        new = state.replace(pose=pose, t=state.t + 1)
        new, reward, terminated, task_info = self.update_task(k_task, state, new, params)
        terminated = jnp.asarray(terminated, bool)
        truncated = (new.t >= params.max_steps) & ~terminated
        return new, self.make_timestep(
            obs=self.observe(new, params),
            reward=self.split_roles(jnp.asarray(reward, jnp.float32)),
            terminated=terminated,
            truncated=truncated,
            info={**sim_info, **task_info},
        )

    # ------------------------------------------------------------------ picture
    def render(self, state, params=None, scale: float = 150.0) -> np.ndarray:
        """An RGB frame ``uint8[H, W, 3]`` of one unbatched state, ``scale`` pixels per metre."""
        from jaxagents_environments.robots.render import render_arena

        params = self.default_params() if params is None else params
        return render_arena(self, state, params, scale)


# ---------------------------------------------------------------------- observation helpers
def pose_features(pose: jax.Array) -> jax.Array:
    """``f32[N, 3]`` poses -> ``f32[N, 4]`` ``(x, y, cos th, sin th)`` (no wrap-around)."""
    return jnp.concatenate([pose[:, :2], jnp.cos(pose[:, 2:3]), jnp.sin(pose[:, 2:3])], -1)


def others(x: jax.Array) -> jax.Array:
    """``[N, ...]`` -> ``[N, N-1, ...]``: for robot ``i`` the rows of robots
    ``i+1, i+2, ..., i-1`` (mod N), so every robot sees the team in the same relative order."""
    n = x.shape[0]
    idx = (np.arange(n)[:, None] + np.arange(1, n)[None]) % n
    return x[idx]
