"""``jaxagents train ENV_ID`` for every registered id: each id resolves to the bundled
config that trains it, and each trains for two updates through the CLI. The default
suite trains one id (ippo; a few CPU-seconds); ``-m slow``
a sample of the other families, ``-m heavy`` every other id (text Kuhn poker's config is trained end to end by
``tests/lm/test_selfplay.py``)."""

import json

import pytest
import yaml
from jaxagents_baselines import ENV_DEFAULTS, TEXT_PREFIX, env_ids, for_env, resolve

from jaxagents.cli import main as cli_main
from jaxagents.core import registry

IDS = registry.list_envs()
TEXT = [i for i in IDS if i.startswith(TEXT_PREFIX)]
# one id for the default suite (self-play's matching_pennies with the slow checks)
CHEAP = ["prisoners_dilemma"]


def tiny(env_id: str) -> list[str]:
    """Overrides that shrink the id's bundled config to two updates of two short rollouts."""
    with open(resolve(env_id)) as f:
        learner = yaml.safe_load(f)["learner"]
    if learner == "selfplay":
        return ["train.ppo.num_envs=4", "train.ppo.num_steps=4", "train.ppo.total_timesteps=32",
                "train.ppo.num_minibatches=1", "train.ppo.update_epochs=1",
                "train.eval_every=1", "train.eval_envs=4", "train.eval_steps=4", "checkpoint_every=0"]
    if learner == "lm_selfplay":  # four turns of two games (an unfinished game is not trained on)
        return ["train.num_envs=2", "train.num_steps=4", "train.total_timesteps=16", "train.eval_every=1",
                "train.eval_games=0", "train.grad_chunks=1",  # (the configs' pieces need their batch)
                "checkpoint_every=0"]  # (matches: tests/lm/test_selfplay.py)
    assert learner in ("ippo", "mappo"), learner  # the learners the by-name configs use
    return ["train.num_envs=2", "train.num_steps=4", "train.total_timesteps=16", "train.num_minibatches=1",
            "train.update_epochs=1", "num_seeds=1", "checkpoint_every=0"]


def train_by_name(env_id: str, tmp_path) -> dict:
    run = tmp_path / env_id
    assert cli_main(["train", env_id, *tiny(env_id), "--run-dir", str(run), "--quiet"]) == 0
    with open(run / "config.yaml") as f:
        config = yaml.safe_load(f)
    assert config["env"]["id"] == env_id
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["update"] for r in rows][-1] == 2  # both updates ran and were logged
    return config


def test_every_id_has_a_config():
    """100% of registered ids: a bundled config whose env.id is the id (the default among
    several)."""
    by_env = env_ids()
    for env_id in IDS:
        name = for_env(env_id)
        assert env_id in by_env and name in by_env[env_id]
        assert resolve(env_id).endswith(f"/{name}.yaml")
    for env_id, name in ENV_DEFAULTS.items():  # every default names a bundled config of its id
        assert name in by_env.get(env_id, []), (env_id, name)
    assert TEXT and all(for_env(i).startswith("lm_selfplay_") for i in TEXT)


def test_a_text_game_without_a_config_answers_in_one_line(tmp_path, capsys, monkeypatch):
    import jaxagents_baselines

    monkeypatch.setattr(jaxagents_baselines, "env_ids", lambda: {})
    run = tmp_path / "run"
    assert cli_main(["train", TEXT[0], "--run-dir", str(run), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and TEXT[0] in err and "language models" in err
    assert not run.exists()


def test_env_id_takes_overrides_of_its_config(tmp_path, capsys):
    """Overrides apply on top of the id's config; a bad one fails before anything is written."""
    run = tmp_path / "run"
    assert cli_main(["train", "lbf", "train.no_such_key=1", "--run-dir", str(run), "--quiet"]) == 2
    assert "no_such_key" in capsys.readouterr().err and not run.exists()


@pytest.mark.parametrize("env_id", CHEAP)
def test_train_by_name(env_id, tmp_path):
    train_by_name(env_id, tmp_path)


# under -m slow one id of each other family (self-play, a grid game, a robot scenario,
# the economy, mean-field; a language game's config trains in tests/lm/test_selfplay.py);
# every other id under -m heavy (about 15 minutes)
SAMPLE = ["matching_pennies", "overcooked", "robots_navigation", "market", "mf_crowd"]


@pytest.mark.parametrize("env_id", [pytest.param(i, marks=pytest.mark.slow if i in SAMPLE else pytest.mark.heavy)
                                    for i in IDS if i not in CHEAP and i != "text_kuhn_poker"])
def test_train_by_name_every_id(env_id, tmp_path):
    train_by_name(env_id, tmp_path)
