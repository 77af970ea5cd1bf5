"""Every bundled baseline config loads, validates and builds its learner (no
compile: building traces nothing but shapes), and ``jaxagents train`` finds one by
name."""

import pytest
from jaxagents_baselines import configs, resolve

from jaxagents import runner
from jaxagents.cli import main as cli_main


# the language-model configs build their games' evaluators (every information state
# rendered to its prompt: 10-70 s each): they build under -m slow, Leduc's and the
# multi-game's and the transfer one's (1-2 minutes) under -m heavy
HEAVY_CONFIGS = {"lm_selfplay_leduc", "lm_selfplay_multigame", "lm_selfplay_transfer"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.heavy if n in HEAVY_CONFIGS else pytest.mark.slow)
                                  if n.startswith("lm_selfplay_") else n for n in configs()])
def test_config_builds(name):
    cfg = runner.load_config(resolve(name))
    assert cfg["name"] == name
    assert name.startswith(cfg["learner"] + "_")
    train = runner.build(cfg)
    assert train.num_updates >= 1


def test_names_resolve_and_unknown_names_list_the_bundled(tmp_path):
    assert resolve("selfplay_kuhn") == resolve("selfplay_kuhn.yaml")
    assert configs("qmix") == ["qmix_mpe_simple_spread", "qmix_smax_3m"]
    with pytest.raises(ValueError, match="bundled: .*selfplay_kuhn"):
        resolve("no_such_config")
    with pytest.raises(ValueError, match="neither a file"):  # a path is never looked up among the bundled
        resolve(str(tmp_path / "selfplay_kuhn"))


def test_train_takes_a_bundled_name(tmp_path, capsys):
    """``jaxagents train NAME`` is the baselines' entry point: the bundled config, with
    overrides, into the run directory (checked up to the run's config.yaml, which is
    written before anything is compiled: a bad override fails first)."""
    run = tmp_path / "run"
    code = cli_main(["train", "ippo_overcooked_cramped_room", "train.no_such_key=1", "--run-dir", str(run), "--quiet"])
    assert code == 2 and "no_such_key" in capsys.readouterr().err
    assert not run.exists()  # nothing written for a bad override
