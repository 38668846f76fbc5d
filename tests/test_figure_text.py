"""A figure's text stays readable at the size the report shows it: the smallest text's height in
the saved PNG (font size at the figure's dpi), scaled down when the image is wider than the report
shows it, is at least MIN_TEXT_PX; a figure that falls short warns when it is saved."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from pipeline_src.figures import shared as common  # noqa: E402


def figure(width_in: float, smallest_pt: float, panels: int = 1):
    fig, axes = plt.subplots(1, panels, squeeze=False, figsize=(width_in, 3), layout="constrained")
    for ax in axes[0]:
        ax.plot([1, 2], [1, 2])
        ax.set_title("a panel", fontsize=smallest_pt + 2)
        ax.tick_params(labelsize=smallest_pt)
    return fig


def test_a_narrow_figure_shows_its_text_at_full_size():
    fig = figure(6, 7)
    assert common.text_px_in_report(fig) == pytest.approx(7 * common.DPI / 72)
    plt.close(fig)


def test_a_wide_figure_is_shrunk_to_the_report_width_and_its_small_text_flagged():
    fig = figure(15, 7, panels=5)  # Figure 4's old single row: 2266 px, 7-pt labels about 6.7 px
    shown = common.text_px_in_report(fig)
    plt.close(fig)
    assert shown < common.MIN_TEXT_PX
    assert shown == pytest.approx(7 * common.DPI / 72 * common.REPORT_WIDTH_PX / (15.2 * common.DPI), rel=0.05)


def test_saving_a_figure_with_text_too_small_warns(tmp_path, capsys):
    common.save_figure(figure(15, 7, panels=5), [tmp_path / "wide.png"], "plot_wide", {"seed": 0}, [],
                       stage="language_figures")
    assert "plot_wide: its smallest text shows" in capsys.readouterr().err
    common.save_figure(figure(6, 7), [tmp_path / "narrow.png"], "plot_narrow", {"seed": 0}, [],
                       stage="language_figures")
    assert "smallest text" not in capsys.readouterr().err


def test_a_wrapped_title_does_not_widen_the_figure():
    fig = figure(6, 8)
    common.suptitle(fig, "a long title " * 20)
    width = fig.get_tightbbox(fig.canvas.get_renderer()).width
    plt.close(fig)
    assert width <= 6.05
