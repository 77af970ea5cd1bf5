"""Every results page opens with a summary table (docs/results*.md).

The page's first non-blank line is its ``# `` title and the summary table follows it:
directly, or after at most a short intro paragraph (docs/results.md and
docs/results_gtb.md have one), with no heading in between. The table has a header row,
its ``|---|`` separator and at least one data row, every row with the header's number
of cells. Reads the Markdown only: no jax, well under a second.
"""

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
PAGES = sorted(DOCS.glob("results*.md"))
MAX_LINES_BEFORE_TABLE = 10  # non-blank lines after the title, the table's first row included
SEPARATOR = re.compile(r"^\|(\s*:?-+:?\s*\|)+\s*$")


def cells(row):
    """The cells of a table row; an escaped ``\\|`` does not split a cell."""
    return re.split(r"(?<!\\)\|", row.strip().strip("|"))


def test_there_are_results_pages():
    assert any(p.name == "results.md" for p in PAGES), f"no docs/results.md under {DOCS}"


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_page_opens_with_a_summary_table(page):
    name = f"docs/{page.name}"
    lines = [line.rstrip() for line in page.read_text(encoding="utf-8").splitlines()]
    non_blank = [i for i, line in enumerate(lines) if line.strip()]
    assert non_blank, f"{name} is empty"

    title = lines[non_blank[0]]
    assert title.startswith("# "), f"{name}: the first non-blank line must be a '# ' title, got {title!r}"

    start = None
    for i in non_blank[1 : 1 + MAX_LINES_BEFORE_TABLE]:
        if lines[i].startswith("|"):
            start = i
            break
        assert not lines[i].startswith("#"), (
            f"{name}: heading {lines[i]!r} comes before the summary table; the table must open the page"
        )
    assert start is not None, (
        f"{name}: no table ('|' line) within the first {MAX_LINES_BEFORE_TABLE} non-blank lines after the title"
    )

    table = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        table.append(line)
    assert len(table) >= 2 and SEPARATOR.match(table[1]), (
        f"{name}: the summary table needs a header row and a '|---|' separator row, got {table[:2]!r}"
    )
    assert len(table) >= 3, f"{name}: the summary table has a header but no data row"
    width = len(cells(table[0]))
    assert width >= 2, f"{name}: the summary table's header has fewer than 2 columns: {table[0]!r}"
    for row in table[1:]:
        assert len(cells(row)) == width, (
            f"{name}: summary table row has {len(cells(row))} cells, the header {width}: {row[:80]!r}"
        )
