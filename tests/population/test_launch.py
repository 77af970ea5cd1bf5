"""Launch checks of ``jaxagents.population.distributed.initialize``: a bad launch ends
every process with one line and a nonzero status, never a silent wait or a segfault.
The launch tests start ``python -c`` processes on 127.0.0.1 that only call
``initialize()`` (no training), with JAXAGENTS_INIT_TIMEOUT=2."""

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from jaxagents import cli
from jaxagents.population import distributed
from jaxagents.population.distributed import check_launch

TIMEOUT_S = 2
# what the CLI does with a ValueError, so that a test sees the same one line
JOIN = """
import sys
from jaxagents.population import distributed
try:
    distributed.initialize()
except ValueError as e:
    print(f"error: {e}", file=sys.stderr)
    sys.exit(2)
print("joined", flush=True)
"""
CLUSTER_VARS = ("SLURM_", "OMPI_", "PMI_", "KUBERNETES_SERVICE_HOST", "JAX_COORDINATOR", "JAXAGENTS_", "TPU_")
JOIN_FAILED = f"waited {TIMEOUT_S} s for all processes to join"


def _env(**values):
    env = {k: v for k, v in os.environ.items() if not k.startswith(CLUSTER_VARS)}  # no cluster to detect
    return {**env, "JAX_PLATFORMS": "cpu", "JAXAGENTS_INIT_TIMEOUT": str(TIMEOUT_S), **values}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch(ids, num_processes=2, port=None, timeout_s=TIMEOUT_S):
    """One process per id; each one's (status, stdout, stderr), in order."""
    port = port or _free_port()
    procs = [subprocess.Popen([sys.executable, "-c", JOIN], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=_env(JAXAGENTS_COORDINATOR=f"127.0.0.1:{port}",
                                       JAXAGENTS_NUM_PROCESSES=str(num_processes), JAXAGENTS_PROCESS_ID=str(i),
                                       JAXAGENTS_INIT_TIMEOUT=str(timeout_s)))
             for i in ids]
    try:
        outs = [p.communicate(timeout=60) for p in procs]
    finally:
        for p in procs:  # never leave a process behind (JAX catches SIGTERM: kill)
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
                p.wait()
    return [(p.returncode, out, err) for p, (out, err) in zip(procs, outs, strict=True)]


def _one_line(err: str) -> str:
    """The process's last stderr line, which must be its whole error."""
    lines = err.strip().splitlines()
    assert lines, "nothing on stderr"
    assert "Check failure" not in err and "Traceback" not in err, err[-2000:]
    return lines[-1]


def _timed_out(result, process_id):
    code, _, err = result
    line = _one_line(err)
    assert code == 2, err[-2000:]  # the watchdog's status, not JAX's own abort (134) at its later timeout
    assert line.startswith(f"jaxagents: error: process {process_id} of 2 {JOIN_FAILED}"), line
    for name in ("JAXAGENTS_COORDINATOR", "JAXAGENTS_NUM_PROCESSES", "JAXAGENTS_PROCESS_ID", "JAXAGENTS_INIT_TIMEOUT"):
        assert name in line, line


# -- the checks themselves, in this process ----------------------------------------------------------------


def _env_vars(coordinator="127.0.0.1:12345", n="2", i="1", **more):
    return {"JAXAGENTS_COORDINATOR": coordinator, "JAXAGENTS_NUM_PROCESSES": n, "JAXAGENTS_PROCESS_ID": i, **more}


def test_valid_settings_are_parsed():
    assert check_launch(environ=_env_vars()) == ("127.0.0.1:12345", 2, 1, 30.0)
    ipv6 = _env_vars("[::1]:80", " 4 ", "3", JAXAGENTS_INIT_TIMEOUT="2.5")
    assert check_launch(environ=ipv6) == ("[::1]:80", 4, 3, 2.5)
    assert check_launch(environ=_env_vars("host:1", "1", "0")) == ("host:1", 1, 0, 30.0)
    assert check_launch(environ={}) == (None, None, None, 30.0)  # the cluster's own detection
    assert check_launch(environ={"JAXAGENTS_INIT_TIMEOUT": "", "JAXAGENTS_PROCESS_ID": ""}) == (None, None, None, 30.0)
    # the call's arguments before the environment
    assert check_launch("10.0.0.1:99", 3, 2, 7, environ=_env_vars()) == ("10.0.0.1:99", 3, 2, 7.0)


