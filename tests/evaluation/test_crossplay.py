"""Cross-play: closed-form matrices of fixed policies on the iterated prisoner's
dilemma, seat-assignment symmetry, the CLI's files and its one-line errors."""

import dataclasses
import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import yaml

import jaxagents
from jaxagents import cli, runner
from jaxagents.evaluation.crossplay import crossplay
from jaxagents.learners.skeleton.agents import Agents
from jaxagents.nn import NetworkConfig

H = 10  # prisoner's dilemma rounds (default params)


def _fixed(params, logits):
    """A policy whose every layer is zero but the policy head's bias: fixed logits."""
    t = jax.tree.map(jnp.zeros_like, params)
    t["params"]["pi"]["bias"] = jnp.asarray(logits, jnp.float32)
    return t


@pytest.fixture(scope="module")
def pd():
    env = jaxagents.make("prisoners_dilemma")
    agents = Agents(env, NetworkConfig(hidden=(4,)))
    p = jax.jit(agents.init)(jax.random.key(0))  # one compile (eager init dispatches op by op: 3 s more)
    # cooperate always, defect always, uniform: both roles
    pols = [{r: _fixed(v, logits) for r, v in p.items()} for logits in ([30.0, -30.0], [-30.0, 30.0], [0.0, 0.0])]
    params = jax.tree.map(lambda *x: jnp.stack(x), *pols)
    comp = crossplay(agents, env, params, jax.random.key(1), episodes=64, num_steps=H + 2, seeds=3, team=False,
                     names=["C", "D", "U"])
    team = dataclasses.replace(comp, team=True)  # the same games, scored as a team
    return env, comp, team


def test_fixed_policies_match_the_payoff_table(pd):
    env, comp, team = pd
    payoff = np.asarray(env.default_params().payoff)  # [player, row action, column action]
    # deterministic pairs: the row policy in seat 0 (role "row") or seat 1 (role "column")
    for i, a in ((0, 0), (1, 1)):
        for j, b in ((0, 0), (1, 1)):
            assert comp.scores[0, 0, i, j] == pytest.approx(H * payoff[0, a, b])
            assert comp.scores[0, 1, i, j] == pytest.approx(H * payoff[1, b, a])
            assert team.scores[0, 0, i, j] == pytest.approx(H * (payoff[0, a, b] + payoff[1, a, b]) / 2)
    # against the uniform policy: the expectation over its action, within sampling error
    # (64 episodes x 10 rounds per seed and seat, 3 seeds)
    want = H * payoff[0, 0, :].mean()  # C in the row seat against U
    assert comp.scores[:, 0, 0, 2].mean() == pytest.approx(want, abs=1.0)
    assert np.all(comp.finished == 64)


def test_seat_assignment_symmetry(pd):
    _, comp, team = pd
    # (seat 0, i, j) and (seat 1, j, i) are the same assignment and play the same games
    np.testing.assert_array_equal(team.scores[:, 0], np.swapaxes(team.scores[:, 1], -1, -2))
    # the prisoner's dilemma is symmetric: row's return in one seat is the column's in the other
    s0, s1 = comp.scores[:, 0], comp.scores[:, 1]
    both = np.swapaxes(s1, -1, -2)
    np.testing.assert_allclose(team.scores[:, 0], (s0 + both) / 2, rtol=1e-6)
    assert comp.matrix.shape == (3, 3) and comp.per_seed().shape == (3, 3, 3)


def test_summary_splits_diagonal_and_off_diagonal(pd):
    _, comp, _ = pd
    diag, off = comp.split()
    assert diag.shape == (3, 3) and off.shape == (3, 6)
    s = comp.summary(reps=100)
    assert s["self_play"]["mean"].point == pytest.approx(diag.mean())
    assert s["cross_play"]["iqm"].low <= s["cross_play"]["iqm"].point <= s["cross_play"]["iqm"].high
    field = comp.versus_field()
    np.testing.assert_allclose(field[:, 0], (comp.per_seed()[:, 0, 1] + comp.per_seed()[:, 0, 2]) / 2, rtol=1e-6)
    d = comp.to_dict()
    json.dumps(d)
    assert d["names"] == ["C", "D", "U"] and comp.to_csv().splitlines()[0] == "row\\column,C,D,U"


def _fake_run(path, env_id, learner="selfplay"):
    """A run directory with only its config (enough for the environment check)."""
    os.makedirs(path)
    cfg = runner.prepare({"learner": learner, "env": {"id": env_id}})
    with open(os.path.join(path, "config.yaml"), "w") as f:
        yaml.safe_dump(cfg, f)


def test_cli_mismatched_environments_one_line_error(tmp_path, capsys):
    _fake_run(tmp_path / "a", "kuhn_poker")
    _fake_run(tmp_path / "b", "leduc_poker")
    out = tmp_path / "m.png"
    rc = cli.main(["crossplay", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and "differ in env" in err and len(err.strip().splitlines()) == 1
    assert not out.exists() and not (tmp_path / "m.json").exists()
    rc = cli.main(["crossplay", str(tmp_path / "nope"), "--out", str(out)])
    assert rc == 2 and "not a run directory" in capsys.readouterr().err


@pytest.mark.heavy
def test_cli_on_two_runs_writes_the_files(tmp_path, capsys):
    tiny = dict(learner="selfplay", env={"id": "kuhn_poker"}, checkpoint_every=1, log={"progress": False},
                train={"ppo": {"num_envs": 8, "num_steps": 8, "total_timesteps": 64}, "eval_every": 8,
                       "eval_envs": 4, "eval_steps": 4})
    for name, seed in (("a", 0), ("b", 1)):
        runner.run({**tiny, "seed": seed}, run_dir=str(tmp_path / name), quiet=True)
    out = tmp_path / "x.png"
    rc = cli.main(["crossplay", str(tmp_path / "a"), str(tmp_path / "b"), "--episodes", "8", "--seeds", "2",
                   "--steps", "8", "--out", str(out)])
    printed = capsys.readouterr().out
    assert rc == 0 and "self-play" in printed and "cross-play" in printed
    assert out.stat().st_size > 0
    data = json.loads((tmp_path / "x.json").read_text())
    m = np.asarray(data["matrix"], float)
    assert data["names"] == ["a", "b"] and m.shape == (2, 2)
    np.testing.assert_allclose(np.diag(m), 0.0, atol=1e-6)  # zero-sum: a policy against itself, both seats
    np.testing.assert_allclose(m, -m.T, atol=1e-6)  # and the mirror assignment
    assert (tmp_path / "x.csv").read_text().startswith("row\\column,a,b")
