"""Where the natural-language analysis of a config stands (``lengthgen status``, below the cells): its
influence table, or each part's where the draw is analysed in parts (``language.analysis.parts``):

* ``done``: the table is there, made with the spec the config gives its job (its record's
  ``config_hash``), with its drawn, screened-out and analysed targets;
* ``stale``: the table is there but made with another spec (or its record is unreadable): Snakemake
  would remake it;
* ``running`` (or failed): no table, but a log: how far the analysis got and about how long it has
  left, from its last progress line (:mod:`pipeline_src.language.influence_log`);
* ``missing``: neither.
"""

from __future__ import annotations

from pathlib import Path

from ..config.influence_config import InfluenceConfig
from ..language.influence_log import progress
from ..planning import language_jobs as lang
from ..planning import paths
from ..provenance.sidecars import read_record
from ..storage.canonical import config_hash
from .cell_status import aligned


def part_status(config: dict, part: int | None) -> list[str]:
    """The status row of the influence analysis's job of ``part`` (None: the whole draw): name, state, note."""
    spec = lang.influence_spec(config, part)
    name = "influence" if part is None else f"influence part {part} of {lang.parts(config)}"
    table = Path(paths.influence_table(part))
    log = Path(paths.log(paths.influence_job("" if part is None else paths.INFLUENCE_PART.format(index=part))))
    if table.exists():
        try:
            record = read_record(table)
        except (OSError, ValueError) as err:
            return [name, "stale", f"{table}: no readable provenance record ({err})"]
        if record.get("config_hash") != config_hash(spec):
            return [name, "stale", f"{table}: made with another spec than the config gives its job"]
        return [name, "done", _counts(record)]
    if log.exists():
        cfg = InfluenceConfig.from_dict({k: v for k, v in spec.items() if k not in ("hf_model", "device", "part")})
        where = progress(log, cfg)
        return [name, "running", f"failed or still running{f': {where}' if where else ''}; see {log}"]
    return [name, "missing", "not run"]


def _counts(record: dict) -> str:
    """What a finished table's record says of its targets."""
    screening, part = record.get("screening"), record.get("part")
    if screening is not None:
        return (f"{screening['drawn']} drawn, {screening['screened_out']} screened out, "
                f"{screening['drawn'] - screening['screened_out']} analysed")
    drawn = part["stop_target"] - part["first_target"] if part else record["config"].get("n_targets")
    return f"{drawn} targets analysed"


def language_status(config: dict) -> str:
    """The influence analysis's rows (none where the config has no language analysis)."""
    if not lang.enabled(config):
        return ""
    rows = [part_status(config, part) for part in lang.influence_parts(config)]
    done = sum(row[1] == "done" for row in rows)
    return "\n".join([*aligned([["language job", "state", "note"], *rows]),
                      f"{len(rows)} influence job(s): {done} done"])