@pytest.mark.parametrize("variables, message", [
    (_env_vars(n="0"), "JAXAGENTS_NUM_PROCESSES='0': must be an integer >= 1"),
    (_env_vars(n="two"), "JAXAGENTS_NUM_PROCESSES='two': must be an integer >= 1"),
    (_env_vars(n="1.5"), "JAXAGENTS_NUM_PROCESSES='1.5': must be an integer >= 1"),
    (_env_vars(i="2"), "JAXAGENTS_PROCESS_ID='2': must be an integer from 0 to 1 (JAXAGENTS_NUM_PROCESSES=2)"),
    (_env_vars(i="-1"), "JAXAGENTS_PROCESS_ID='-1': must be an integer from 0 to 1 (JAXAGENTS_NUM_PROCESSES=2)"),
    (_env_vars(i="one"), "JAXAGENTS_PROCESS_ID='one': must be an integer from 0 to 1"),
    (_env_vars("localhost"), "JAXAGENTS_COORDINATOR='localhost': must be host:port with a port from 1 to 65535"),
    (_env_vars(":1234"), "JAXAGENTS_COORDINATOR=':1234': must be host:port"),
    (_env_vars("host:0"), "JAXAGENTS_COORDINATOR='host:0': must be host:port with a port from 1 to 65535"),
    (_env_vars("host:65536"), "JAXAGENTS_COORDINATOR='host:65536': must be host:port"),
    (_env_vars("host:http"), "JAXAGENTS_COORDINATOR='host:http': must be host:port"),
    (_env_vars(JAXAGENTS_INIT_TIMEOUT="0"), "JAXAGENTS_INIT_TIMEOUT='0': must be a number of seconds > 0"),
    (_env_vars(JAXAGENTS_INIT_TIMEOUT="soon"), "JAXAGENTS_INIT_TIMEOUT='soon': must be a number of seconds > 0"),
    (_env_vars(JAXAGENTS_INIT_TIMEOUT="inf"), "JAXAGENTS_INIT_TIMEOUT='inf': must be a number of seconds > 0"),
    ({"JAXAGENTS_NUM_PROCESSES": "2"},
     ("--distributed: JAXAGENTS_COORDINATOR, JAXAGENTS_PROCESS_ID are not set: give all of JAXAGENTS_COORDINATOR, "
      "JAXAGENTS_NUM_PROCESSES, JAXAGENTS_PROCESS_ID, or none of them")),
])
def test_invalid_settings_name_the_variable_and_what_is_allowed(variables, message):
    with pytest.raises(ValueError) as e:
        check_launch(environ=variables)
    assert str(e.value).startswith(message), str(e.value)
    assert "\n" not in str(e.value)


def test_an_invalid_argument_is_named_as_the_argument():
    with pytest.raises(ValueError, match=r"^process_id='3': must be an integer from 0 to 1 \(num_processes=2\)$"):
        check_launch("127.0.0.1:1", 2, 3, environ={})


def test_a_port_in_use_is_found_before_jax_starts():
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        with pytest.raises(ValueError, match=f"port {port} is already in use on this machine"):
            distributed._check_port_free(f"127.0.0.1:{port}")
    distributed._check_port_free(f"127.0.0.1:{_free_port()}")  # a free one passes


def test_the_watchdog_is_quiet_once_done():
    watchdog = distributed._Watchdog(0.2, "must not be printed")
    watchdog.done()
    time.sleep(0.4)  # past its time: this process is still here


def test_cli_prints_a_bad_launch_in_one_line(monkeypatch, capsys):
    for name, value in _env_vars(i="5").items():
        monkeypatch.setenv(name, value)
    assert cli.main(["train", "--distributed"]) == 2  # fails in the checks, before JAX or the runner starts
    err = capsys.readouterr().err
    assert err == ("jaxagents train: error: JAXAGENTS_PROCESS_ID='5': must be an integer from 0 to 1 "
                   "(JAXAGENTS_NUM_PROCESSES=2)\n"), err


# -- real launches on 127.0.0.1 ---------------------------------------------------------------------------


