"""Populations over a device mesh, checked against the single-device program in a
subprocess with 4 fake CPU devices (XLA_FLAGS must be set before JAX starts)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def _env(n: int) -> dict:
    return {**os.environ, "XLA_FLAGS": f"--xla_force_host_platform_device_count={n}", "JAX_PLATFORMS": "cpu"}


def run_with_devices(script: str, n: int, *args: str, timeout: float = 600) -> dict:
    proc = subprocess.run([sys.executable, str(HERE / script), *args], env=_env(n), capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.heavy
def test_members_sharded_over_4_devices_match_one_device():
    """(a) 8 members, PBT every 2 updates: on one device, and 2 per device on 4.
    The PBT decisions (parents, explored learning rates, fitness) are identical. The
    parameters agree to float rounding, not bit for bit: XLA compiles a member's
    update differently when 8 members are vmapped together than when 2 are (the
    vectorised reductions sum in another order), which moves some values by an ulp."""
    out = run_with_devices("mesh_check.py", 4)
    assert out["devices_per_leaf"] == [4]  # every member leaf is spread over the 4 devices
    assert out["some_copied"] and out["parents_equal"] and out["hparams_equal"] and out["fitness_equal"]
    assert out["max_param_diff"] <= 1e-5 * max(out["param_scale"], 1.0)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_two_processes_of_two_devices_match_one_process_of_four():
    """(c) jax.distributed on 127.0.0.1 (gloo): each process builds and updates only
    its own members; the result is bit-identical to one process with 4 devices."""
    single = run_with_devices("multihost_check.py", 4, "single", timeout=300)
    port = str(_free_port())
    procs = [subprocess.Popen([sys.executable, str(HERE / "multihost_check.py"), "multi", port, str(i)], env=_env(2),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(2)]
    try:
        outs = [p.communicate(timeout=300) for p in procs]
    finally:
        for p in procs:  # never leave a process behind, whatever happened
            if p.poll() is None:
                p.kill()
                p.wait()
    results = []
    for p, (stdout, stderr) in zip(procs, outs):
        assert p.returncode == 0, stderr[-3000:]
        results.append(json.loads(stdout.strip().splitlines()[-1]))
    assert single["local_shards"] == [4] and [r["local_shards"] for r in results] == [[2], [2]]
    for r in results:
        assert r["digest"] == single["digest"]  # every member's parameters, bit for bit
        assert r["parents"] == single["parents"] and r["lr"] == single["lr"]
    assert any(p != list(range(8)) for p in single["parents"])  # PBT did copy members
