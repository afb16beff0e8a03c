"""Processes that train together (multi-process JAX, torch.distributed): a free port, a run of all, and workers that
run several commands (apps among them) one after another, started once."""

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


def run_commands(folder, name, environments, commands):
    """Runs tests/distribution/commands_worker.py once per environment in `environments`, all at once (the processes of
    a job, when they describe one), started once as a user's job would be: each process runs the commands `commands`
    (command -> a function of the process p giving its WORKER ARGS...) one after another. Returns, for each command,
    the rows of the batches each process traced a training step on (JAX; nothing on torch)."""
    import json

    from tests.conftest import TESTS

    def rows_file(command, process):
        return folder / f"{command}-{name}_rows{process}"

    listed = []
    for process in range(len(environments)):
        listed.append(folder / f"{name}_commands{process}.json")
        listed[-1].write_text(json.dumps([[str(rows_file(command, process)), *map(str, arguments(process))]
                                          for command, arguments in commands.items()]))
    run_together(TESTS / "distribution" / "commands_worker.py", [[path] for path in listed], environments)
    return {command: [rows_file(command, process).read_text().split() for process in range(len(environments))]
            for command in commands}


def app_command(folder, name, command, arguments):
    """The worker's command that runs an app's command in an empty folder of its own, FOLDER/COMMAND-NAME_cwdP,
    keeping what it printed (`app_outputs`): `arguments(p)` gives process p's APP ARGS... (APP pretrain: its
    AUDIT_FILE, then apps/pretrain.py's arguments), run by tests/distribution/app_process_worker.py
    (pretrain_process_worker.py). A function of the process p, as `run_commands` takes it."""
    def of(process):
        workdir, stdout = _app_paths(folder, name, command, process)
        workdir.mkdir()
        app, *rest = arguments(process)
        if app == "pretrain":
            return ["pretrain_process_worker.py", "app", workdir, stdout, *rest]
        return ["app_process_worker.py", workdir, stdout, app, *rest]
    return of


def app_outputs(folder, name, command, processes):
    """The working folders of an `app_command` in each of the `processes`, and what each printed."""
    workdirs, printed = zip(*(_app_paths(folder, name, command, process) for process in range(processes)))
    return list(workdirs), [path.read_text() for path in printed]


def _app_paths(folder, name, command, process):
    return folder / f"{command}-{name}_cwd{process}", folder / f"{command}-{name}_stdout{process}"


def run_jax_app_processes(folder, name, processes, devices, commands):
    """Runs in `processes` JAX processes of `devices` virtual CPU devices each (a job when more than one: the test sets
    KERAS_DISTRIBUTION_JOB_ADDRESSES, _NUM_PROCESSES, _PROCESS_ID) the app commands `commands` (command -> a function
    of the process p giving its APP ARGS..., as `app_command` takes them) one after another. Returns, for each
    command, its working folders, what each process printed, and the rows of the batches each traced a training step
    on."""
    import os

    address = f"localhost:{free_port()}"
    environment = {key: value for key, value in os.environ.items() if key != "XLA_FLAGS"}
    environments = [{**environment, "KERAS_BACKEND": "jax", "OMP_NUM_THREADS": "1",
                     "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}",
                     **({"KERAS_DISTRIBUTION_JOB_ADDRESSES": address,
                         "KERAS_DISTRIBUTION_NUM_PROCESSES": str(processes),
                         "KERAS_DISTRIBUTION_PROCESS_ID": str(process)} if processes > 1 else {})}
                    for process in range(processes)]
    traced = run_commands(folder, name, environments, {
        command: app_command(folder, name, command, arguments) for command, arguments in commands.items()})
    return {command: (*app_outputs(folder, name, command, processes), traced[command]) for command in commands}


def sentiment_app_inputs(tmp_path):
    """A backbone folder without dropout (the workers' heads have none either) and a sentiment TSV
    of 28 rows (21 training rows: batches of 5, 5, 5, 5, 1), for the app-process tests."""
    from kbert import BertBackbone
    from kbert.saving import BACKBONE_FILE
    from tests.conftest import TINY
    from tests.tasks.conftest import VOCABULARY, write_sentiment_tsv

    init = tmp_path / "init"
    init.mkdir()
    BertBackbone(**TINY, dropout=0.0).save(init / BACKBONE_FILE)
    (init / "vocab.txt").write_text("".join(f"{token}\n" for token in VOCABULARY))
    return init, write_sentiment_tsv(tmp_path / "train.tsv", rows=28)


def assert_only_process_0_wrote(tmp_path, name, printed, workdirs):
    """Process 0 of the job `name` printed "Wrote"; process 1 printed nothing and wrote nothing: no run
    folder, backup, lock or logs beside it, nothing in any process's working directory."""
    assert "Wrote" in printed[0]
    assert printed[1] == ""
    assert not (tmp_path / f"{name}_1").exists()
    assert sorted(path.name for path in tmp_path.iterdir() if path.name.startswith((f".{name}_1", f"{name}_1"))) == []
    assert [list(folder.iterdir()) for folder in workdirs] == [[] for _ in workdirs]


TEXTS = ["a film good great", "a film dull awful", "a film fine", "a film boring bad bad", "a film"]


def assert_runs_agree(one, two, init, distributions):
    """The app's run folders `one` (one process) and `two` (process 0 of a job) agree: `distributions`, the
    `metrics.json` "distribution" of each, 10 steps, the same validation scores (1e-5), the same weights
    (2e-5) and predictions on TEXTS (1e-5); and the run trained (its backbone moved from `init`'s)."""
    import json

    import keras
    import numpy as np

    from kbert.saving import BACKBONE_FILE, load_run

    metrics = [json.loads((folder / "metrics.json").read_text()) for folder in (one, two)]
    assert [run["distribution"] for run in metrics] == list(distributions)
    assert metrics[0]["steps"] == metrics[1]["steps"] == 10
    assert metrics[0]["validation"]["accuracy"] == metrics[1]["validation"]["accuracy"]
    np.testing.assert_allclose(metrics[1]["history"]["val_loss"], metrics[0]["history"]["val_loss"], atol=1e-5)

    single, data_parallel = (load_run(folder) for folder in (one, two))
    start = keras.saving.load_model(init / BACKBONE_FILE).get_weights()
    assert max(np.abs(a - b).max() for a, b in zip(start, single.backbone.get_weights())) > 1e-3  # it trained
    assert len(single.get_weights()) == len(data_parallel.get_weights())
    for expected, actual in zip(single.get_weights(), data_parallel.get_weights()):
        np.testing.assert_allclose(actual, expected, atol=2e-5)
    np.testing.assert_allclose(data_parallel.predict(TEXTS, verbose=0), single.predict(TEXTS, verbose=0), atol=1e-5)
