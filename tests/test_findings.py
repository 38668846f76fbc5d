"""`lengthgen findings`: the paper's findings judged from result tables, each criterion built to
be reproduced, contradicted and undecided on small hand-made tables of six seeds per run (the
tests' error rates: tests/test_significance.py), missing results and the Markdown output; each
figure's caption stating its finding; the run summary (`--export`, `--from-summary`) judged as
its tables are; the README's table as the committed summary's."""

from __future__ import annotations

import copy
import re
import subprocess
import sys

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

from pipeline_src.cli import main
from pipeline_src.findings import judge as judged
from pipeline_src.findings import run_summary
from pipeline_src.findings.claim_file import load_claims
from pipeline_src.planning import jobs, paths, studies
from pipeline_src.planning import language_jobs as lang
from pipeline_src.runs import run_findings
from pipeline_src.runs.judged_config import finding_tables
from pipeline_src.tasks import get_task
from tests.conftest import REPO, default_config
from tests.helpers import F1_TASK, F2_TASK, F3_TASK, claim, flat, influence_table, write_run

F1_SCHEME = claim("F1").compare[0].better.scheme  # the scheme F1 compares (RoPE + PoSE)
N_SEEDS = 6  # seeds per run: the fewest at which a paired comparison is significant among F1's three (Holm)


def offsets(width: float) -> np.ndarray:
    """Each seed's offset from a run's mean: evenly spread over [-width, width]."""
    return np.linspace(-width, width, N_SEEDS)


@pytest.fixture(scope="module")
def base_config() -> dict:
    return default_config()


@pytest.fixture
def config(base_config) -> dict:
    config = copy.deepcopy(base_config)
    for task in (F1_TASK, F2_TASK, F3_TASK):
        config[task]["seeds"] = list(range(N_SEEDS))
    return config


def write_seeds(results, config, task, variant, scheme, accuracies, **kw) -> None:
    """One table per seed of ``accuracies`` (a list of functions (k, length) -> accuracy)."""
    for seed, accuracy in zip(config[task]["seeds"], accuracies, strict=False):
        write_run(results, config, task, variant, scheme, seed, accuracy, **kw)


def judge_folder(config, results) -> list[judged.Finding]:
    """The four findings of ``config``'s runs judged from the tables under ``results``."""
    return run_findings.findings(config, run_findings.table_rows(config, finding_tables(config, results)))


def row(config, results, name: str) -> judged.Finding:
    return {finding.finding: finding for finding in judge_folder(config, results)}[name]


# --- F1: sparse parity, RoPE + PoSE ---


def f1_run(config, results, variant: str, at_longest: dict[int, float], jitter: float = 0.01,
           wide: dict[int, float] | None = None) -> None:
    """The run's accuracy at the longest length by k_test (0.5, chance, for k_test not listed), 1.0
    at every shorter length; its seeds spread up to ``jitter`` either side (``wide[k]`` at the
    k_test of ``wide``)."""
    longest = max(config[F1_TASK]["eval"]["lengths"])
    wide = wide or {}

    def seed(step):
        def accuracy(k, length):
            if length != longest:
                return 1.0
            return min(1.0, max(0.0, at_longest.get(k, 0.5) + step * wide.get(k, jitter)))
        return accuracy
    write_seeds(results, config, F1_TASK, variant, F1_SCHEME, [seed(step) for step in offsets(1.0)])


def k_variants(config) -> list[tuple[str, int]]:
    layout = get_task(F1_TASK).layout
    return sorted(((v, layout.params(v)["k_train"]) for v in jobs.variants(config, F1_TASK)), key=lambda vk: vk[1])


def falling(top: int, start: float = 0.95, step: float = 0.08) -> dict[int, float]:
    """Accuracy falling with k_test, k_test = 1..top."""
    return {k: start - step * (k - 1) for k in range(1, top + 1)}


@pytest.mark.parametrize("a_holds, b_holds, expected", [(True, True, judged.REPRODUCED),
                                                         (True, False, judged.UNDECIDED),
                                                         (False, True, judged.CONTRADICTED),
                                                         (False, False, judged.CONTRADICTED)])
def test_f1_falls_with_k_test_and_larger_k_train_extends_it(tmp_path, config, a_holds, b_holds, expected):
    (low_variant, low_k), (high_variant, high_k) = k_variants(config)[:2]
    config[F1_TASK]["k_train"] = [low_k, high_k]
    high = falling(high_k) if a_holds else {k: 0.6 + 0.08 * k for k in range(1, high_k + 1)}  # rises instead
    low = falling(low_k) if a_holds else {k: 0.6 + 0.08 * k for k in range(1, low_k + 1)}
    if not b_holds:  # the small K_train's model as good at the k_test only the larger one was trained on
        low.update({k: high[k] for k in high if k > low_k})
    f1_run(config, tmp_path, low_variant, low)
    f1_run(config, tmp_path, high_variant, high)
    found = row(config, tmp_path, "F1")
    assert found.verdict.split(":")[0] == expected, found.numbers
    assert str(max(config[F1_TASK]["eval"]["lengths"])) in found.criterion
    assert len(found.comparisons) == 3 and f"({N_SEEDS} paired seeds)" in found.numbers


def test_f1_a_difference_the_seeds_do_not_separate_is_undecided(tmp_path, config):
    (low_variant, low_k), (high_variant, high_k) = k_variants(config)[:2]
    config[F1_TASK]["k_train"] = [low_k, high_k]
    judged_k = max(k for k in config[F1_TASK]["eval"]["k_test"] if low_k < k <= high_k)
    high = falling(high_k, start=0.98, step=0.12)
    low = {**falling(low_k, start=0.98, step=0.12), judged_k: high[judged_k] - 0.1}  # (b) turns on the spread
    for folder, spread in ((tmp_path / "wide", 0.3), (tmp_path / "tight", 0.01)):  # high's seeds 0.6 or 0.02 apart
        f1_run(config, folder, low_variant, low)
        f1_run(config, folder, high_variant, high, wide={judged_k: spread})
    wide = row(config, tmp_path / "wide", "F1")  # (a) holds, (b) within the spread
    assert re.match(rf"{judged.UNDECIDED}: .* p = [\d.]+; about ", wide.verdict), wide.numbers
    assert row(config, tmp_path / "tight", "F1").verdict == judged.REPRODUCED


# --- F2: parity with a scratchpad ---


def f2_beyond(config) -> int:
    """The first evaluated length at least 1.5x the training length (where F2 judges)."""
    train_max = get_task(F2_TASK).train_lengths(config[F2_TASK]["data"])[1]
    return min(length for length in config[F2_TASK]["eval"]["lengths"] if length >= 1.5 * train_max)


