"""The fast step against reference rollouts of the step before it (``arena_golden.py``):
same trajectories, rewards and observations (to float32 rounding); with ``metrics="tick"`` the same info; with
the default ``metrics="step"`` the info of the end-of-step pose. Also the robust filter
(JaxRobotarium's barrier) and the constructor's argument checks."""

from __future__ import annotations

import importlib.util
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxagents_environments.robots import Navigation
from jaxagents_environments.robots.arena import default_arena_params, pair_metrics
from jaxagents_environments.robots.safety import ROBUST_DISTURBANCE, robust_filter, robust_rows

_spec = importlib.util.spec_from_file_location("arena_golden", os.path.join(os.path.dirname(__file__), "arena_golden.py"))
golden = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(golden)
GOLDEN = golden.load()
# one case in the default suite (filter on, held, with noise: the noise branch, the guard
# and one filtering per step); three more modes under -m slow, the scenarios under -m heavy
FAST = ("nav_safe_hold_noise",)
SLOW = ("nav_safe_tick", "nav_free_hold", "nav_safe_hold_cont")


def test_golden_names_the_commit_it_came_from():
    assert golden._reference_data().stored_commit(golden.PATH) == golden.COMMIT


def _compare(case, metrics):
    got = golden.rollout(case, metrics=metrics)
    ref = GOLDEN[case]
    assert set(got) == set(ref)
    for k, v in ref.items():
        if metrics == "step" and k.split("/")[-1] in golden.TICK_INFO:
            continue
        if np.issubdtype(v.dtype, np.floating):
            # the position controller without atan2 / sqrt rounds differently: 1e-5 m after
            # 6 steps of 30 ticks; headings (compared on the circle) to 1e-3 rad, since a
            # robot at its waypoint turns on a rounding-sized offset
            d = got[k] - v
            if k.endswith("pose"):
                heading = np.angle(np.exp(1j * d[..., 2]))
                np.testing.assert_allclose(heading, 0, atol=1e-3, err_msg=f"{case}: heading")
                d = d[..., :2]
            # positions to 5e-5 m; other floats (observations hold cos / sin of the heading) 1e-3
            np.testing.assert_allclose(d, 0, atol=5e-5 if k.endswith("pose") else 1e-3, err_msg=f"{case}: {k}")
        else:
            np.testing.assert_array_equal(got[k], v, err_msg=f"{case}: {k}")
    return got, ref


@pytest.mark.parametrize("case", FAST)
def test_same_trajectories_and_info_as_the_reference(case):
    got, ref = _compare(case, "tick")
    # end-of-step bookkeeping: the counts of the last tick, recomputed here from the poses
    env_id, kwargs, _ = golden.CASES[case]
    radius = jnp.full((ref["pose"].shape[-2],), 0.055)
    m = jax.vmap(jax.vmap(pair_metrics, (0, None)), (0, None))(jnp.asarray(ref["pose"]), radius)
    step = golden.rollout(case)  # the default, metrics="step"
    for k, v in zip(golden.TICK_INFO, m):
        np.testing.assert_allclose(step[f"info/{k}"], np.asarray(v), atol=5e-5, err_msg=k)
        # per-tick events include the end-of-step ones
        assert np.all(got[f"info/{k}"] <= step[f"info/{k}"]) if k == "min_distance" else \
            np.all(got[f"info/{k}"] >= step[f"info/{k}"])


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.slow if c in SLOW else pytest.mark.heavy)
                                  for c in golden.CASES if c not in FAST])
def test_every_scenario_matches_the_reference(case):
    _compare(case, "tick")
    _compare(case, "step")


def test_robust_rows_add_the_disturbance_hull():
    """The robust bound minus ours is ``max_w (a_i . w) + max_w (a_j . w)`` over the
    vertices ``w`` of the box ``[-d, d]^2`` of wheel-speed disturbances, with ``a_i`` the
    pair row's coefficients on robot ``i``'s wheel speeds (normalised rows)."""
    from jaxagents_environments.robots.arena import AXLE_LENGTH, WHEEL_RADIUS
    from jaxagents_environments.robots.safety import pair_rows

    rng = np.random.default_rng(0)
    pose = jnp.asarray(np.c_[rng.uniform(-1, 1, (5, 2)), rng.uniform(-np.pi, np.pi, 5)], jnp.float32)
    p = default_arena_params(5)
    ux, uy, b, _ = pair_rows(pose, p)
    _, _, rb, _ = robust_rows(pose, p)
    l, r, L = 0.05, WHEEL_RADIUS, AXLE_LENGTH
    D = np.array([[r / 2, r / 2], [-r / L, r / L]])
    hull = ROBUST_DISTURBANCE * np.array([[-1, -1], [-1, 1], [1, 1], [1, -1]])
    th = np.asarray(pose[:, 2], np.float64)
    for i in range(5):
        for j in range(5):
            if i == j:
                continue
            u = np.array([ux[i, j], uy[i, j]], np.float64)
            extra = 0.0
            for k, s in ((i, 1), (j, -1)):
                rot = np.array([[np.cos(th[k]), -np.sin(th[k])], [np.sin(th[k]), np.cos(th[k])]])
                a = s * u @ rot @ np.diag([1, l]) @ D / np.sqrt(2)  # d(row)/d(wheel speeds of k)
                extra += -np.min(hull @ a)
            # float32 differences of large bounds: 1e-4 m/s
            np.testing.assert_allclose(float(rb[i, j] - b[i, j]), extra, atol=1e-4 + 1e-6 * abs(float(b[i, j])))


def test_robust_filter_meets_its_tolerance_and_keeps_safe_commands():
    p = default_arena_params(4)
    pose = jnp.array([[0.0, 0.0, 0.0], [0.3, 0.0, np.pi], [-0.5, 0.5, 0.0], [0.5, -0.6, 1.0]], jnp.float32)
    head_on = jnp.array([[0.2, 0.0], [0.2, 0.0], [0.0, 0.0], [0.0, 0.0]], jnp.float32)
    solve = jax.jit(lambda v, q: robust_filter(v, q, p, 500, 1e-4))
    vw, _, res, used = solve(head_on, pose)
    assert float(res) <= 1e-4 and 0 < int(used) < 500
    assert float(vw[0, 0]) < 0.2 and float(vw[1, 0]) < 0.2  # both slowed down
    vw, _, res, used = solve(jnp.zeros((4, 2), jnp.float32), pose.at[1, 0].set(1.2))
    assert int(used) == 0 and float(res) == 0.0 and np.all(np.asarray(vw) == 0)


def test_constructor_arguments():
    env = Navigation(safety="true", zero_order_hold="off", barrier="robust", metrics="tick")
    assert env.safety is True and env.zero_order_hold is False
    with pytest.raises(ValueError, match="unknown argument.*colour.*allowed: num_robots, action_mode"):
        Navigation(colour="red")
    with pytest.raises(ValueError, match="num_robots must be"):
        Navigation(num_robots=0)
    with pytest.raises(ValueError, match="barrier must be one of"):
        Navigation(barrier="magic")
    with pytest.raises(ValueError, match="metrics must be one of"):
        Navigation(metrics="never")
    with pytest.raises(ValueError, match="filter_tol"):
        Navigation(filter_tol=0.0)
