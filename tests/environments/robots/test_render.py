"""Pictures of the arena: robots where their poses say, every scenario renders, GIF export."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxagents_environments.robots import Discovery, Foraging, Navigation, PredatorPrey, save_gif
from jaxagents_environments.robots.navigation import NavigationState
from jaxagents_environments.robots.render import BACKGROUND, BORDER, goal_colours


def _pixel(x, y, scale):
    return int((1.0 - y) * scale), int((x + 1.6) * scale)  # row, column


def test_robots_and_goals_are_drawn_where_they_are():
    env = Navigation(num_robots=3)
    params = env.default_params()
    pose = jnp.array([[-1.0, 0.5, 0.0], [0.3, -0.4, np.pi / 2], [1.2, 0.7, np.pi]])
    goal = jnp.array([[0.0, 0.0], [-1.2, -0.6], [1.0, -0.7]])
    scale = 100
    img = env.render(NavigationState(pose=pose, goal=goal, t=jnp.zeros((), jnp.int32)), params, scale=scale)
    assert img.shape == (200, 320, 3) and img.dtype == np.uint8
    colours = goal_colours(3)
    for i, (x, y, th) in enumerate(np.asarray(pose)):
        # the body, just off the white heading line
        r, c = _pixel(x - 0.03 * np.sin(th) - 0.02 * np.cos(th), y + 0.03 * np.cos(th) - 0.02 * np.sin(th), scale)
        np.testing.assert_array_equal(img[r, c], colours[i])
        r, c = _pixel(x + 0.04 * np.cos(th), y + 0.04 * np.sin(th), scale)  # heading line
        np.testing.assert_array_equal(img[r, c], [255, 255, 255])
        r, c = _pixel(*np.asarray(goal[i]), scale)  # the goal's dot, in the robot's colour
        np.testing.assert_array_equal(img[r, c], colours[i])
    np.testing.assert_array_equal(img[100, 100], BACKGROUND)
    np.testing.assert_array_equal(img[0, 0], BORDER)
    with pytest.raises(ValueError, match="unbatched"):
        env.render(NavigationState(pose=pose[None], goal=goal[None], t=jnp.zeros((1,), jnp.int32)), params)


@pytest.mark.parametrize("cls", [Foraging, PredatorPrey, Discovery])
def test_every_scenario_renders(cls):
    env = cls()
    state = jax.jit(env.reset_task)(jax.random.key(0), env.default_params())
    img = env.render(state)
    assert img.shape == (300, 480, 3) and img.dtype == np.uint8
    assert len(np.unique(img.reshape(-1, 3), axis=0)) >= 4  # background, border, robots, objects


def test_gif_export(tmp_path):
    from PIL import Image

    env = Navigation(num_robots=2)
    params = env.default_params()
    frames = []
    for t in range(4):
        pose = jnp.array([[-1.0 + 0.2 * t, 0.0, 0.0], [1.0, 0.2 * t, 1.0]])
        frames.append(env.render(NavigationState(pose=pose, goal=jnp.zeros((2, 2)), t=jnp.asarray(t)), params, scale=50))
    path = tmp_path / "arena.gif"
    save_gif(frames, path, fps=4)
    with Image.open(path) as im:
        assert im.n_frames == 4 and im.size == (160, 100)