def beyond_training(config, task, inside: float, beyond: float):
    """1.0 within the training lengths, ``inside`` up to 1.5x, ``beyond`` from there."""
    train_max = get_task(task).train_lengths(config[task]["data"])[1]
    return lambda k, length: 1.0 if length <= train_max else (inside if length < 1.5 * train_max else beyond)


def coupled_and_others(config) -> tuple[list[str], list[str]]:
    from pipeline_src.schemes import get_scheme

    schemes = config[F2_TASK]["runs"]["scratchpad"]
    return [s for s in schemes if get_scheme(s).coupled], [s for s in schemes if not get_scheme(s).coupled]


@pytest.mark.parametrize("holding, expected", [("all", judged.REPRODUCED), ("one", judged.UNDECIDED),
                                               ("reversed", judged.CONTRADICTED)])
def test_f2_coupled_schemes_above_every_other_scheme(tmp_path, config, holding, expected):
    coupled, others = coupled_and_others(config)
    assert len(coupled) >= 2 and others
    for i, scheme in enumerate(coupled):
        good = holding == "all" or (holding == "one" and i == 0)
        value = 0.8 if good else 0.1
        write_seeds(tmp_path, config, F2_TASK, "scratchpad", scheme,
                    [beyond_training(config, F2_TASK, 0.9, value + offset) for offset in offsets(0.02)])
    for scheme in others:
        value = 0.8 if holding == "reversed" else 0.1
        write_seeds(tmp_path, config, F2_TASK, "scratchpad", scheme,
                    [beyond_training(config, F2_TASK, 0.3, value)] * N_SEEDS)
    found = row(config, tmp_path, "F2")
    assert found.verdict.split(":")[0] == expected, found.numbers
    assert f"length {f2_beyond(config)}" in found.criterion


def test_f2_a_difference_the_seeds_do_not_separate_is_undecided(tmp_path, config):
    coupled, others = coupled_and_others(config)
    for scheme in coupled:  # mean 0.5, 0.2 above the others, but the seeds from 0.1 to 0.9
        write_seeds(tmp_path, config, F2_TASK, "scratchpad", scheme, [flat(0.5 + d) for d in offsets(0.4)])
    for scheme in others:
        write_seeds(tmp_path, config, F2_TASK, "scratchpad", scheme, [flat(0.3)] * N_SEEDS)
    assert re.match(rf"{judged.UNDECIDED}: ppc vs .* p = [\d.]+; about ", row(config, tmp_path, "F2").verdict)
    for scheme in coupled:  # the same mean, the seeds together
        write_seeds(tmp_path, config, F2_TASK, "scratchpad", scheme, [flat(0.5 + d) for d in offsets(0.01)])
    assert row(config, tmp_path, "F2").verdict == judged.REPRODUCED


@pytest.mark.parametrize("coupled_values, other_values, expected", [
    ((0.1, 1.0), (0.1, 0.0), judged.UNDECIDED),  # answer accuracy alone would say reproduced
    ((0.9, 0.9), (0.0, 0.9), judged.REPRODUCED),  # answer accuracy alone would say not
])
def test_f2_reads_the_headline_metric_only(tmp_path, config, coupled_values, other_values, expected):
    """Exact match (the scratchpad's headline metric) decides; answer-token accuracy takes no part."""
    coupled, others = coupled_and_others(config)
    for schemes, (exact, answer) in ((coupled, coupled_values), (others, other_values)):
        for scheme in schemes:
            write_seeds(tmp_path, config, F2_TASK, "scratchpad", scheme, [flat(exact)] * N_SEEDS, other_metric=answer)
    assert row(config, tmp_path, "F2").verdict.split(":")[0] == expected


def test_a_run_with_a_seed_missing_uses_the_seeds_present_and_says_so(tmp_path, config):
    coupled, others = coupled_and_others(config)
    seeds = config[F2_TASK]["seeds"]
    assert len(seeds) >= 2
    for scheme in coupled:
        for seed in seeds[1:]:  # the first seed missing
            write_run(tmp_path, config, F2_TASK, "scratchpad", scheme, seed, flat(0.9))
    for scheme in others:
        write_seeds(tmp_path, config, F2_TASK, "scratchpad", scheme, [flat(0.0)] * len(seeds))
    found = row(config, tmp_path, "F2")
    assert found.verdict == judged.REPRODUCED
    assert f"({len(seeds) - 1} and {len(seeds)} seeds)" in found.numbers


# --- F3: variable assignment ---


def f3_runs(config) -> tuple[tuple[str, str], list[tuple[str, str]], list[tuple[str, str]]]:
    """The PPC run with a scratchpad, the non-coupled runs (the paper's baselines) and the rest."""
    from pipeline_src.schemes import get_scheme

    runs = [(v, s) for v, schemes in config[F3_TASK]["runs"].items() for s in schemes]
    ppc = next(run for run in runs if run[0] == "scratchpad" and get_scheme(run[1]).predicts_positions)
    baselines = [run for run in runs if not get_scheme(run[1]).coupled]
    return ppc, baselines, [run for run in runs if run != ppc and run not in baselines]


@pytest.mark.parametrize("beaten, expected", [("all", judged.REPRODUCED), ("tied", judged.UNDECIDED),
                                              ("some", judged.CONTRADICTED)])
def test_f3_ppc_with_a_scratchpad_above_the_baselines(tmp_path, config, beaten, expected):
    """The baselines below PPC (all), one of them level with it (tied) or above it (some)."""
    ppc, baselines, rest = f3_runs(config)
    assert len(baselines) >= 2
    write_seeds(tmp_path, config, F3_TASK, *ppc, [beyond_training(config, F3_TASK, 0.9, 0.7)] * N_SEEDS)
    for i, run in enumerate(baselines + rest):
        value = 0.2 if run in rest or beaten == "all" or i > 0 else {"tied": 0.7, "some": 0.9}[beaten]
        write_seeds(tmp_path, config, F3_TASK, *run, [beyond_training(config, F3_TASK, 0.5, value)] * N_SEEDS)
    found = row(config, tmp_path, "F3")
    assert found.verdict.split(":")[0] == expected, found.numbers


@pytest.mark.parametrize("best_in_training, expected", [(0.85, "undecided: nothing learned at the training length"),
                                                        (0.95, judged.REPRODUCED)])
