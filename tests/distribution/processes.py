"""Processes that train together (multi-process JAX, torch.distributed): a free port, and a run of all."""

import socket
import subprocess
import sys


def free_port():
    """A port nobody listens on, for the processes' coordinator."""
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        return probe.getsockname()[1]


def run_together(script, argvs, envs):
    """Runs `script` once per (argv, env) pair, all at once; fails with the output of a process that failed."""
    workers = [subprocess.Popen([sys.executable, str(script), *map(str, argv)], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True) for argv, env in zip(argvs, envs)]
    try:
        outputs = [worker.communicate(timeout=600)[0] for worker in workers]
    finally:
        for worker in workers:
            worker.kill()  # after a timeout: the others wait for their peer
    for worker, output in zip(workers, outputs):
        assert worker.returncode == 0, output[-4000:]
