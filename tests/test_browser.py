"""The browser helpers of the report tests: a measured value, and a screenshot kept when a check fails."""

from __future__ import annotations

import pytest

from tests import browser

pytestmark = pytest.mark.e2e  # a headless browser


@pytest.fixture
def page(tmp_path):
    if browser.BROWSER is None:
        pytest.skip("no chromium on this machine (CI installs it: .ci/run)")
    path = tmp_path / "page.html"
    path.write_text("<html><body><p id='p'>text</p></body></html>")
    return path


def test_a_failing_check_keeps_a_screenshot_and_still_fails(page, tmp_path, monkeypatch):
    monkeypatch.setattr(browser, "ARTIFACTS", tmp_path / "artifacts")
    with pytest.raises(AssertionError, match="the check"):
        with browser.screenshot_on_failure(page, "failed"):
            raise AssertionError("the check")
    assert (tmp_path / "artifacts" / "failed.png").read_bytes()[:4] == b"\x89PNG"
    with browser.screenshot_on_failure(page, "passed"):
        pass
    assert not (tmp_path / "artifacts" / "passed.png").exists()


def test_setup_runs_before_the_measurement(page):
    value = browser.measured(page, "document.getElementById('p').textContent",
                             setup="document.getElementById('p').textContent = 'changed';")
    assert value == "changed"
