"""The README is a landing page, and every relative link of the README and the docs/ pages reaches
its file and, for a ``#anchor``, a heading of that file (GitHub's heading slugs)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers import anchors

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", REPO / "config" / "README.md", *sorted((REPO / "docs").glob("*.md"))]
README_MAX_LINES = 200
LINK = re.compile(r"\]\(([^)\s]+)\)")


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in LINK.findall(page.read_text()):
        if re.match(r"^[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest.read_text()):
            broken.append(f"{target} (no such heading)")
    return broken


def test_the_readme_is_a_landing_page():
    lines = len((REPO / "README.md").read_text().splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move detail to a docs/ page"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_reaches_its_file_and_heading(page):
    assert not broken_links(page), f"{page.relative_to(REPO)}: {broken_links(page)}"


def test_a_broken_link_and_a_missing_heading_are_found(tmp_path):
    (tmp_path / "other.md").write_text("# Other page\n\n## A section (with punctuation)\n")
    page = tmp_path / "page.md"
    page.write_text("[ok](other.md#a-section-with-punctuation) [gone](missing.md) [bad](other.md#nope) "
                    "[self](#title) [web](https://example.org)\n\n# Title\n")
    assert broken_links(page) == ["missing.md (no such file)", "other.md#nope (no such heading)"]
