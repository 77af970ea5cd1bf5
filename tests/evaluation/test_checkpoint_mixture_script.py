"""experiments/checkpoint_mixture.py on a tiny Kuhn self-play run: a mixture
of one checkpoint is that checkpoint, the mixture of all of them is the behavioural
mixture of their tables, and the JSON holds what was printed."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxagents
from jaxagents import runner, runs
from jaxagents.evaluation.exploitability import exploitability, mixture_policy, policy_from_fn
from jaxagents.learners.policy_gradient.selfplay import ROLE

TINY = dict(learner="selfplay", env={"id": "kuhn_poker"}, seed=3, num_seeds=2, checkpoint_every=1, keep_checkpoints=10,
            log={"progress": False},
            train={"ppo": {"num_envs": 16, "num_steps": 8, "total_timesteps": 16 * 8 * 4, "lr": 0.05},
                   "eval_every": 4, "eval_envs": 4, "eval_steps": 4, "average_decay": 0.5})


# ~40 s (a two-seed run, then the script): with the slow checks
@pytest.mark.heavy
def test_mixtures_of_a_run_history(experiment_script, tmp_path, capsys):
    mix = experiment_script("checkpoint_mixture")
    run = str(tmp_path / "run")
    runner.run(runner.prepare(TINY), run_dir=run, quiet=True)
    out = tmp_path / "m.json"
    mix.main([run, "--last", "1.0", "0.25", "--out", str(out)])
    printed = capsys.readouterr().out
    (r,) = json.loads(out.read_text())
    assert r["updates"] == [1, 2, 3, 4] and np.shape(r["iterate"]) == (4, 2) and np.shape(r["average"]) == (4, 2)
    last = r["mixtures"]["0.25"]
    assert last["members"] == 1 and last["from_update"] == 4
    np.testing.assert_allclose(last["iterate"], r["iterate"][-1], rtol=1e-5)  # a mixture of one checkpoint
    np.testing.assert_allclose(last["average"], r["average"][-1], rtol=1e-5)
    # all four checkpoints of seed 1, mixed from their tables on the game tree
    config, learner, states = runs.checkpoints(run)
    env = jaxagents.make("kuhn_poker")
    tree, merged = env.game_tree(), learner.env
    tables = []
    for _, state in states:
        p = jax.tree.map(lambda x: x[1], state.params[ROLE])
        pols = merged.env.inner_policies(merged.inner_policies({ROLE: learner.agents.logits_fn(p, ROLE)}))
        tables.append(policy_from_fn(tree, pols))
    want = float(exploitability(tree, mixture_policy(tree, jnp.stack(tables))))
    np.testing.assert_allclose(r["mixtures"]["1.0"]["iterate"][1], want, rtol=1e-5)
    np.testing.assert_allclose(r["iterate"][0][1], float(exploitability(tree, tables[0])), rtol=1e-5)
    assert f"{np.mean(r['mixtures']['1.0']['iterate']):.4f}" in printed
    with pytest.raises(SystemExit):
        mix.main([run, "--last", "0"])
    assert "--last must be fractions in (0, 1]" in capsys.readouterr().err
