"""Populations over a device mesh, checked against the single-device program in a
subprocess with 4 fake CPU devices (XLA_FLAGS must be set before JAX starts)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def run_with_devices(script: str, n: int, timeout: float = 600) -> dict:
    env = {**os.environ, "XLA_FLAGS": f"--xla_force_host_platform_device_count={n}", "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run([sys.executable, str(HERE / script)], env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
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
