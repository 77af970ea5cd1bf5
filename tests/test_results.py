"""The results table's final values (``jaxagents.results.final_metrics``)."""

from jaxagents.results import final_metrics


def test_final_training_return_skips_updates_without_episodes():
    rows = [
        {"update": 1, "episodes": 3, "episode_return/cook": 40.0, "eval/return": 1.0},
        {"update": 2, "episodes": 0, "episode_return/cook": 0.0},  # the placeholder of an update with no episode
        {"update": 3, "episodes": 2, "episode_return/cook": 60.0, "episode_return/cook@seeds": [50.0, 70.0]},
        {"update": 4, "episodes": 0, "episode_return/cook": 0.0, "eval/return": 2.0},
    ]
    assert final_metrics(rows) == {"episode_return/cook": 60.0, "eval/return": 2.0}
    # learners that do not report an episode count keep the last value
    assert final_metrics([{"episode_return/a": 1.0}, {"episode_return/a": 0.0}]) == {"episode_return/a": 0.0}
