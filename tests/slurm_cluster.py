"""A one-node Slurm cluster for tests, started from a temporary folder: munged, slurmctld and slurmd
(Debian's slurm-wlm and munge), found by clients through SLURM_CONF (nothing is written to /etc).
Two partitions, cpu (the default) and gpu, on the one node; two pretend GPUs (File=/dev/null and
/dev/zero) make --gres=gpu:1 schedulable while torch runs on the CPU. Tests read each job's record
with `scontrol show job`; slurmctld's job completion log (jobcomp.log in the folder) keeps them too."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

DAEMONS = {"munged": "/usr/sbin/munged", "slurmctld": "/usr/sbin/slurmctld", "slurmd": "/usr/sbin/slurmd"}


def missing() -> str | None:
    """Why no cluster can be started here, or None."""
    for path in [*DAEMONS.values(), *(shutil.which(tool) or tool for tool in ("sbatch", "srun", "squeue", "scontrol"))]:
        if not os.access(path, os.X_OK):
            return f"{path} not found (apt-get install slurm-wlm munge)"
    if os.geteuid() != 0:
        return "slurmd runs jobs as their user and must start as root"
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def write_config(root: Path, cpus: int, mem_mb: int) -> Path:
    host = socket.gethostname().split(".")[0]
    for folder in ("state", "spool", "munge"):
        (root / folder).mkdir(mode=0o700)
    (root / "gres.conf").write_text(f"NodeName={host} Name=gpu File=/dev/null\n"
                                    f"NodeName={host} Name=gpu File=/dev/zero\n")
    conf = root / "slurm.conf"
    conf.write_text(f"""\
ClusterName=lengthgen
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={root}/munge/socket
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
MinJobAge=300
MpiDefault=none
MailProg=/bin/true
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc={root}/jobcomp.log
GresTypes=gpu
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={mem_mb} Gres=gpu:2 State=UNKNOWN
PartitionName=cpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=ALL MaxTime=INFINITE State=UP
""")
    return conf


@contextmanager
def one_node_slurm(root: Path, cpus: int, mem_mb: int = 64000):
    """Start the cluster under ``root``; yield the environment its clients need. Every daemon is
    stopped by its PID at the end, whatever happened."""
    conf = write_config(root, cpus, mem_mb)
    # The plugin's job step drops SLURM_* variables before its srun: a wrapper brings SLURM_CONF back.
    (root / "bin").mkdir()
    srun = root / "bin" / "srun"
    srun.write_text(f'#!/bin/sh\nSLURM_CONF={conf} exec {shutil.which("srun")} "$@"\n')
    srun.chmod(0o755)
    env = {**os.environ, "SLURM_CONF": str(conf), "PATH": f"{root / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    key = root / "munge" / "key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    started: list[subprocess.Popen] = []
    try:
        started.append(subprocess.Popen(
            [DAEMONS["munged"], "-F", "-f", f"--socket={root}/munge/socket", f"--key-file={key}",
             f"--pid-file={root}/munge/pid", f"--log-file={root}/munge/log", f"--seed-file={root}/munge/seed"],
            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT))
        wait_for(lambda: (root / "munge" / "socket").exists(), "munged", root, started)
        for daemon, args in (("slurmctld", ["-D", "-c", "-i"]), ("slurmd", ["-D"])):
            with open(root / f"{daemon}.out", "w") as out:
                started.append(subprocess.Popen([DAEMONS[daemon], *args], env=env, stdout=out,
                                                stderr=subprocess.STDOUT))
        wait_for(lambda: node_state(env) == "idle", "an idle node", root, started)
        yield env
    finally:
        for process in reversed(started):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def node_state(env: dict) -> str:
    done = subprocess.run(["sinfo", "-h", "-N", "-o", "%t"], env=env, capture_output=True, text=True)
    return done.stdout.split()[0] if done.returncode == 0 and done.stdout.split() else ""


def wait_for(ready, what: str, root: Path, started: list, timeout: float = 60) -> None:
    """Wait until ``ready()``; fail with the daemons' logs when one of them has stopped or time is up."""
    end = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > end or any(p.poll() is not None for p in started):
            logs = "".join(f"\n--- {p.name}\n{p.read_text()[-2000:]}"
                           for p in sorted(root.glob("*.log")) + sorted(root.glob("*.out")))
            raise RuntimeError(f"no {what} (daemons stopped or {timeout:.0f} s passed){logs}")
        time.sleep(0.5)