def test_no_variables_and_no_cluster_names_our_variables():
    proc = subprocess.run([sys.executable, "-c", JOIN], env=_env(), capture_output=True, text=True, timeout=60,
                          check=False)
    line = _one_line(proc.stderr)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert line.startswith("error: --distributed: no cluster detected (SLURM, Open MPI, Cloud TPU, Kubernetes) and "
                           "JAXAGENTS_COORDINATOR, JAXAGENTS_NUM_PROCESSES, JAXAGENTS_PROCESS_ID are not set"), line


@pytest.mark.slow  # ~5 s; the port-in-use case below checks the same timeout in the default suite
def test_the_same_id_twice_times_out_in_every_process():
    for result in _launch([1, 1]):
        _timed_out(result, 1)


@pytest.mark.slow  # ~5 s; the port-in-use case below checks the same timeout in the default suite
def test_an_id_out_of_range_fails_at_once_and_the_others_time_out():
    zero, two = _launch([0, 2])
    code, _, err = two
    assert code == 2, err[-2000:]
    assert _one_line(err) == ("error: JAXAGENTS_PROCESS_ID='2': must be an integer from 0 to 1 "
                              "(JAXAGENTS_NUM_PROCESSES=2)")
    _timed_out(zero, 0)


def test_a_port_in_use_fails_process_0_at_once_and_the_others_time_out():
    with socket.socket() as held:  # something else listens on the coordinator's port
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        zero, one = _launch([0, 1], port=port)
    code, _, err = zero
    assert code == 2, err[-2000:]  # not a segfault
    assert _one_line(err).startswith(f"error: JAXAGENTS_COORDINATOR=127.0.0.1:{port}: port {port} is already in use "
                                     "on this machine"), err
    _timed_out(one, 1)


@pytest.mark.slow  # 7-12 s on a busy 2-core machine; the slow multi-process runs join the same way
def test_a_good_launch_joins():
    results = _launch([0, 1], timeout_s=60)  # however slow this machine is today
    for code, out, err in results:
        assert code == 0 and out.strip() == "joined", err[-2000:]


APART = """
import sys, time
import numpy as np
from jaxagents.population import distributed
distributed.initialize()
import jax
from jax.experimental import multihost_utils
if jax.process_index() == 1:
    time.sleep(float(sys.argv[1]))  # a host that compiles much more slowly than the other
try:
    distributed.wait_for_all("compiled")
except distributed.ProcessesApart as e:
    print(e, file=sys.stderr, flush=True)
    import os
    os._exit(1)
print("sum", int(np.sum(multihost_utils.process_allgather(np.int32(1)))), flush=True)
"""


def _apart(delay: float, sync_timeout: float):
    port = _free_port()
    procs = [subprocess.Popen([sys.executable, "-c", APART, str(delay)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=_env(JAXAGENTS_COORDINATOR=f"127.0.0.1:{port}", JAXAGENTS_NUM_PROCESSES="2",
                                                  JAXAGENTS_PROCESS_ID=str(i), JAXAGENTS_INIT_TIMEOUT="30",
                                                  JAXAGENTS_SYNC_TIMEOUT=str(sync_timeout)))
             for i in range(2)]
    try:
        outs = [p.communicate(timeout=120) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
                p.wait()
    return [(p.returncode, out, err) for p, (out, err) in zip(procs, outs, strict=True)]


@pytest.mark.heavy  # ~45 s: one process arrives 35 s after the other
def test_processes_35_s_apart_meet_at_the_barrier_and_their_first_collective_connects():
    """Without the barrier, gloo's first collective fails after 30 s (its fixed connect
    limit); with it, the step starts together."""
    for code, out, err in _apart(35, 120):
        assert code == 0 and "sum 2" in out, err[-2000:]


@pytest.mark.slow  # ~15 s
def test_a_barrier_timeout_names_the_variable_to_raise():
    code, _, err = _apart(60, 3)[0]  # process 0 waits 3 s for process 1 (asleep for a minute), then stops
    assert code == 1
    line = _one_line(err)
    assert "process 0 of 2 waited for the others at 'compiled' for up to 3 s" in line and "JAXAGENTS_SYNC_TIMEOUT" in line, line
