"""A report as a person sees it: rendered by a real headless browser (Debian's ``chromium``), its
visible text with whitespace collapsed, values measured in it, and a screenshot kept when a check
of it fails. CI installs the browser (``.ci/run``); elsewhere the tests that need it are skipped
when it is missing."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from contextlib import contextmanager
from html.parser import HTMLParser
from pathlib import Path

import pytest

BROWSER = next((name for name in ("chromium", "chromium-browser") if shutil.which(name)), None)
# where a failing browser check leaves its screenshot (ignored by git)
ARTIFACTS = Path(os.environ.get("LENGTHGEN_TEST_ARTIFACTS", Path(__file__).resolve().parents[1] / "test-artifacts"))


BLOCKS = {"p", "div", "li", "ul", "ol", "dl", "dt", "dd", "table", "tr", "td", "th", "br", "h1", "h2", "h3",
          "h4", "h5", "h6", "section", "nav", "header", "footer"}


class _VisibleText(HTMLParser):
    """Text outside scripts and styles; a space where a block element starts or ends, none within
    a line (``<b>figure1</b>:`` reads "figure1:")."""

    def __init__(self):
        super().__init__()
        self.hidden = 0
        self.parts: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.hidden += tag in ("script", "style")
        self.parts.append(" " if tag in BLOCKS else "")

    def handle_endtag(self, tag):
        self.hidden -= tag in ("script", "style")
        self.parts.append(" " if tag in BLOCKS else "")

    def handle_data(self, data):
        if not self.hidden:
            self.parts.append(data)


def rendered_text(page: Path) -> str:
    """The visible text of ``page`` once the browser has run its scripts (their timers let run, so a
    page still building itself on a busy machine is not read half-made)."""
    if BROWSER is None:
        pytest.skip("no chromium on this machine (CI installs it: .ci/run)")
    done = _in_window(Path(page), (1280, 800), "--dump-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    assert not re.search(r'<div id="app">\s*</div>', done.stdout), (
        f"{page}: the report's scripts had not built the page")
    parser = _VisibleText()
    parser.feed(done.stdout)
    return re.sub(r"\s+", " ", "".join(parser.parts))


def measured(page: Path, expression: str, window: tuple[int, int] = (1280, 800), setup: str = "") -> str:
    """The value of the JavaScript ``expression`` in ``page`` as the browser shows it in a window of
    ``window`` pixels, a moment after load (the report builds its page with scripts); ``setup``, a
    JavaScript statement, runs half-way through that moment (e.g. to open a view of the page)."""
    if BROWSER is None:
        pytest.skip("no chromium on this machine (CI installs it: .ci/run)")
    probe = _probe(page, setup, " setTimeout(function () { var out; try { out = String(" + expression + "); }"
                   " catch (err) { out = 'error: ' + err; } document.title = 'MEASURED[' + out + ']'; }, 1500);")
    done = _in_window(probe, window, "--dump-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r"MEASURED\[(.*?)\]", done.stdout)
    assert found, "the measuring script did not run"
    return found[1]


def _in_window(page: Path, window: tuple[int, int], output: str) -> subprocess.CompletedProcess:
    """The browser run on ``page`` in a window of ``window`` pixels, its timers let run, writing
    ``output`` (``--dump-dom`` or ``--screenshot=FILE``)."""
    return subprocess.run([BROWSER, "--headless", "--no-sandbox", "--disable-gpu", output,
                           f"--window-size={window[0]},{window[1]}", "--virtual-time-budget=10000",
                           Path(page).resolve().as_uri()], capture_output=True, text=True, timeout=120)


def _probe(page: Path, setup: str, script: str = "") -> Path:
    """A copy of ``page`` that runs ``setup`` a moment after load, then ``script``."""
    probe = Path(page).with_name(Path(page).stem + ".measured.html")
    code = "<script>setTimeout(function () { " + setup + " }, 750);" + script + "</script>"
    probe.write_text(Path(page).read_text().replace("</body>", code + "</body>"))
    return probe


@contextmanager
def screenshot_on_failure(page: Path, name: str, window: tuple[int, int] = (1280, 800), setup: str = ""):
    """Run the checks of the ``with`` block; if one fails, keep a screenshot of ``page`` as the
    browser shows it (after ``setup``) in :data:`ARTIFACTS` as ``name``.png, and fail as it did."""
    try:
        yield
    except AssertionError:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shot = ARTIFACTS / f"{name}.png"
        _in_window(_probe(page, setup), window, f"--screenshot={shot}")
        raise
