"""Robot coordination on a Robotarium-like arena (3.2 m x 2.0 m, differential-drive robots).

Modules:

* ``arena.py``: constants (the Robotarium's), ``ArenaParams`` (per-robot radii and speed
  limits, noise, gains), unicycle kinematics with wheel-speed limits, start positions;
* ``controller.py``: discrete waypoint actions, the position controller, continuous ``(v, w)``;
* ``safety.py``: the control-barrier-function safety filter (a vectorised QP over all
  robot pairs, plus an exact body/wall guard) and its residual; JaxRobotarium's robust
  barrier (``barrier="robust"``: disturbance hull, solved to a tolerance) as an option;
* ``arena_sim.py``: one environment step = ``ticks_per_step`` ticks in a ``lax.scan``,
  filtered per tick or once per step with zero-order hold;
* ``scenario.py``: ``RobotScenario``, the base class of the scenarios;
* ``navigation.py``, ``foraging.py``, ``predator_prey.py``, ``discovery.py``: scenarios;
* ``render.py``: RGB frames (numpy) and ``save_gif``.
* ``jaxagents.core.threefry``: ``split`` / ``uniform`` bit-identical to ``jax.random``'s, as one fused kernel
  (JAX's CPU threefry is a rolled loop of ~100 kernel launches: the cost of a small-batch reset).

Adding a scenario (e.g. material transport). Subclass ``RobotScenario`` in a new module::

    @struct.dataclass
    class TransportParams:
        arena: ArenaParams          # required: self.default_arena_params()
        max_steps: jax.Array        # required
        load_reward: jax.Array      # ... the scenario's own knobs

    @struct.dataclass
    class TransportState:
        pose: jax.Array             # required, f32[N, 3]
        t: jax.Array                # required, i32[]
        payload: jax.Array          # ... the scenario's own state

    class MaterialTransport(RobotScenario):
        def __init__(self, num_robots=4, **kwargs):
            # roles are contiguous robot slices, in this order; spawn_extra reserves start
            # cells for objects that must not start under a robot
            super().__init__({"robot": num_robots}, **kwargs)
        def obs_dim(self, role): ...                 # per-role observation size
        global_obs_dim = property(lambda self: ...)  # size of global_obs
        def default_params(self): ...
        def check_task_params(self, params): ...     # optional, host numpy, ValueError
        def reset_task(self, key, params):           # pose from self.spawn_robots(key, params)
            ...
        def update_task(self, key, prev, state, params):
            # state.pose has moved; return (state, reward f32[N], terminated, info dict)
            ...
        def observe(self, state, params): ...        # {role: f32[n_role, obs_dim(role)]}
        def global_obs(self, state, params=None): ...
        def draw_task(self, canvas, state, params): ...  # optional picture of the objects

Heterogeneous robots need nothing more: ``params.arena.radius`` / ``max_speed`` are
per robot, and a scenario can add its own per-robot capabilities to its params (as
``Discovery`` does). Per-robot speed that depends on the state (terrain, loads) can be
written into a copy of ``params.arena.max_speed`` before the step (override ``step_env``
and call ``super().step_env`` with ``params.replace(arena=...)``). The grid worlds
``grid_*.py`` (level-based foraging, RWARE) are separate and share nothing with the arena.
"""

from jaxagents_environments.robots.arena import ArenaParams, default_arena_params
from jaxagents_environments.robots.discovery import Discovery
from jaxagents_environments.robots.foraging import Foraging
from jaxagents_environments.robots.navigation import Navigation
from jaxagents_environments.robots.predator_prey import PredatorPrey
from jaxagents_environments.robots.render import save_gif
from jaxagents_environments.robots.scenario import RobotScenario

__all__ = [
    "ArenaParams", "default_arena_params", "RobotScenario", "Navigation", "Foraging", "PredatorPrey", "Discovery",
    "save_gif",
]
