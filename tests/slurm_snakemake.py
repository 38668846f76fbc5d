"""``python tests/slurm_snakemake.py ARGS``: ``snakemake ARGS`` whose Slurm executor waits at most
POLL_SECONDS between its status checks. The plugin waits 10 s longer after each check that finds
every job still running (1, 12, 33, 64... s after a submission), so a test's few-second jobs spend
most of their time waiting to be seen; the profile's max-status-checks-per-second (0.5) still holds.
Only the waiting changes: what is submitted, where and with which resources is the plugin's own."""

from __future__ import annotations

import asyncio
import sys

import snakemake_executor_plugin_slurm as slurm
from snakemake.cli import main

POLL_SECONDS = 2.0


async def sleep(self) -> None:
    await asyncio.sleep(min(self.next_seconds_between_status_checks, POLL_SECONDS))


if __name__ == "__main__":
    slurm.Executor.sleep = sleep
    sys.argv[0] = "snakemake"
    main()
