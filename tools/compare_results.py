"""Compare two results/ trees value for value: the check that a refactor changed no number.

    python tools/compare_results.py OLD/results NEW/results

Every Parquet table is compared row for row (columns that hold wall-clock time are left out), every
safetensors file tensor for tensor (bitwise), every JSON file key for key (timings left out).
Provenance sidecars, figures, logs and benchmarks are not compared: they record code digests,
commits and times, which a refactor changes by design. Exits 1 naming each difference.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import polars as pl

TIME_COLUMNS = {"seconds"}
TIME_KEYS = {"seconds", "train_seconds", "steps_per_second", "wall_seconds"}
SKIPPED_DIRS = {"logs", "benchmarks", "figures"}


def _files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")
            if p.is_file() and not p.name.endswith(".prov.json") and not p.name.startswith("resume-")
            and p.relative_to(root).parts[0] not in SKIPPED_DIRS}


def _parquet(a: Path, b: Path) -> str | None:
    x, y = pl.read_parquet(a), pl.read_parquet(b)
    x, y = (f.drop([c for c in f.columns if c in TIME_COLUMNS]) for f in (x, y))
    if x.schema != y.schema:
        return f"schema {x.schema} != {y.schema}"
    return None if x.equals(y, null_equal=True) else f"values differ ({len(x)} vs {len(y)} rows)"


def _safetensors(a: Path, b: Path) -> str | None:
    import torch
    from safetensors.torch import load_file

    x, y = load_file(a), load_file(b)
    if x.keys() != y.keys():
        return f"tensor names differ: {sorted(x.keys() ^ y.keys())}"
    changed = [name for name in x if x[name].dtype != y[name].dtype or not torch.equal(x[name], y[name])]
    return f"tensors differ: {changed}" if changed else None


def _strip(value):
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in TIME_KEYS}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _json(a: Path, b: Path) -> str | None:
    x, y = (_strip(json.loads(p.read_text())) for p in (a, b))
    return None if x == y else f"JSON differs: {x} != {y}"


COMPARE = {".parquet": _parquet, ".safetensors": _safetensors, ".json": _json}


def compare(old: Path, new: Path) -> list[str]:
    a, b = _files(old), _files(new)
    problems = ([f"only in {old}: {name}" for name in sorted(a - b)]
                + [f"only in {new}: {name}" for name in sorted(b - a)])
    checked = 0
    for name in sorted(a & b):
        compare_one = COMPARE.get(Path(name).suffix)
        if compare_one is None:
            continue
        checked += 1
        problem = compare_one(old / name, new / name)
        if problem:
            problems.append(f"{name}: {problem}")
    print(f"compared {checked} files", file=sys.stderr)
    return problems


if __name__ == "__main__":
    found = compare(Path(sys.argv[1]), Path(sys.argv[2]))
    print("\n".join(found) if found else "identical values")
    sys.exit(1 if found else 0)