def test_f3_nothing_learned_is_undecided(tmp_path, config, best_in_training, expected):
    """Below 0.9 at the training length for every run: nothing was learned, whatever the ordering."""
    ppc, baselines, rest = f3_runs(config)
    train_max = get_task(F3_TASK).train_lengths(config[F3_TASK]["data"])[1]
    write_seeds(tmp_path, config, F3_TASK, *ppc,
                [lambda k, length: best_in_training if length <= train_max else 0.5] * N_SEEDS)
    for run in baselines + rest:
        write_seeds(tmp_path, config, F3_TASK, *run,
                    [lambda k, length: 0.3 if length <= train_max else 0.1] * N_SEEDS)
    assert row(config, tmp_path, "F3").verdict == expected


# --- F4: natural language ---


@pytest.mark.parametrize("own, other, expected", [
    ((0.75, 0.85), (0.15, 0.25), judged.REPRODUCED),  # apart, own above
    ((0.15, 0.25), (0.75, 0.85), judged.CONTRADICTED),  # apart, the other document above
    ((0.0, 1.6), (0.0, 1.0), f"{judged.UNDECIDED}: the two intervals overlap (12 targets); about "),  # medians 0.8, 0.5
])
def test_f4_own_far_tokens_against_another_documents(tmp_path, config, own, other, expected):
    rng = np.random.default_rng(0)
    n = 12
    influence_table(config, tmp_path, rng.uniform(*own, n), rng.uniform(*other, n))
    found = row(config, tmp_path, "F4")
    assert found.verdict.startswith(expected), found.numbers
    assert f"{n} of {n} targets" in found.numbers


def test_f4_undecided_says_how_many_targets_would_part_the_intervals(tmp_path, config):
    """The targets F4's overlapping intervals ask for, at their measured spread. Own fractions drawn
    uniform on [0, 1.6], the other document's on [0, 1]: a median's 95% interval is about
    +-1.96 w / (2 sqrt(n)) for a uniform of width w, so the two part at about 72 targets. Over 20
    pilots of 24 targets, the median answer of those whose intervals overlap is near that (it leans
    high: the overlapping draws are those whose medians came out close)."""

    answers = []
    for seed in range(20):
        rng = np.random.default_rng(seed)
        influence_table(config, tmp_path / str(seed), rng.uniform(0.0, 1.6, 24), rng.uniform(0.0, 1.0, 24))
        verdict = row(config, tmp_path / str(seed), "F4").verdict
        if verdict != judged.REPRODUCED:
            found = re.search(r"about ([\d,]+) analysed targets would part them at the measured spread \(24 now\)",
                              verdict)
            assert found, verdict
            answers.append(int(found[1].replace(",", "")))
    assert len(answers) >= 10 and 48 <= np.median(answers) <= 200, answers


def test_f4_undecided_with_the_own_median_below_says_the_targets_the_other_way(tmp_path, config):
    """Own far tokens recovering less than another document's, within the spread: the intervals
    would part the other way, and the verdict says after how many targets (the same formula, by the
    size of the difference), not that no number would."""
    rng = np.random.default_rng(3)
    influence_table(config, tmp_path, rng.uniform(0.0, 1.0, 12), rng.uniform(0.2, 1.2, 12))
    verdict = row(config, tmp_path, "F4").verdict
    assert verdict.startswith("undecided: the two intervals overlap"), verdict
    found = re.search(r"about ([\d,]+) analysed targets would part them at the measured spread, the other way", verdict)
    assert found and int(found[1].replace(",", "")) > 12, verdict


# --- missing results and the output ---


def test_no_tables_is_no_results_not_an_error(tmp_path, config):
    assert all(f.verdict.startswith("undecided: no results") for f in judge_folder(config, tmp_path))
    config["language"]["enabled"] = False
    assert "no natural-language analysis" in row(config, tmp_path, "F4").numbers


def test_markdown_table_and_printed_findings(tmp_path, monkeypatch, config):
    coupled, others = coupled_and_others(config)
    for scheme in coupled:
        write_seeds(tmp_path / "results", config, F2_TASK, "scratchpad", scheme, [flat(0.9)] * N_SEEDS)
    for scheme in others:
        write_seeds(tmp_path / "results", config, F2_TASK, "scratchpad", scheme, [flat(0.0)] * N_SEEDS)
    extra = tmp_path / "only_parity.yaml"
    extra.write_text(f"tasks: [{F2_TASK}]\nlanguage: {{enabled: false}}\n"
                     f"{F2_TASK}: {{seeds: {list(range(N_SEEDS))}}}\n")
    monkeypatch.chdir(REPO)  # config/config.yaml, merged under --configfile
    out = tmp_path / "findings.md"
    done = CliRunner().invoke(main, ["findings", str(tmp_path / "results"), "--configfile", str(extra),
                                     "--markdown", str(out)])
    assert done.exit_code == 0, done.output
    assert "F2: reproduced" in done.output and "F1: undecided: no results" in done.output
    assert "p = 0.00108, significant" in " ".join(done.output.split())  # 6 seeds a side: 1 / C(12, 6)
    lines = out.read_text().splitlines()
    assert lines[0] == "| finding | claim | criterion | numbers | verdict |"
    assert lines[1] == "|---|---|---|---|---|"
    assert [line.split(" | ")[0] for line in lines[2:]] == ["| F1", "| F1'", "| F1r", "| F2", "| F3", "| F4", "| F4'",
                                                          "| forecast"]
    verdicts = [line.rstrip(" |").rsplit(" | ", 1)[1] for line in lines[2:]]
    assert verdicts[3] == judged.REPRODUCED
    assert all(verdict.startswith("undecided: no results") for i, verdict in enumerate(verdicts) if i != 3)
    assert all(line.count(" | ") == 4 for line in lines[2:])  # no cell breaks the table


