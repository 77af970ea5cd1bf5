"""Every bundled baseline config loads, validates and builds its learner (no
compile: building traces nothing but shapes)."""

import pytest

from jaxagents_baselines._main import CONFIG_DIR, configs, resolve
from jaxagents import runner


@pytest.mark.parametrize("name", configs())
def test_config_builds(name):
    cfg = runner.load_config(resolve(name))
    assert cfg["name"] == name
    assert name.startswith(cfg["learner"] + "_")
    train = runner.build(cfg)
    assert train.num_updates >= 1


def test_unknown_config_lists_bundled():
    with pytest.raises(SystemExit, match="bundled"):
        resolve("no_such_config")


def test_learner_mismatch(tmp_path):
    from jaxagents_baselines._main import main

    with pytest.raises(SystemExit, match="selfplay config"):
        main("ippo", "selfplay_kuhn", ["selfplay_kuhn"])
