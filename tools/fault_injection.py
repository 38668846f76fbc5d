"""Kill the pipeline at random moments and check that nothing is lost or corrupted.

    python tools/fault_injection.py --kills 20 [--config config/smoke.yaml] [--seed 0] [--work DIR]

First one uninterrupted run of ``all`` gives the reference results. Then, until N runs were
killed: start ``all`` (from an empty results folder, or with ``--forcerun`` of one random artifact
of the finished run), kill the whole process group with SIGKILL at a random moment, ``--unlock``,
run to the end (``all``, or every figure's own target, ``figure1 figure2 ...``, chosen at random),
and compare every artifact with the reference (tools/compare_results.py: tables row for row,
weights bit for bit, JSON key for key, wall-clock times left out). The run after each kill must
also leave nothing to do. A run that finished before its kill is checked the same way but not
counted. Prints one line per run (what was running when it was killed) and exits 1 on any
difference. Not a test: each run takes tens of seconds to minutes on the smoke config.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))

from compare_results import COMPARE, compare  # noqa: E402


def snakemake(*args: str) -> list[str]:
    return [sys.executable, "-m", "snakemake", "--cores", "2", *args]


def run(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    done = subprocess.run(snakemake(*args), cwd=workdir, env=_env(), capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"snakemake {' '.join(args)} failed in {workdir}:\n{done.stderr[-3000:]}")
    return done


def _env() -> dict:
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}


def copy_workflow(workdir: Path) -> Path:
    workdir.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "Snakefile", workdir)
    for folder in ("workflow", "config", "profiles"):
        shutil.copytree(REPO / folder, workdir / folder, dirs_exist_ok=True)
    return workdir


def artifacts(results: Path) -> list[Path]:
    """The files a rerun may force: every artifact but logs, benchmarks and sidecars."""
    return sorted(p for p in results.rglob("*") if p.is_file() and not p.name.endswith(".prov.json")
                  and p.relative_to(results).parts[0] not in ("logs", "benchmarks") and not p.name.startswith("."))


def running_jobs(workdir: Path) -> list[str]:
    """The jobs whose logs were written last (at most two: two cores): those running at a kill."""
    logs = sorted((workdir / "results" / "logs").rglob("*.log"), key=lambda p: p.stat().st_mtime, reverse=True)
    return [str(p.relative_to(workdir / "results" / "logs").with_suffix("")) for p in logs[:2]]


def same_bytes(old: Path, new: Path) -> list[str]:
    """Files under ``new`` whose bytes differ from those under ``old`` (the figures: compare_results
    leaves them out, but they are reproducible byte for byte), a sidecar read by :func:`same_record`."""
    names = {p.relative_to(root) for root in (old, new) for p in root.rglob("*") if p.is_file()}
    runs = (old.parent.parent, new.parent.parent)  # <run>/results/figures
    return [f"figures/{name}: {'missing' if not (old / name).exists() or not (new / name).exists() else 'bytes differ'}"
            for name in sorted(names) if not ((old / name).exists() and (new / name).exists()
                                              and same_record(old / name, new / name, runs))]


def same_record(old: Path, new: Path, roots: tuple[Path, Path]) -> bool:
    """The same bytes, or, for a figure's sidecar, the same record but for the SHA-256 of inputs whose values
    compare_results finds equal (a training log's bytes hold its wall-clock column); its inputs' paths are
    relative to the two run folders ``roots``."""
    if old.read_bytes() == new.read_bytes():
        return True
    if not old.name.endswith(".prov.json"):
        return False
    a, b = (json.loads(p.read_text()) for p in (old, new))
    for name, entry in a.get("inputs", {}).items():
        other = b.get("inputs", {}).get(name)
        compare_one = COMPARE.get(Path(entry["path"]).suffix)
        if (other and other["path"] == entry["path"] and compare_one
                and compare_one(roots[0] / entry["path"], roots[1] / entry["path"]) is None):
            entry["sha256"] = other["sha256"]
    return a == b


def figure_targets(configfile: str) -> list[str]:
    """The figures of ``configfile`` (merged over the default config): each is a target of its own."""
    sys.path.insert(0, str(REPO))
    from pipeline_src.planning import studies
    from pipeline_src.planning.load_config import load_config

    config = load_config([REPO / configfile], base=REPO / "config" / "config.yaml")
    return studies.figures(config)


def kill_at_random(workdir: Path, args: list[str], within: float, rng: random.Random) -> tuple[bool, str]:
    """Start snakemake with ``args``, kill its process group after a random delay below ``within``
    seconds; returns whether it was killed (not finished first), and what happened."""
    delay = rng.uniform(0.5, within)
    job = subprocess.Popen(snakemake(*args), cwd=workdir, env=_env(), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        job.wait(timeout=delay)
        return False, f"finished before the kill at {delay:.1f} s"
    except subprocess.TimeoutExpired:
        os.killpg(job.pid, signal.SIGKILL)
        job.wait()
        return True, f"killed at {delay:.1f} s (newest logs: {', '.join(running_jobs(workdir)) or 'none'})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--config", default="config/smoke.yaml")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, default=Path("fault-injection"))
    opts = parser.parse_args()
    rng = random.Random(opts.seed)
    config = ["--configfile", opts.config]
    figures = figure_targets(opts.config)

    reference, workdir = copy_workflow(opts.work / "reference"), copy_workflow(opts.work / "killed")
    for folder in (reference, workdir):
        shutil.rmtree(folder / "results", ignore_errors=True)
    started = time.perf_counter()
    run(reference, "all", *config)
    full = time.perf_counter() - started
    print(f"reference run: {full:.0f} s", flush=True)
    run(workdir, "all", *config)
    failures = kills = cycles = 0
    while kills < opts.kills:  # a run that finishes before its kill is checked too, but not counted
        cycles += 1
        if rng.random() < 0.3:
            shutil.rmtree(workdir / "results")
            how, args, within = "from empty results", ["all", *config], full
        else:  # a forced job and what follows it: seconds on the smoke config
            target = rng.choice(artifacts(workdir / "results")).relative_to(workdir)
            how, args, within = f"forcerun {target}", ["all", *config, "--forcerun", str(target)], 15.0
        killed, what = kill_at_random(workdir, args, within, rng)
        kills += killed
        run(workdir, "--unlock", "all", *config)
        targets = rng.choice([["all"], rng.sample(figures, len(figures))])
        run(workdir, *targets, *config)
        again = run(workdir, "-n", "all", *config)
        left = "" if "Nothing to be done" in again.stdout + again.stderr else "; a second run still had work"
        differences = compare(reference / "results", workdir / "results") + same_bytes(
            reference / "results" / "figures", workdir / "results" / "figures")
        failures += bool(differences or left)
        print(f"run {cycles}, kill {kills}/{opts.kills} ({how}): {what}; remade by {' '.join(targets)}; "
              + (f"{len(differences)} differences: {differences[:3]}" if differences else "results identical")
              + left, flush=True)
    print(f"{kills} kills in {cycles} runs ({cycles - kills} finished before their kill), "
          f"{failures} with lost or changed results")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
