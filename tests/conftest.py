"""Shared test set-up: CPU only, quieter JAX, and cheaper compiles.

The suite is dominated by XLA compile time on 2 CPU cores. Turning XLA's backend
optimisations off cuts the CPU time of compiling by about a quarter, and the tests
run small programs, so they lose nothing by it. Benchmarks never run under this flag.
"""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
if "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_backend_optimization_level=0").strip()


# Property tests draw the same examples on every run (CI must not go red by chance);
# set HYPOTHESIS_PROFILE=explore to search new examples locally.
from hypothesis import settings  # noqa: E402

settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
