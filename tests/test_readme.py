"""The README's commands and example stay true."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _setup_commands():
    block = re.search(r"```bash\n(.*?)```", README, re.S).group(1)
    return [line for line in block.splitlines() if line.strip()]


def test_exactly_two_setup_commands_and_ci_runs_the_test_one():
    commands = _setup_commands()
    assert len(commands) == 2
    assert "jaxagents" in commands[0] and "pytest" in commands[1]
    ci = (ROOT / ".ci" / "run").read_text()
    assert commands[1] in ci.splitlines(), ".ci/run must run the README's test command verbatim"


def test_vmap_example_runs():
    code = re.search(r"## Ten thousand environments.*?```python\n(.*?)```", README, re.S).group(1)
    code = code.replace("num_envs=10_000", "num_envs=64").replace("split(key, 100)", "split(key, 10)")
    scope: dict = {}
    exec(compile(code, "README.md", "exec"), scope)
    assert scope["ts"].obs["first"].shape == (64, 1, 3, 3, 2)
    assert scope["first_rewards"].shape == (10,)
