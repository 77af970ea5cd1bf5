"""The pages a user reads carry no issue numbers of this project: README.md, BENCHMARKS.md
(included in the site), every page of docs/ outside the archive, and the notebooks' text.
A citation of another project's tracker (``owner/repo issue #N``) is allowed. Reads
text only: no jax, well under a second.
"""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ISSUE = re.compile(r"\b[Ii]ssues? #?\d+|\([Ii]ssues?[ ,)]|\b[Ii]ssues?' targets|\bthe issue's\b")
ELSEWHERE = re.compile(r"[\w.-]+/[\w.-]+ [Ii]ssue #\d+")  # another project's tracker


def user_pages():
    pages = [ROOT / "README.md", ROOT / "BENCHMARKS.md"]
    pages += [p for p in sorted((ROOT / "docs").rglob("*.md"))
              if not {"archive", "_build"} & set(p.relative_to(ROOT / "docs").parts)]
    pages += sorted((ROOT / "notebooks").glob("*.ipynb"))
    return pages


def text(page: Path) -> str:
    if page.suffix == ".ipynb":
        cells = json.loads(page.read_text(encoding="utf-8"))["cells"]
        return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    return page.read_text(encoding="utf-8")


@pytest.mark.parametrize("page", user_pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_issue_numbers(page):
    found = []
    for number, line in enumerate(text(page).splitlines(), 1):
        for m in ISSUE.finditer(ELSEWHERE.sub("", line)):
            found.append(f"line {number}: {m.group(0)!r} in {line.strip()[:100]!r}")
    assert not found, f"{page.relative_to(ROOT)} names issues:\n" + "\n".join(found)
