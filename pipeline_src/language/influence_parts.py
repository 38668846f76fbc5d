"""A draw analysed in parts (the config's ``language.analysis.parts``, :func:`.influence_config.part_span`):
which part a table holds, from its provenance record, and the parts' tables read back end to end as the
whole draw's table. Torch-free: the figures and ``lengthgen findings`` read it."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from ..config.influence_config import InfluenceConfig, InfluenceError

PART = "part"  # the record's key: {index, of, first_target, stop_target, drawn} (pipeline_src/language/analysis.py)


def part_of(path: Path) -> dict | None:
    """The part of the draw the influence table ``path`` holds (its record's ``part``), or None: the
    whole draw (or a table without a record)."""
    from ..provenance.sidecars import read_record

    try:
        return read_record(path).get(PART)
    except FileNotFoundError:
        return None


def in_draw_order(paths: list[Path]) -> list[tuple[Path, dict | None]]:
    """``paths`` with their parts (:func:`part_of`), in the order of the draw: one whole draw's table,
    or parts of one draw (each once, all of the same number of parts and drawn targets); an
    InfluenceError naming the table where not. Parts may be missing (:func:`missing` says which)."""
    found = [(Path(path), part_of(path)) for path in paths]
    whole = [path for path, part in found if part is None]
    if whole and len(found) > 1:
        raise InfluenceError(f"{whole[0]}: the whole draw's influence table, beside {len(found) - 1} other table(s); "
                             "give the whole draw's table alone, or the tables of its parts")
    if whole:
        return found
    first = found[0][1]
    seen: dict[int, Path] = {}
    for path, part in found:
        if (part["of"], part["drawn"]) != (first["of"], first["drawn"]):
            raise InfluenceError(f"{path}: part {part['index']} of {part['of']} of a draw of {part['drawn']} targets, "
                                 f"beside part {first['index']} of {first['of']} of a draw of {first['drawn']}")
        if part["index"] in seen:
            raise InfluenceError(f"{path}: part {part['index']} again (also {seen[part['index']]})")
        seen[part["index"]] = path
    return sorted(found, key=lambda item: item[1]["index"])


def missing(parts: list[dict]) -> list[int]:
    """The parts (1..of) of the draw that ``parts`` (records' ``part``, of one draw) lack."""
    return sorted(set(range(1, parts[0]["of"] + 1)) - {part["index"] for part in parts}) if parts else []


def parts_text(indices: list[int], of: int) -> str:
    """``parts 1, 2 and 7 of 8``."""
    names = [str(index) for index in sorted(indices)]
    listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
    return f"part{'s' if len(names) > 1 else ''} {listed} of {of}"


def read_whole(paths: list[Path], cfg: InfluenceConfig) -> pl.DataFrame:
    """The whole draw's influence table from ``paths``: its own table, or its parts' end to end (every
    part there, else an InfluenceError naming those missing), each checked against its schema."""
    from .influence_table import read_influence

    ordered = in_draw_order(paths)
    parts = [part for _, part in ordered if part is not None]
    if parts and missing(parts):
        raise InfluenceError(f"{ordered[0][0].parent}: the draw's {parts_text(missing(parts), parts[0]['of'])} "
                             "not there "
                             f"(there: {parts_text([part['index'] for part in parts], parts[0]['of'])})")
    return pl.concat([read_influence(path, cfg) for path, _ in ordered])