@pytest.mark.e2e
def test_findings_read_tables_without_torch(tmp_path, base_config):
    """The command reads tables only: judging every finding (F4's influence table included) never
    imports torch."""
    rng = np.random.default_rng(0)
    influence_table(base_config, tmp_path, rng.uniform(0.7, 0.9, 8), rng.uniform(0.1, 0.3, 8))
    write_seeds(tmp_path, base_config, F2_TASK, "scratchpad", coupled_and_others(base_config)[0][0], [flat(0.5)])
    code = ("import sys\nfrom pipeline_src.cli import main\n"
            f"main(args=['findings', {str(tmp_path)!r}], standalone_mode=False)\n"
            "print('torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert "F4: reproduced" in done.stdout
    assert done.stdout.strip().splitlines()[-1] == "False"


def test_readme_marks_the_findings_table():
    readme = (REPO / "README.md").read_text()
    begin, _ = run_findings.readme_block(readme, REPO / "README.md")
    assert "lengthgen findings" in readme[:begin]


# --- each figure's caption states its finding ---


def write_f2(results, config, coupled_value: float, other_value: float) -> None:
    """F2's tables: every coupled scheme at ``coupled_value``, every other at ``other_value``."""
    coupled, others = coupled_and_others(config)
    for schemes, value in ((coupled, coupled_value), (others, other_value)):
        for scheme in schemes:
            write_seeds(results, config, F2_TASK, "scratchpad", scheme,
                        [beyond_training(config, F2_TASK, 0.9, value + offset) for offset in offsets(0.02)])


@pytest.mark.parametrize("good, expected", [(True, judged.REPRODUCED), (False, judged.CONTRADICTED)])
def test_a_task_figures_caption_states_its_finding_from_its_own_tables(tmp_path, config, good, expected):
    from pipeline_src.figures.caption import render
    from pipeline_src.planning.task_study import CAPTION_RUN
    from tests.helpers import CAPTION_TASK as TASK
    from tests.helpers import caption_record as record

    write_f2(tmp_path, config, *((0.8, 0.1) if good else (0.1, 0.8)))
    spec = jobs.figure_spec(config, "figure2")
    paragraph = judged.caption("figure2", spec, studies.figure_inputs(config, "figure2", tmp_path), load_claims())
    assert paragraph.startswith(f"**F2: {expected}") and "** (the claim: " in paragraph
    assert f"at length {f2_beyond(config)}" in paragraph  # the criterion, and the numbers it compared
    assert f"ppc {0.8 if good else 0.1:.2f} vs " in paragraph
    text = render((REPO / "workflow" / "report" / "figure2.rst").read_text(), record(TASK, spec), CAPTION_RUN,
                  paragraph)
    assert f"\n{paragraph}\n" in text and text.index(paragraph) < text.index("**This run**")


def test_figure1s_caption_states_f1_whole_and_in_one_clause_the_claims_its_seeds_cannot_judge(tmp_path, config):
    """Seeds below 8 judge F1; F1' (seeds from 8 on) and F1r (from 20 on) are named with why, not stated whole."""
    (low_variant, low_k), (high_variant, high_k) = k_variants(config)[:2]
    config[F1_TASK]["k_train"] = [low_k, high_k]
    f1_run(config, tmp_path, low_variant, falling(low_k))
    f1_run(config, tmp_path, high_variant, falling(high_k))
    spec = jobs.figure_spec(config, "figure1")
    paragraph = judged.caption("figure1", spec, studies.figure_inputs(config, "figure1", tmp_path), load_claims())
    assert paragraph.startswith("**F1: ") and paragraph.count("Criterion: ") == 1
    assert paragraph.endswith("No results here for F1': no seed from 8 on (seeds 0 to 7 were seen by earlier F1 "
                              "verdicts); F1r: no seed from 20 on (earlier verdicts and pilots saw the seeds below).")


@pytest.mark.parametrize("own, other, expected", [((0.75, 0.85), (0.15, 0.25), judged.REPRODUCED),
                                                  ((0.15, 0.25), (0.75, 0.85), judged.CONTRADICTED)])
def test_figure4s_caption_states_f4_from_its_influence_table(tmp_path, config, own, other, expected):
    rng = np.random.default_rng(0)
    influence_table(config, tmp_path, rng.uniform(*own, 12), rng.uniform(*other, 12))
    spec = lang.figure_spec(config, "figure4")
    paragraph = judged.caption("figure4", spec, [paths.under(tmp_path, paths.INFLUENCE)], load_claims())
    assert paragraph.startswith(f"**F4: {expected}**") and "12 of 12 targets" in paragraph


def test_a_figure_without_a_finding_has_no_finding_paragraph(tmp_path, config):
    assert judged.caption("language_pose", lang.figure_spec(config, "language_pose"), [], load_claims()) == ""
    shown = {found.figure for found in load_claims()}
    assert shown <= set(studies.all_figures())  # every finding's figure is one the pipeline draws


# --- the run summary: exported from the tables, judged again ---


def write_all_four(results, config) -> None:
    """Tables for every finding, with seeds apart by uneven amounts (means are not round numbers)."""
    rng = np.random.default_rng(1)
    for index, (variant, k_train) in enumerate(k_variants(config)):  # every K_train the config trains
        f1_run(config, results, variant, falling(k_train), jitter=0.013 + 0.008 * index)
    write_f2(results, config, 0.77, 0.12)
    ppc, baselines, rest = f3_runs(config)
    for run, value in ((ppc, 0.6), *((run, 0.3) for run in baselines + rest)):
        write_seeds(results, config, F3_TASK, *run,
                    [beyond_training(config, F3_TASK, 0.7, value + rng.uniform(-0.05, 0.05))
                     for _ in config[F3_TASK]["seeds"]])
    influence_table(config, results, rng.uniform(0.5, 0.9, 12), rng.uniform(0.3, 0.7, 12))


def test_a_run_summary_gives_the_verdicts_and_numbers_of_its_tables(tmp_path, monkeypatch):
    """`lengthgen findings RESULTS --export F` then `--from-summary F`: the same printed findings and
    the same Markdown, number for number."""
    monkeypatch.chdir(REPO)  # config/config.yaml
    write_all_four(tmp_path / "results", default_config())
    summary = tmp_path / "run.csv"
    from_tables = CliRunner().invoke(main, ["findings", str(tmp_path / "results"), "--export", str(summary),
                                            "--markdown", str(tmp_path / "tables.md")])
    assert from_tables.exit_code == 0, from_tables.output
    assert pl.read_csv(summary).columns == list(run_summary.SCHEMA)
    again = CliRunner().invoke(main, ["findings", "--from-summary", str(summary), "--markdown",
                                      str(tmp_path / "summary.md")])
    assert again.exit_code == 0, again.output
    undated = [[line for line in done.output.splitlines() if not line.startswith("  written ")]
               for done in (again, from_tables)]
    # the same findings; dated by the tables' provenance, or not (an uncommitted summary)
    assert undated[0] == undated[1]
    assert (tmp_path / "summary.md").read_text() == (tmp_path / "tables.md").read_text()
    names = {claim.name for claim in load_claims()}
    verdicts = [line.split(": ", 1)[1] for line in again.output.splitlines() if line.split(": ", 1)[0] in names]
    assert len(verdicts) == len(names), again.output
    # F1', F1r: no fresh seeds; the forecast: no attention tables
    assert [v for v in verdicts if "no results" in v] == [*verdicts[1:3], verdicts[-1]], again.output


def test_a_summary_made_with_another_bootstrap_or_columns_is_refused(tmp_path, config):
    rng = np.random.default_rng(0)
    influence_table(config, tmp_path, rng.uniform(0.5, 0.9, 8), rng.uniform(0.3, 0.7, 8))
    summary = tmp_path / "run.csv"
    run_summary.write(run_findings.table_rows(config, finding_tables(config, tmp_path)), summary)
    config["language"]["figure"]["n_boot"] += 1
    with pytest.raises(run_summary.SummaryError,
                       match=r"run\.csv: .*n_boot=\d+, the config has language\.figure\.n_boot="):
        run_findings.summary_rows(config, summary)
    pl.read_csv(summary).drop("length").write_csv(summary)
    with pytest.raises(run_summary.SummaryError, match=r"run\.csv: no column 'length'"):
        run_summary.read(summary)


def test_readme_option_replaces_only_the_table_between_the_markers(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"# Title\n\ntext\n{run_findings.README_BEGIN}\nold\n{run_findings.README_END}\nafter\n")
    run_findings.put_in_readme(readme, "| new |")
    assert readme.read_text() == (f"# Title\n\ntext\n{run_findings.README_BEGIN}\n| new |\n"
                                  f"{run_findings.README_END}\nafter\n")


# --- the report's landing page leads with the findings ---


def test_the_landing_page_leads_with_the_findings_judged_from_the_results(tmp_path, config):
    from docutils.core import publish_parts

    from pipeline_src.planning import studies
    from pipeline_src.runs.landing import render

    write_f2(tmp_path, config, 0.8, 0.1)
    section = run_findings.landing_section(config, tmp_path)
    assert section[0] == run_findings.LANDING_HEADING
    assert "- **F2: reproduced** (the claim: " in "\n".join(section)
    assert any(line.startswith("  - ppc 0.80 vs ") and "p = " in line for line in section)
    page = render(config, studies.STUDIES, findings=lambda _: section)
    assert page.index("**F2: reproduced**") < page.index("**Code and libraries**")
    html = publish_parts(page, writer="html", settings_overrides={"report_level": 2})["html_body"]
    assert "<strong>F2: reproduced</strong>" in html and "System Message" not in html  # valid reStructuredText


def test_the_landing_page_says_in_one_line_why_findings_are_not_judged(tmp_path, config):
    write_f2(tmp_path, config, 0.8, 0.1)
    table = paths.under(tmp_path, paths.accuracy(task=F2_TASK, scheme="ppc", variant="scratchpad", seed=0))
    table.write_bytes(b"not parquet")
    section = run_findings.landing_section(config, tmp_path)
    assert section[-2].startswith("Not judged: ") and "\n" not in section[-2]


# --- findings across scales (--scales) and figures run in separate sittings (--keep-others) ---


def exported(results, configfiles: tuple[str, ...], summary) -> None:
    """``lengthgen findings RESULTS --export SUMMARY`` (run from the repository: config/config.yaml)."""
    options = [arg for file in configfiles for arg in ("--configfile", file)]
    done = CliRunner().invoke(main, ["findings", str(results), *options, "--export", str(summary)])
    assert done.exit_code == 0, done.output


def scale(name: str, summary: str, configfiles: tuple[str, ...] = ()) -> dict:
    return {"name": name, "short": name.lower(), "summary": summary, "configfiles": list(configfiles),
            "device": "a CPU", "date": "2026-11-26"}


def test_summaries_of_two_scales_are_judged_side_by_side_each_with_its_config(tmp_path, monkeypatch):
    """Two summaries, each judged with the config it was made with, one verdict column each; a scale
    without a summary yet reads "no results yet", never a verdict."""
    import yaml

    from pipeline_src.planning.load_config import load_config

    monkeypatch.chdir(REPO)
    write_f2(tmp_path / "cpu", default_config(), 0.8, 0.1)
    exported(tmp_path / "cpu", (), tmp_path / "cpu.csv")
    write_f2(tmp_path / "smoke", load_config(["config/smoke.yaml"]), 0.8, 0.1)  # one seed: too few to test
    exported(tmp_path / "smoke", ("config/smoke.yaml",), tmp_path / "smoke.csv")
    entries = [scale("CPU", "cpu.csv"), scale("smoke", "smoke.csv", ("config/smoke.yaml",)),
               scale("GPU", "gpu.csv")]
    (tmp_path / "scales.yaml").write_text(yaml.safe_dump(entries))
    done = CliRunner().invoke(main, ["findings", "--scales", str(tmp_path / "scales.yaml"),
                                     "--markdown", str(tmp_path / "table.md")])
    assert done.exit_code == 0, done.output
    lines = done.output.splitlines()
    f2 = lines.index(next(line for line in lines if line.startswith("F2 ")))
    assert lines[f2].split()[1:3] == ["CPU", "reproduced"]
    assert lines[f2 + 1].split()[:8] == ["smoke", "rehearsal,", "not", "evidence:", "the", "code", "path", "gives"]
    # the smoke config rehearses
    assert lines[f2 + 1].split()[8] == "undecided:" and "one seed per run" in lines[f2 + 1]
    assert lines[f2 + 2].split() == ["GPU", "no", "results", "yet"]
    assert "== smoke: a CPU, 2026-11-26, config/config.yaml config/smoke.yaml" in done.output
    page = (tmp_path / "table.md").read_text()
    table = page[page.index("| finding | cpu | smoke | gpu |"):]
    f2_row = next(line for line in table.splitlines() if line.startswith("| F2 |")).split(" | ")
    assert (f2_row[1].startswith("reproduced (p <= ")
            and f2_row[2] == "rehearsal, not evidence (the code path: undecided, p = 1, no count decides)"
            and f2_row[3] == "no results yet |")
    # the criteria and numbers of each scale judged
    assert page.count("\n| finding | written | criterion | numbers | verdict |") == 2
    assert "## GPU\n\nThe column gpu: a CPU, 2026-11-26, config/config.yaml.\n\nno results yet" in page


def test_a_scale_shows_the_findings_it_names_and_a_dash_for_the_others(tmp_path, monkeypatch):
    """``findings: [F2]``: the column gives F2's verdict and "-" for every other finding (its page lists F2
    alone); a name its config does not judge is refused naming it; a finding whose runs give nothing
    to judge reads "no results" in the table."""
    import yaml

    from pipeline_src.runs import scales

    monkeypatch.chdir(REPO)
    write_f2(tmp_path / "cpu", default_config(), 0.8, 0.1)
    exported(tmp_path / "cpu", (), tmp_path / "cpu.csv")
    (tmp_path / "scales.yaml").write_text(yaml.safe_dump([scale("CPU", "cpu.csv"),
                                                          {**scale("F2 only", "cpu.csv"), "findings": ["F2"]}]))
    listed = scales.read(tmp_path / "scales.yaml")
    found = [scales.judge_scale(entry) for entry in listed]
    rows = {line.split(" | ")[0]: line.split(" | ")[1:] for line in scales.as_table(listed, found).splitlines()}
    assert rows["| F2"][0] == rows["| F2"][1].removesuffix(" |") and rows["| F2"][0].startswith("reproduced")
    assert rows["| F3"] == ["no results", "- |"] and rows["| F1'"] == ["no results", "- |"]
    page = scales.as_page(listed, found, "the command")
    assert page.split("## F2 only")[1].count("\n| F") == 1
    (tmp_path / "scales.yaml").write_text(yaml.safe_dump([{**scale("CPU", "cpu.csv"), "findings": ["F9"]}]))
    with pytest.raises(scales.ScalesError, match="findings names 'F9', which its config does not judge"):
        scales.judge_scale(scales.read(tmp_path / "scales.yaml")[0])


def test_a_finding_a_scales_config_does_not_run_reads_not_run_there():
    from pipeline_src.findings.finding import Finding, undecided
    from pipeline_src.runs import scales

    assert scales.cell(judged.judge(claim("F3"), None, run_summary.empty(), "variable_assignment")) == scales.NOT_RUN
    missing = Finding("F3", "claim", "criterion", "numbers", undecided("no results for ppc"))
    assert scales.cell(missing) == missing.verdict  # run by the config, its tables missing: said so


@pytest.mark.parametrize("changed, message", [
    ({"name": None}, "scale 1: no field 'name'"),
    ({"configfiles": "config/mid.yaml"}, "scale 1: configfiles is 'config/mid.yaml', not a list"),
    ({"seeds": 3}, "scale 1: unknown field 'seeds'"),
    ({"findings": "F2"}, "scale 1: findings is 'F2', not a list of finding names"),
])
def test_a_scales_file_with_a_bad_entry_is_refused_in_one_line_naming_it(tmp_path, changed, message):
    """A field missing (None here), of another type or unknown: one line naming the file, the scale
    and the field."""
    import yaml

    entry = {field: value for field, value in {**scale("CPU", "cpu.csv"), **changed}.items() if value is not None}
    (tmp_path / "scales.yaml").write_text(yaml.safe_dump([entry]))
    done = CliRunner().invoke(main, ["findings", "--scales", str(tmp_path / "scales.yaml")])
    assert done.exit_code != 0 and len(done.output.strip().splitlines()) == 1, done.output
    assert f"scales.yaml: {message}" in done.output


def every_figure_exported(tmp_path):
    """The default config, a summary exported from tables of every finding, and that summary's rows."""
    config = default_config()
    summary = tmp_path / "run.csv"
    write_all_four(tmp_path / "all", config)
    exported(tmp_path / "all", (), summary)
    return config, summary, run_summary.read(summary)


def test_keep_others_adds_a_figure_run_apart_to_the_summary_and_replaces_its_own(tmp_path, monkeypatch):
    """Figures run in separate sittings: an export with --keep-others replaces the rows of the figures
    it has tables for and keeps the earlier rows of the others; without it, only its own."""
    monkeypatch.chdir(REPO)
    config, summary, before = every_figure_exported(tmp_path)
    write_f2(tmp_path / "f2", config, 0.1, 0.8)  # F2 again, now the other way
    done = CliRunner().invoke(main, ["findings", str(tmp_path / "f2"), "--export", str(summary), "--keep-others"])
    assert done.exit_code == 0, done.output
    after = run_summary.read(summary)
    assert set(after["task"]) == set(before["task"])
    assert after.filter(pl.col("task") != F2_TASK).equals(before.filter(pl.col("task") != F2_TASK))
    assert not after.filter(pl.col("task") == F2_TASK).equals(before.filter(pl.col("task") == F2_TASK))
    assert "F2: contradicted" in done.output
    assert not [line for line in done.output.splitlines()
                if "no results" in line and not line.startswith(("F1'", "F1r", "forecast"))]
    exported(tmp_path / "f2", (), summary)
    assert set(run_summary.read(summary)["task"]) == {F2_TASK}


def test_keep_others_adds_seeds_trained_in_another_sitting_and_replaces_those_retrained(tmp_path, monkeypatch):
    """Seeds trained apart (one machine's session each): an export with --keep-others replaces the rows
    of the models (task, run, seed) RESULTS has tables for and keeps the file's rows of the others, the
    same figure's other seeds included."""
    monkeypatch.chdir(REPO)
    config, summary, before = every_figure_exported(tmp_path)
    first, *later = config[F1_TASK]["seeds"]
    retrained = copy.deepcopy(config)
    retrained[F1_TASK]["seeds"] = later
    for variant, _k_train in k_variants(config):  # the later seeds again, now at chance everywhere
        write_seeds(tmp_path / "later", retrained, F1_TASK, variant, F1_SCHEME, [lambda k, length: 0.5] * len(later))
    done = CliRunner().invoke(main, ["findings", str(tmp_path / "later"), "--export", str(summary), "--keep-others"])
    assert done.exit_code == 0, done.output
    after = run_summary.read(summary)
    model = (pl.col("task") == F1_TASK) & pl.col("seed").is_in(later)
    assert after.filter(~model).equals(before.filter(~model))  # the first seed and every other figure kept
    assert after.filter(pl.col("task") == F1_TASK)["seed"].unique().sort().to_list() == config[F1_TASK]["seeds"]
    assert after.filter(model)["value"].unique().to_list() == [0.5]
    assert not before.filter(model)["value"].is_in([0.5]).all()


# --- F1': F1's comparisons across lengths, on fresh seeds ---

F1_FRESH_FROM = claim("F1'").seeds_from
FRESH = list(range(F1_FRESH_FROM, F1_FRESH_FROM + 8))


def f1_across(config, value, seeds=FRESH) -> judged.Finding:
    """F1' judged from run-summary rows whose every value is ``value(K_train, k_test, length, seed)``."""
    config[F1_TASK]["seeds"] = seeds
    spec = jobs.figure_spec(config, "figure1")
    metric = get_task(F1_TASK).headline_metric(next(iter(spec["runs"])))
    rows = [(F1_TASK, variant, F1_SCHEME, seed, k, length, metric, value(K, k, length, seed))
            for variant, K in k_variants(config) for seed in seeds
            for k in config[F1_TASK]["eval"]["k_test"] for length in config[F1_TASK]["eval"]["lengths"]]
    return judged.judge(claim("F1'"), spec, pl.DataFrame(rows, schema=run_summary.SCHEMA, orient="row"))


def f1_shown_at(judged_length: int, *, reverse_b: bool = False, tied_seeds: int = 0):
    """Every run at 0.5 but at ``judged_length``, where accuracy falls with k_test below K_train and
    a larger K_train is ahead at the k_test between (behind, with ``reverse_b``); ``tied_seeds``
    seeds show no fall there (their paired differences are 0)."""
    def value(K, k, length, seed):
        if length != judged_length:
            return 0.5
        jitter = 0.01 * (seed % 4)
        if k <= K:
            tied = seed - FRESH[0] < tied_seeds
            return (0.7 if tied else 0.95 - 0.05 * k) + jitter
        return (0.9 if reverse_b else 0.4) + jitter  # a k_test beyond K_train
    return value


def test_f1_across_lengths_holds_where_a_judged_length_shows_it(config):
    (_, low_k), (_, high_k) = k_variants(config)[:2]
    T = config[F1_TASK]["data"]["l_max"] * 2
    judged_lengths = [L for L in config[F1_TASK]["eval"]["lengths"] if 2 * T <= L <= 8 * T]
    assert len(judged_lengths) >= 2
    for length in judged_lengths:
        found = f1_across(config, f1_shown_at(length))
        assert found.verdict == judged.REPRODUCED, found.verdict
        # (a) per K_train, (b) per neighbouring pair, at every judged length
        assert len(found.comparisons) == (2 * len(k_variants(config)) - 1) * len(judged_lengths)
    longest = max(config[F1_TASK]["eval"]["lengths"])
    assert longest > 8 * T  # F1's own length is not judged by F1'
    outside = f1_across(config, f1_shown_at(longest))
    assert outside.verdict.startswith(judged.UNDECIDED) and "smallest p" in outside.verdict


def test_f1_across_lengths_needs_each_comparison_past_holm_over_the_lengths(config):
    """Three of eight seeds tied: the paired comparisons reach p = 1/32 at best, below 0.05 but above
    0.05 / (lengths judged): undecided, with the seeds that would decide."""
    length = 2 * 2 * config[F1_TASK]["data"]["l_max"]
    found = f1_across(config, f1_shown_at(length, tied_seeds=3))
    assert found.verdict.startswith(f"{judged.UNDECIDED}: K_train"), found.verdict
    assert "smallest p 0.0312" in found.verdict and "above 0.05 / 4" in found.verdict


def test_f1_across_lengths_contradicted_and_only_on_fresh_seeds(config):
    length = 2 * 2 * config[F1_TASK]["data"]["l_max"]
    found = f1_across(config, f1_shown_at(length, reverse_b=True))
    assert found.verdict.startswith(judged.CONTRADICTED), found.verdict
    seen = f1_across(config, f1_shown_at(length), seeds=list(range(F1_FRESH_FROM)))
    assert seen.verdict.startswith(f"{judged.UNDECIDED}: no results: no seed from {F1_FRESH_FROM} on")
    assert not seen.comparisons


# --- F4': own against another document's far tokens, paired per target ---

PAIRED_TARGETS = 30


def paired_pilot(seed: int, shift: float, noise: float = 0.05, n: int = PAIRED_TARGETS):
    """Fractions (own, other) of ``n`` targets spread widely (uniform on [0, 1.6]: F4's two medians'
    intervals overlap), own = other + ``shift`` + N(0, ``noise``) per target."""
    rng = np.random.default_rng(seed)
    other = rng.uniform(0.0, 1.6, n)
    return other + shift + rng.normal(0.0, noise, n), other


@pytest.mark.parametrize("shift, expected", [(0.1, judged.REPRODUCED), (-0.1, judged.CONTRADICTED)])
def test_f4_paired_own_above_other_on_30_targets_is_reproduced_the_reverse_contradicted(tmp_path, config, shift,
                                                                                         expected):
    """Own 0.1 above (below) another document's on 30 targets, a target's two fractions moving
    together: F4' decides where F4's two intervals of medians overlap."""
    influence_table(config, tmp_path, *paired_pilot(0, shift))
    found = {f.finding: f for f in judge_folder(config, tmp_path)}
    assert found["F4'"].verdict.startswith(f"{expected}: "), found["F4'"].numbers
    assert re.search(r"signed-rank p = [\d.e-]+ \(30 targets\)$", found["F4'"].verdict), found["F4'"].verdict
    assert found["F4"].verdict.startswith(f"{judged.UNDECIDED}: the two intervals overlap"), found["F4"].verdict
    assert f"{PAIRED_TARGETS} of {PAIRED_TARGETS} targets gain more than" in found["F4'"].numbers
    assert "at k = 4, own minus another document's fraction per target: median " in found["F4'"].numbers


def test_f4_paired_noise_is_undecided_with_the_targets_that_would_decide(tmp_path, config):
    """Own and other equal but for noise: undecided, with the analysed targets a decision needs at the
    measured paired spread (more than the 30 measured)."""
    influence_table(config, tmp_path, *paired_pilot(1, 0.0, noise=0.2))
    found = row(config, tmp_path, "F4'")
    assert found.verdict.startswith(f"{judged.UNDECIDED}: not significant (p = "), found.verdict
    plan = re.search(r"about ([\d,]+) analysed targets would decide(, the other way)?.* \(30 now\)$", found.verdict)
    assert plan and int(plan[1].replace(",", "")) > PAIRED_TARGETS, found.verdict


def test_f4_paired_p_is_scipys_wilcoxon_on_the_summarys_numbers(tmp_path, monkeypatch):
    """The summary carries each gaining target's two fractions at F4's k (the ``seed`` column: the
    target's row), and F4''s p is scipy's one-sided signed-rank test on exactly those numbers."""
    from scipy import stats

    from pipeline_src.findings import significance

    monkeypatch.chdir(REPO)
    config = default_config()
    own, other = paired_pilot(2, 0.03, noise=0.1)
    influence_table(config, tmp_path / "results", own, other)
    summary = tmp_path / "run.csv"
    exported(tmp_path / "results", (), summary)
    rows = run_summary.read(summary)
    spec = lang.figure_spec(config, "figure4")
    k = run_summary.f4_k(spec)
    fractions = rows.filter(pl.col("metric") == run_summary.FRACTION)
    assert set(fractions["k"]) == {k} and fractions.height == 2 * PAIRED_TARGETS
    pairs = run_summary.paired(rows, k)
    assert pairs["target"].to_list() == list(range(PAIRED_TARGETS))
    np.testing.assert_allclose(pairs["own"].to_numpy(), own, atol=1e-12)  # the table's fractions, to rounding
    expected = stats.wilcoxon(pairs["own"].to_numpy(), pairs["other"].to_numpy(), alternative="greater").pvalue
    reverse = stats.wilcoxon(pairs["own"].to_numpy(), pairs["other"].to_numpy(), alternative="less").pvalue
    test = significance.signed_rank(pairs["own"].to_numpy(), pairs["other"].to_numpy())
    assert (test.p, test.p_reverse) == (expected, reverse)
    found = judged.judge(claim("F4'"), spec, rows)
    assert f"signed-rank p = {expected:.3g} (own above), {reverse:.3g} (other above)" in found.numbers


def test_f4_paired_from_the_summary_is_as_from_the_tables(tmp_path, config):
    """--export then --from-summary: the same F4' (criterion, numbers, verdict), and F4 too."""
    rng = np.random.default_rng(3)
    other = rng.uniform(0.0, 1.6, 40)
    influence_table(config, tmp_path, other + rng.normal(0.02, 0.1, 40), other)
    summary = tmp_path / "run.csv"
    from_tables = run_findings.table_rows(config, finding_tables(config, tmp_path))
    run_summary.write(from_tables, summary)
    again = run_findings.summary_rows(config, summary)
    for name in ("F4", "F4'"):
        spec = lang.figure_spec(config, "figure4")
        assert judged.judge(claim(name), spec, again) == judged.judge(claim(name), spec, from_tables), name
    assert "no results" not in judged.judge(claim("F4'"), spec, again).verdict


def test_a_summary_made_before_f4_paired_reads_no_results_and_f4_is_judged_as_before(tmp_path, config):
    rng = np.random.default_rng(4)
    influence_table(config, tmp_path, rng.uniform(0.4, 1.0, 12), rng.uniform(0.2, 0.8, 12))
    rows = run_findings.table_rows(config, finding_tables(config, tmp_path))
    before = rows.filter(pl.col("metric") != run_summary.FRACTION)  # what an export made before F4' holds
    spec = lang.figure_spec(config, "figure4")
    assert judged.judge(claim("F4"), spec, before) == judged.judge(claim("F4"), spec, rows)
    found = judged.judge(claim("F4'"), spec, before)
    assert found.verdict == "undecided: no results: the summary holds no per-target fractions (made before F4')"
    one_sided = rows.filter(~((pl.col("metric") == run_summary.FRACTION) & (pl.col("variant") == "other")
                              & (pl.col("seed") == 5)))
    with pytest.raises(run_summary.SummaryError, match="target 5 has no 'other' fraction"):
        judged.judge(claim("F4'"), spec, one_sided)


def test_the_default_runs_summary_reads_f4_paired_no_results(monkeypatch):
    """The default run's committed summary was exported before F4': no per-target fractions, no error."""
    from pipeline_src.planning.load_config import load_config

    monkeypatch.chdir(REPO)
    config = load_config([])
    found = {f.finding: f for f in run_findings.findings(
        config, run_findings.summary_rows(config, REPO / "docs" / "findings" / "default_run.csv"))}
    from pipeline_src.findings.judge_targets import NO_PER_TARGET

    assert found["F4'"].verdict == f"{judged.UNDECIDED}: no results: {NO_PER_TARGET}"
    assert found["F4"].verdict.startswith(f"{judged.UNDECIDED}: the two intervals overlap")


def test_smollm2s_committed_p_is_scipys_on_the_csvs_own_numbers(monkeypatch):
    """F4''s p on the committed SmolLM2 summary is scipy's one-sided signed-rank test on the
    fractions as the CSV holds them, paired by its seed column here without the project's reader."""
    import csv

    from scipy import stats

    from pipeline_src.planning.load_config import load_config

    monkeypatch.chdir(REPO)
    path = REPO / "docs" / "findings" / "smollm2.csv"
    with path.open() as handle:
        rows = [row for row in csv.DictReader(handle) if row["metric"] == "fraction"]
    own = {row["seed"]: float(row["value"]) for row in rows if row["variant"] == "own"}
    other = {row["seed"]: float(row["value"]) for row in rows if row["variant"] == "other"}
    assert own.keys() == other.keys() and len(own) >= 10
    targets = sorted(own, key=int)
    p = stats.wilcoxon([own[t] for t in targets], [other[t] for t in targets], alternative="greater").pvalue
    p_reverse = stats.wilcoxon([own[t] for t in targets], [other[t] for t in targets], alternative="less").pvalue
    config = load_config([REPO / "config" / "smollm2.yaml"])
    found = {f.finding: f for f in run_findings.findings(config, run_findings.summary_rows(config, path))}
    assert f"signed-rank p = {p:.3g} (own above), {p_reverse:.3g} (other above)" in found["F4'"].numbers
    assert found["F4'"].numbers.startswith(f"{len(targets)} of ")


def test_f4_paired_counts_only_targets_gaining_more_than_the_threshold():
    from pipeline_src.language.influence_summary import paired_fractions

    short = np.array([4.0, 4.0, 4.0, 4.0, 4.0])
    long = short - np.array([1.0, 0.05, 2.0, 0.0, 0.5])  # the gains: targets 0, 2 and 4 above 0.1
    frame = pl.DataFrame({
        "short_loss": short, "long_loss": long,
        "sparse_loss": pl.Series([[s - f * (s - lo)] * 3
                                  for s, lo, f in zip(short, long, [0.1, 0.2, 0.3, 0.4, 0.5], strict=False)],
                                 dtype=pl.List(pl.Float64)),
        "other_loss": pl.Series([[s - 0.25 * (s - lo)] * 3 for s, lo in zip(short, long, strict=False)],
                                dtype=pl.List(pl.Float64))})
    found = paired_fractions(frame, gain_threshold=0.1, k=2)
    assert found["target"].to_list() == [0, 2, 4]
    np.testing.assert_allclose(found["own"].to_numpy(), [0.1, 0.3, 0.5])
    np.testing.assert_allclose(found["other"].to_numpy(), [0.25, 0.25, 0.25])


def test_f4_paired_plan_gives_the_signed_rank_test_its_power():
    """The pairs planned for a mean difference of 0.3 SD (the paired t test's 70.07 over the
    signed-rank test's efficiency 3/pi: 74), and the signed-rank test's power there, simulated over
    2,000 draws of normal differences: 0.8 (standard error 0.009)."""
    from scipy import stats

    from pipeline_src.findings import significance

    rng = np.random.default_rng(0)
    z = rng.normal(size=40)
    needed = significance.pairs_needed_signed_rank(0.3 + (z - z.mean()) / z.std(ddof=1))
    assert needed == 74
    p = stats.wilcoxon(rng.normal(0.3, 1.0, size=(2000, needed)), alternative="greater", axis=1).pvalue
    assert 0.77 <= np.mean(p <= significance.ALPHA) <= 0.83
    assert significance.pairs_needed_signed_rank(np.array([0.2, -0.3, 0.05])) is None  # mean below zero
    assert significance.pairs_needed_signed_rank(np.full(3, 0.1)) == 5  # no spread: the exact test's floor
