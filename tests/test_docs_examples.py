"""The Python examples of the user pages run as written (budgets shrunk where a page
trains), so the pages cannot drift from the API. Every ```python block of each page
below is executed in a fresh namespace; a page loses none of its blocks unnoticed
(each is counted)."""

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"

# page: (python blocks on it, replacements applied before running, slow)
PAGES = {
    "contract.md": (3, {}, False),
    "environments/index.md": (2, {}, False),
    "evaluation.md": (2, {}, False),
    # compiling a PPO training program takes 20-40 s on 2 CPU cores
    "learners.md": (1, {"num_envs=16, num_steps=128, total_timesteps=1_000_000": "num_envs=4, num_steps=8, total_timesteps=64"},
                    True),
    "populations.md": (1, {}, True),
}


def blocks(page: str) -> list[str]:
    """The ```python blocks of ``docs/PAGE``."""
    return re.findall(r"^```python\n(.*?)^```", (DOCS / page).read_text(), re.S | re.M)


def _cases():
    for page, (count, _, slow) in PAGES.items():
        marks = [pytest.mark.slow] if slow else []
        for i in range(count):
            yield pytest.param(page, i, marks=marks, id=f"{page}[{i}]")


@pytest.mark.parametrize("page", list(PAGES))
def test_every_block_is_run(page):
    assert len(blocks(page)) == PAGES[page][0], f"docs/{page}: update PAGES in {Path(__file__).name}"


@pytest.mark.parametrize("page, index", list(_cases()))
def test_example_runs(page, index):
    code = blocks(page)[index]
    for old, new in PAGES[page][1].items():
        assert old in code, f"docs/{page}: {old!r} is no longer in the example"
        code = code.replace(old, new)
    exec(compile(code, f"docs/{page}[{index}]", "exec"), {"__name__": "docs_example"})
