"""Throughput harness: the measuring protocol of ``DESIGN.md`` as a library and a CLI.

The protocol, for every ``num_envs``:

1. build the rollout: ``jit`` of a ``lax.scan`` over ``steps`` batched steps, auto-reset
   included, with random *legal* actions sampled inside the scan;
2. compile it ahead of time (``jit(f).lower(...).compile()``) and report that time
   separately (``compile_s`` = trace + lower + compile);
3. run it once to warm up, then ``repeats`` (>= 3 for a reported figure) timed runs,
   each ended by ``block_until_ready``;
4. report the best and the median env-steps/s (``num_envs * steps / seconds``) and
   agent-steps/s (env-steps/s times the agents per environment).

Only the compiled scan is timed: the initial reset, host-side validation and the
transfer of inputs happen before the clock starts.

Three lines from Python::

    from jaxagents.bench import benchmark
    result = benchmark("prisoners_dilemma", num_envs=(1, 64, 1024, 4096), steps=1000)
    print(result.table())

``benchmark_jaxmarl`` / ``benchmark_pgx`` measure a JaxMARL / pgx environment with the
same protocol, and ``compare`` / ``compare_pgx`` run ours and theirs back to back in one
process (the only valid comparison).

Counting is the same for every library: one env-step is one call of the batched step for
one environment (auto-reset included), so env-steps/s = ``num_envs * steps / seconds``;
agent-steps/s multiplies by the agents *per environment* (``env.num_agents``, JaxMARL's
``num_agents``, pgx's ``num_players``). In turn-based games (Kuhn, Leduc, tic-tac-toe,
Hanabi) one agent acts per env-step, so acting agent-steps/s equal env-steps/s.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import importlib
import importlib.metadata
import io
import json
import os
import platform
import statistics
import sys
import time
from types import SimpleNamespace
from typing import Any, Callable, Iterable, Sequence

import jax
import jax.numpy as jnp

from jaxagents.core import spaces as ja_spaces
from jaxagents.core.env import Env, random_actions
from jaxagents.core.rng import check_rng
from jaxagents.core.registry import make
from jaxagents.core.types import Role
from jaxagents.core.wrappers.autoreset import AutoReset, VecEnv

MODES = ("vec", "autoreset", "bare")
"""What ``benchmark`` can measure:

* ``"vec"``: ``VecEnv`` batched auto-reset (resets only the finished episodes). The
  protocol's number.
* ``"autoreset"``: ``jax.vmap`` of the single-env ``AutoReset`` wrapper; under vmap its
  ``cond`` becomes a select, so every step pays a full reset (JaxMARL's cost model).
* ``"bare"``: ``jax.vmap(env.step)`` with no reset at all (finished episodes keep
  stepping): a lower bound on the cost, not a usable rollout.
"""

DEFAULT_NUM_ENVS = (1, 64, 1024, 4096)


# --------------------------------------------------------------------------- results
@dataclasses.dataclass
class BenchRow:
    """One measurement: one environment, one mode, one ``num_envs``.

    Rates are per second of wall time of the compiled scan; ``times_s`` holds every
    timed run (the warm-up excluded). ``episodes`` is the number of episodes that
    ended during one run (a check that auto-reset happened; in ``"bare"`` mode an
    episode that keeps stepping after its end may be counted on every later step).
    """

    library: str  # "jaxagents", "jaxmarl" or "pgx"
    env: str
    mode: str
    num_agents: int
    num_envs: int
    steps: int
    repeats: int
    compile_s: float
    times_s: list[float]
    episodes: int
    best_env_steps_per_s: float
    median_env_steps_per_s: float
    best_agent_steps_per_s: float
    median_agent_steps_per_s: float
    action_rng: str = "threefry"  # how the harness drew the random actions (``random_actions``)

    @classmethod
    def from_times(cls, *, library, env, mode, num_agents, num_envs, steps, compile_s, times_s, episodes,
                   action_rng="threefry"):
        work = num_envs * steps
        best, median = min(times_s), statistics.median(times_s)
        return cls(
            library=library,
            env=env,
            mode=mode,
            num_agents=num_agents,
            num_envs=num_envs,
            steps=steps,
            repeats=len(times_s),
            compile_s=compile_s,
            times_s=list(times_s),
            episodes=int(episodes),
            best_env_steps_per_s=work / best,
            median_env_steps_per_s=work / median,
            best_agent_steps_per_s=work * num_agents / best,
            median_agent_steps_per_s=work * num_agents / median,
            action_rng=action_rng,
        )


def _fmt_rate(x: float) -> str:
    return f"{x:,.0f}"


def _render(headers: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def line(cells):
        return "  ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right)).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows])


@dataclasses.dataclass
class BenchResult:
    """Rows of measurements plus the machine they ran on.

    Attributes:
        rows: one ``BenchRow`` per (library, env, mode, num_envs), in measuring order.
        machine: ``machine_info()`` of the process that measured.
        command: the exact command line when run from the CLI, else ``None``.
    """

    rows: list[BenchRow]
    machine: dict
    command: str | None = None

    @classmethod
    def merge(cls, results: Iterable["BenchResult"], command: str | None = None) -> "BenchResult":
        results = list(results)
        if not results:
            raise ValueError("merge needs at least one BenchResult")
        rows = [r for res in results for r in res.rows]
        return cls(rows=rows, machine=results[0].machine, command=command or results[0].command)

    # ------------------------------------------------------------------ reporting
    def table(self, machine: bool = True) -> str:
        """A plain-text aligned table; with ``machine`` a footer names the machine,
        the versions, the protocol and the command."""
        headers = ["library", "env", "mode", "agents", "num_envs", "steps", "compile_s",
                   "best env-steps/s", "median env-steps/s", "best agent-steps/s", "median agent-steps/s"]
        right = [False, False, False] + [True] * 8
        cells = [
            [r.library, r.env, r.mode, str(r.num_agents), str(r.num_envs), str(r.steps), f"{r.compile_s:.2f}",
             _fmt_rate(r.best_env_steps_per_s), _fmt_rate(r.median_env_steps_per_s),
             _fmt_rate(r.best_agent_steps_per_s), _fmt_rate(r.median_agent_steps_per_s)]
            for r in self.rows
        ]
        out = _render(headers, cells, right)
        if machine:
            out += "\n" + self.footer()
        return out

    def footer(self) -> str:
        m = self.machine
        repeats = sorted({r.repeats for r in self.rows})
        rngs = sorted({r.action_rng for r in self.rows})
        lines = [
            f"machine: {m.get('cpu_model') or m.get('processor') or '?'} ({m.get('cpu_count')} CPUs), "
            f"{m.get('platform')}; jax {m.get('jax')}, jaxlib {m.get('jaxlib')}, backend {m.get('backend')} "
            f"({m.get('device_kind')} x{m.get('device_count')}); python {m.get('python')}; {m.get('timestamp')}",
            f"protocol: jit(lax.scan) of batched steps with auto-reset and random legal actions "
            f"({'/'.join(rngs)}); "
            f"compile_s = trace+lower+compile (AOT); 1 warm-up, best/median of {'/'.join(map(str, repeats))} timed runs",
        ]
        if m.get("jaxmarl"):
            lines.append(f"jaxmarl {m['jaxmarl']}")
        if m.get("pgx"):
            lines.append(f"pgx {m['pgx']}")
        if self.command:
            lines.append(f"command: {self.command}")
        if any(r.repeats < 3 for r in self.rows):
            lines.append("note: fewer than 3 timed runs: does not meet the measuring protocol")
        return "\n".join(lines)

    def overheads(self) -> list[dict]:
        """Throughput cost of auto-reset relative to ``"bare"``, per (library, env,
        num_envs) measured in ``"bare"`` and at least one other mode.

        ``cost`` = ``1 - rate(mode) / rate(bare)``: the fraction of the bare step's
        throughput that the reset costs (0.3 = 30% fewer env-steps/s); from the best
        runs and from the medians.
        """
        bare = {(r.library, r.env, r.num_envs): r for r in self.rows if r.mode == "bare"}
        out = []
        for r in self.rows:
            b = bare.get((r.library, r.env, r.num_envs))
            if r.mode == "bare" or b is None:
                continue
            out.append(dict(
                library=r.library, env=r.env, num_envs=r.num_envs, mode=r.mode,
                best_cost=1.0 - r.best_env_steps_per_s / b.best_env_steps_per_s,
                median_cost=1.0 - r.median_env_steps_per_s / b.median_env_steps_per_s,
            ))
        return out

    def overhead_table(self) -> str:
        """``overheads()`` as a plain-text table (percent of bare throughput lost)."""
        rows = [[o["library"], o["env"], str(o["num_envs"]), o["mode"],
                 f"{100 * o['best_cost']:.1f}%", f"{100 * o['median_cost']:.1f}%"] for o in self.overheads()]
        return _render(["library", "env", "num_envs", "mode", "cost vs bare (best)", "cost vs bare (median)"],
                       rows, [False, False, True, False, True, True])

    def to_dict(self) -> dict:
        return {
            "rows": [dataclasses.asdict(r) for r in self.rows],
            "machine": dict(self.machine),
            "command": self.command,
        }

    def to_json(self, path: str | os.PathLike) -> None:
        with open(path, "w") as f:
            json.dump(self.to_dict(), f, indent=2)
            f.write("\n")

    def plot(self, path: str | os.PathLike, title: str | None = None) -> None:
        """Best env-steps/s against ``num_envs`` on log-log axes, one line per
        (library, env, mode); written to ``path`` (format from the extension)."""
        # The Agg canvas directly, not pyplot: no global backend switch in the caller's
        # process (a notebook keeps its inline backend) and no display needed.
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.ticker import NullLocator

        fig = Figure(figsize=(6.4, 4.8))
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        series: dict[tuple, list[BenchRow]] = {}
        for r in self.rows:
            series.setdefault((r.library, r.env, r.mode), []).append(r)
        for (lib, env, mode), rows in series.items():
            rows = sorted(rows, key=lambda r: r.num_envs)
            label = f"{env} ({mode})" if lib == "jaxagents" else f"{lib}: {env}"
            ax.plot([r.num_envs for r in rows], [r.best_env_steps_per_s for r in rows], marker="o", label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        sizes = sorted({r.num_envs for r in self.rows})
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticks(sizes, [str(n) for n in sizes])  # label the measured sizes, not 10^k
        ax.set_xlabel("num_envs")
        ax.set_ylabel("env-steps/s (best run)")
        m = self.machine
        device = m.get("cpu_model") if m.get("backend") == "cpu" else m.get("device_kind")
        ax.set_title(title or f"{device} ({m.get('backend')}), jax {m.get('jax')}", fontsize="medium")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize="small")
        fig.tight_layout()
        fig.savefig(path)


_LIBRARY_NAMES = {"jaxmarl": "JaxMARL", "pgx": "pgx"}


@dataclasses.dataclass
class CompareResult:
    """jaxagents and another library (JaxMARL or pgx) measured back to back in one
    process.

    ``ratios()`` divides our rate by theirs for each (mode, num_envs): > 1 means
    jaxagents is faster.
    """

    ours: BenchResult
    theirs: BenchResult

    @property
    def library(self) -> str:
        """The other library's display name (``"JaxMARL"``, ``"pgx"``)."""
        lib = self.theirs.rows[0].library if self.theirs.rows else "jaxmarl"
        return _LIBRARY_NAMES.get(lib, lib)

    def ratios(self) -> list[dict]:
        theirs = {r.num_envs: r for r in self.theirs.rows}
        out = []
        for r in self.ours.rows:
            t = theirs.get(r.num_envs)
            if t is None:
                continue
            out.append(dict(
                env=r.env, theirs_library=t.library, theirs_env=t.env, mode=r.mode, num_envs=r.num_envs,
                best_env_ratio=r.best_env_steps_per_s / t.best_env_steps_per_s,
                median_env_ratio=r.median_env_steps_per_s / t.median_env_steps_per_s,
                best_agent_ratio=r.best_agent_steps_per_s / t.best_agent_steps_per_s,
                median_agent_ratio=r.median_agent_steps_per_s / t.median_agent_steps_per_s,
            ))
        return out

    def ratio_title(self) -> str:
        return f"ratio jaxagents / {self.library} (> 1: jaxagents faster)"

    def ratio_table(self) -> str:
        rows = [[o["env"], o["mode"], o["theirs_env"], str(o["num_envs"]),
                 f"{o['best_env_ratio']:.2f}", f"{o['median_env_ratio']:.2f}",
                 f"{o['best_agent_ratio']:.2f}", f"{o['median_agent_ratio']:.2f}"] for o in self.ratios()]
        headers = ["ours", "mode", self.library, "num_envs", "env-steps ratio (best)", "(median)",
                   "agent-steps ratio (best)", "(median)"]
        return _render(headers, rows, [False, False, False] + [True] * 5)

    def merged(self) -> BenchResult:
        return BenchResult.merge([self.ours, self.theirs])

    def table(self) -> str:
        return self.merged().table() + "\n\n" + self.ratio_title() + "\n" + self.ratio_table()

    def to_dict(self) -> dict:
        return {**self.merged().to_dict(), "ratios": self.ratios()}

    def to_json(self, path: str | os.PathLike) -> None:
        with open(path, "w") as f:
            json.dump(self.to_dict(), f, indent=2)
            f.write("\n")

    def plot(self, path: str | os.PathLike, title: str | None = None) -> None:
        self.merged().plot(path, title)


# --------------------------------------------------------------------------- machine
def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith(("model name", "hardware", "cpu model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def machine_info() -> dict:
    """What a reported figure needs besides the numbers: platform, CPU, versions,
    JAX backend and device, time. ``XLA_FLAGS``/``JAX_PLATFORMS`` change what is
    measured, so they are recorded too."""
    devices = jax.devices()
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor(),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "jax": jax.__version__,
        "jaxlib": _version("jaxlib"),
        "jaxagents": _version("jaxagents"),
        "backend": jax.default_backend(),
        "device_kind": devices[0].device_kind,
        "device_count": len(devices),
        "xla_flags": os.environ.get("XLA_FLAGS"),
        "jax_platforms": os.environ.get("JAX_PLATFORMS"),
        "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


# --------------------------------------------------------------------------- validation
def _check_num_envs(num_envs) -> tuple[int, ...]:
    if isinstance(num_envs, int) and not isinstance(num_envs, bool):
        num_envs = (num_envs,)
    try:
        values = tuple(num_envs)
    except TypeError:
        raise ValueError(f"num_envs must be a positive int or a sequence of them, got {num_envs!r}") from None
    if not values:
        raise ValueError("num_envs must not be empty")
    for n in values:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"num_envs must contain positive ints only, got {n!r} in {values!r}")
    return values


def _check_count(name: str, value, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    return value


def _check_modes(mode) -> tuple[str, ...]:
    modes = MODES if mode == "all" else ((mode,) if isinstance(mode, str) else tuple(mode))
    bad = [m for m in modes if m not in MODES]
    if bad or not modes:
        raise ValueError(f"mode must be one of {', '.join(MODES)} or 'all' (or a sequence of them), got {mode!r}")
    return modes


# --------------------------------------------------------------------------- the protocol
def _scan_rollout(sample: Callable, step: Callable, steps: int) -> Callable:
    """The timed program, shared by both libraries.

    ``sample(key, state, aux) -> actions`` and ``step(key, state, aux, actions, params)
    -> (state, aux, reward_sum f32[], num_done i32[])`` act on the whole batch; ``aux`` is
    whatever the sampler needs besides the state (our ``TimeStep`` with its action
    masks; nothing for JaxMARL, whose masks are computed from the state).

    The returned ``run(key, state, aux, params)`` gives back the final carry plus the
    reward sum and the count of finished episodes: returning them keeps XLA from
    eliminating any part of the step as dead code.
    """

    def run(key, state, aux, params):
        def body(carry, _):
            key, state, aux, ret, eps = carry
            key, k_act, k_step = jax.random.split(key, 3)
            actions = sample(k_act, state, aux)
            state, aux, r, d = step(k_step, state, aux, actions, params)
            return (key, state, aux, ret + r, eps + d), None

        init = (key, state, aux, jnp.zeros((), jnp.float32), jnp.zeros((), jnp.int32))
        carry, _ = jax.lax.scan(body, init, None, length=steps)
        return carry

    return run


def _measure(run: Callable, args: tuple, repeats: int) -> tuple[float, list[float], int]:
    """AOT-compile ``run``, warm up once, time ``repeats`` runs.

    Returns ``(compile_s, times_s, episodes_per_run)``.
    """
    t0 = time.perf_counter()
    compiled = jax.jit(run).lower(*args).compile()
    compile_s = time.perf_counter() - t0
    out = jax.block_until_ready(compiled(*args))  # warm-up: first-run allocations, caches
    episodes = int(out[-1])
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(compiled(*args))
        times.append(time.perf_counter() - t0)
    return compile_s, times, episodes


def _reward_sum(reward: dict) -> jax.Array:
    return sum(jnp.sum(v, dtype=jnp.float32) for v in reward.values())


def carried_timestep(env: Env, ts):
    """The time step as the scan carries it: without the masks of roles declared
    ``always_legal``. Those masks are constants (all True) that ``random_actions``
    does not read, so the env still builds them but XLA need not write ~N x n bytes
    per step into the carry; every other field (observations included) stays live."""
    static = [k for k, r in env.roles.items() if r.always_legal]
    if not static:
        return ts
    return ts.replace(action_mask={k: v for k, v in ts.action_mask.items() if k not in static})


def _jaxagents_program(env: Env, mode: str, num_envs: int, steps: int, key: jax.Array, params,
                       action_rng: str = "threefry"):
    """``(run, args)`` for one of ``MODES``. ``args`` = (key, state, timestep, params),
    every leaf with a leading ``num_envs`` axis except key and params."""
    k_reset, k_run = jax.random.split(key)
    # Sampling from the *unwrapped* contract: random_actions reads env.roles and the
    # timestep's action masks, shape {role: [num_envs, n_role, ...]}; one batched call
    # (not a vmap) so that its all-legal fast path stays a real branch.
    def sample(k, state, ts):
        return random_actions(env, k, ts, batch_shape=(num_envs,), rng=action_rng)

    if mode == "vec":
        venv = VecEnv(env, num_envs)
        reset = venv.reset

        def step(k, state, ts, actions, params):
            state, ts = venv.step(k, state, actions, params)
            return state, carried_timestep(env, ts), _reward_sum(ts.reward), jnp.sum(ts.done, dtype=jnp.int32)

    else:
        inner = AutoReset(env) if mode == "autoreset" else env
        vreset = jax.vmap(inner.reset, in_axes=(0, None))
        vstep = jax.vmap(inner.step, in_axes=(0, 0, 0, None))

        def reset(k, params):
            return vreset(jax.random.split(k, num_envs), params)

        def step(k, state, ts, actions, params):
            state, ts = vstep(jax.random.split(k, num_envs), state, actions, params)
            return state, carried_timestep(env, ts), _reward_sum(ts.reward), jnp.sum(ts.done, dtype=jnp.int32)

    state, ts = jax.jit(reset)(k_reset, params)
    return _scan_rollout(sample, step, steps), (k_run, state, carried_timestep(env, ts), params)


JAXMARL_PREFIX = "jaxmarl:"
PGX_PREFIX = "pgx:"


def _resolve_env(env_or_id, env_kwargs) -> tuple[Env, str]:
    if isinstance(env_or_id, str) and env_or_id.startswith(JAXMARL_PREFIX):
        # "jaxmarl:ID": a JaxMARL env through our adapter (measures what from_jaxmarl costs)
        from jaxagents.compat import from_jaxmarl

        return from_jaxmarl(_make_jaxmarl(env_or_id[len(JAXMARL_PREFIX):], env_kwargs or {})), env_or_id
    if isinstance(env_or_id, str):
        env = make(env_or_id, **(env_kwargs or {}))
        label = env_or_id
        if env_kwargs:
            label += "(" + ",".join(f"{k}={v}" for k, v in env_kwargs.items()) + ")"
        return env, label
    if isinstance(env_or_id, Env):
        if env_kwargs:
            raise ValueError("env_kwargs only apply to a registered id, not to an Env instance")
        return env_or_id, env_or_id.name
    raise TypeError(f"env_or_id must be a jaxagents Env or a registered id string, got {type(env_or_id).__name__}")


def benchmark(
    env_or_id: Env | str,
    num_envs: int | Sequence[int] = DEFAULT_NUM_ENVS,
    steps: int = 1000,
    repeats: int = 3,
    mode: str | Sequence[str] = "vec",
    *,
    params: Any = None,
    env_kwargs: dict | None = None,
    seed: int = 0,
    progress: Callable[[BenchRow], None] | None = None,
    action_rng: str = "threefry",
) -> BenchResult:
    """Measure the throughput of a jaxagents environment with the protocol above.

    Args:
        env_or_id: an ``Env`` instance (yours, wrappers included), a registered id,
            ``"jaxmarl:ID"`` for JaxMARL's ``ID`` through ``from_jaxmarl``, or ``"pgx:ID"``
            for pgx's ``ID`` with its own step (``benchmark_pgx``; mode ``"vec"`` only).
        num_envs: batch sizes to measure (positive ints), each compiled separately.
        steps: ``T``, scan length per timed run (>= 1); ``num_envs * T`` env-steps a run.
        repeats: timed runs after the warm-up (>= 1; the protocol asks for >= 3).
        mode: ``"vec"`` (default), ``"autoreset"``, ``"bare"``, ``"all"`` or a sequence
            of modes; see ``MODES``.
        params: env params (default ``env.default_params()``), validated on the host
            before compiling and passed to the program as traced inputs.
        env_kwargs: constructor arguments when ``env_or_id`` is an id.
        seed: PRNG seed of the resets and actions.
        progress: called with each ``BenchRow`` as soon as it is measured.
        action_rng: how ``random_actions`` draws the actions: ``"threefry"`` (default)
            or ``"hash"`` (``jaxagents.core.rng``; with 10^5-10^6 agents per env the
            threefry draw costs about as much as a cheap env's step on CPU).

    Returns:
        ``BenchResult`` with one row per (mode, num_envs), modes outermost.
    """
    sizes = _check_num_envs(num_envs)
    steps = _check_count("steps", steps)
    repeats = _check_count("repeats", repeats)
    modes = _check_modes(mode)
    check_rng(action_rng)
    if isinstance(env_or_id, str) and env_or_id.startswith(PGX_PREFIX):
        if modes != ("vec",) or params is not None or env_kwargs or action_rng != "threefry":
            raise ValueError(f"{env_or_id}: pgx's own step and auto-reset are measured (benchmark_pgx); "
                             "mode, params, env_kwargs and action_rng do not apply")
        return benchmark_pgx(env_or_id, sizes, steps, repeats, seed=seed, progress=progress)
    env, label = _resolve_env(env_or_id, env_kwargs)
    # Traced params cannot raise inside the compiled program, so check them here.
    params = env.validate_params(params)
    key = jax.random.key(seed)
    rows = []
    for m in modes:
        for n in sizes:
            run, args = _jaxagents_program(env, m, n, steps, key, params, action_rng)
            compile_s, times, episodes = _measure(run, args, repeats)
            row = BenchRow.from_times(library="jaxagents", env=label, mode=m, num_agents=env.num_agents,
                                      num_envs=n, steps=steps, compile_s=compile_s, times_s=times,
                                      episodes=episodes, action_rng=action_rng)
            rows.append(row)
            if progress is not None:
                progress(row)
    return BenchResult(rows=rows, machine=machine_info())


# --------------------------------------------------------------------------- JaxMARL
@contextlib.contextmanager
def _quiet_stdout():
    """Silence stdout, at the file-descriptor level too.

    jaxmarl prints two lines about submoduled environments on import; keep our stdout
    (tables a user may pipe) clean. ``redirect_stdout`` alone is not enough: its mabrax
    module resets ``sys.stdout`` to ``sys.__stdout__`` while importing.
    """
    for s in (sys.stdout, sys.__stdout__):
        if s is not None:
            s.flush()
    try:
        fd = sys.__stdout__.fileno() if sys.__stdout__ is not None else None
        saved = os.dup(fd) if fd is not None else None
    except (OSError, ValueError, io.UnsupportedOperation):
        fd = saved = None
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        if saved is not None:
            os.dup2(devnull, fd)
        with contextlib.redirect_stdout(io.StringIO()):
            yield
    finally:
        if saved is not None:
            sys.__stdout__.flush()
            os.dup2(saved, fd)
            os.close(saved)
        os.close(devnull)


def _import_jaxmarl():
    try:
        with _quiet_stdout():
            return importlib.import_module("jaxmarl")
    except ImportError as e:
        raise ImportError(
            "JaxMARL benchmarks need the optional 'jaxmarl' extra: pip install 'jaxagents[jaxmarl]' "
            f"({e})"
        ) from e


def _make_jaxmarl(jaxmarl_id: str, make_kwargs: dict):
    jaxmarl = _import_jaxmarl()
    kwargs = dict(make_kwargs)
    if jaxmarl_id == "overcooked" and isinstance(kwargs.get("layout"), str):
        # JaxMARL's overcooked (v1) wants the layout dict; accept its name, as v2 does.
        from jaxmarl.environments.overcooked import overcooked_layouts

        name = kwargs["layout"]
        if name not in overcooked_layouts:
            raise ValueError(f"layout must be one of {', '.join(sorted(overcooked_layouts))}, got {name!r}")
        kwargs["layout"] = overcooked_layouts[name]
    if jaxmarl_id not in jaxmarl.registered_envs:
        import difflib

        close = difflib.get_close_matches(jaxmarl_id, jaxmarl.registered_envs, n=3, cutoff=0.4)
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        raise ValueError(f"unknown JaxMARL environment id {jaxmarl_id!r}.{hint}")
    with _quiet_stdout():
        return jaxmarl.make(jaxmarl_id, **kwargs)


def _to_jaxagents_space(space):
    """JaxMARL space -> the jaxagents space with the same sampling semantics."""
    kind = type(space).__name__
    if kind == "Discrete":
        return ja_spaces.Discrete(int(space.n), dtype=space.dtype)
    if kind == "MultiDiscrete":
        return ja_spaces.MultiDiscrete(list(space.num_categories), dtype=space.dtype)
    if kind == "Box":
        return ja_spaces.Box(space.low, space.high, space.shape, dtype=space.dtype)
    raise ValueError(f"benchmark_jaxmarl: unsupported JaxMARL action space {kind} (Discrete, MultiDiscrete, Box)")


def _jaxmarl_mask_fn(env, state0):
    """``state -> {agent: bool[n_actions]}`` legal-action masks, or ``None`` when the
    environment declares none (every action legal). Hanabi names it ``get_legal_moves``;
    the base class's ``get_avail_actions`` raises ``NotImplementedError``."""
    for name in ("get_legal_moves", "get_avail_actions"):
        fn = getattr(env, name, None)
        if fn is None:
            continue
        try:
            jax.eval_shape(fn, state0)
        except NotImplementedError:
            continue
        return fn
    return None


def _jaxmarl_program(env, num_envs: int, steps: int, key: jax.Array):
    """``(run, args)`` for ``jax.vmap(env.step)`` (JaxMARL's step, its own auto-reset
    included) with random legal actions; args = (key, state, None, None)."""
    agents = list(env.agents)
    # Each JaxMARL agent becomes a one-agent role, so our random_actions (the sampler of
    # the jaxagents path) draws its actions: same masking rule, same distributions.
    shim = SimpleNamespace(roles={
        a: Role(1, ja_spaces.Box(0.0, 1.0, (1,)), _to_jaxagents_space(env.action_space(a))) for a in agents
    })
    k_reset, k_run = jax.random.split(key)
    _, state = jax.jit(jax.vmap(env.reset))(jax.random.split(k_reset, num_envs))
    one_state = jax.tree_util.tree_map(lambda x: x[0], state)
    mask_fn = _jaxmarl_mask_fn(env, one_state)

    def sample_one(k, s):
        if mask_fn is not None:
            avail = mask_fn(s)
            masks = {a: jnp.asarray(avail[a]).astype(bool)[None] for a in agents}
        else:  # no masks declared: every action legal (what random_actions expects)
            masks = {a: jnp.ones(r.mask_shape, bool) for a, r in shim.roles.items()}
        acts = random_actions(shim, k, SimpleNamespace(action_mask=masks))
        return {a: acts[a][0] for a in agents}  # JaxMARL wants unbatched per-agent actions

    sample_batch = jax.vmap(sample_one)
    vstep = jax.vmap(env.step)

    def sample(k, state, aux):
        return sample_batch(jax.random.split(k, num_envs), state)

    def step(k, state, aux, actions, params):
        _, state, rewards, dones, _ = vstep(jax.random.split(k, num_envs), state, actions)
        r = sum(jnp.sum(rewards[a], dtype=jnp.float32) for a in agents)
        return state, aux, r, jnp.sum(dones["__all__"], dtype=jnp.int32)

    return _scan_rollout(sample, step, steps), (k_run, state, None, None)


def _jaxmarl_label(jaxmarl_id: str, make_kwargs: dict) -> str:
    shown = {k: v for k, v in make_kwargs.items() if isinstance(v, (str, int, float, bool))}
    return jaxmarl_id + ("(" + ",".join(f"{k}={v}" for k, v in shown.items()) + ")" if shown else "")


def benchmark_jaxmarl(
    jaxmarl_id_or_env,
    num_envs: int | Sequence[int] = DEFAULT_NUM_ENVS,
    steps: int = 1000,
    repeats: int = 3,
    *,
    seed: int = 0,
    progress: Callable[[BenchRow], None] | None = None,
    **make_kwargs,
) -> BenchResult:
    """Measure a JaxMARL environment with the same protocol, in this process.

    The timed program is ``jit`` of ``lax.scan`` over ``steps`` of ``jax.vmap(env.step)``
    (JaxMARL's step, which resets every environment every step and selects) with random
    actions, masked by ``get_avail_actions`` (Hanabi: ``get_legal_moves``) when the env
    defines it. Agents per environment = ``env.num_agents``. Rows have
    ``library="jaxmarl"`` and ``mode="jaxmarl"``.

    Args:
        jaxmarl_id_or_env: a ``jaxmarl.make`` id (``"MPE_simple_spread_v3"``,
            ``"overcooked"``, ``"hanabi"``, ...) or a JaxMARL environment instance.
        num_envs, steps, repeats, seed, progress: as in ``benchmark``.
        **make_kwargs: passed to ``jaxmarl.make``; ``layout="cramped_room"`` (a name)
            is accepted for ``"overcooked"``.

    Raises:
        ImportError: JaxMARL is not installed (``pip install 'jaxagents[jaxmarl]'``).
    """
    sizes = _check_num_envs(num_envs)
    steps = _check_count("steps", steps)
    repeats = _check_count("repeats", repeats)
    jaxmarl = _import_jaxmarl()
    if isinstance(jaxmarl_id_or_env, str):
        env = _make_jaxmarl(jaxmarl_id_or_env, make_kwargs)
        label = _jaxmarl_label(jaxmarl_id_or_env, make_kwargs)
    else:
        if make_kwargs:
            raise ValueError("make_kwargs only apply to a JaxMARL id, not to an environment instance")
        env, label = jaxmarl_id_or_env, type(jaxmarl_id_or_env).__name__
    key = jax.random.key(seed)
    rows = []
    for n in sizes:
        run, args = _jaxmarl_program(env, n, steps, key)
        compile_s, times, episodes = _measure(run, args, repeats)
        row = BenchRow.from_times(library="jaxmarl", env=label, mode="jaxmarl", num_agents=int(env.num_agents),
                                  num_envs=n, steps=steps, compile_s=compile_s, times_s=times, episodes=episodes)
        rows.append(row)
        if progress is not None:
            progress(row)
    machine = machine_info()
    machine["jaxmarl"] = _version("jaxmarl") or getattr(jaxmarl, "__version__", None)
    return BenchResult(rows=rows, machine=machine)


def _compare(measure_theirs: Callable[[int], BenchResult], env_or_id, num_envs, steps, repeats, mode,
             params, env_kwargs, seed, progress) -> CompareResult:
    """Ours then theirs at each size, in this process; ``measure_theirs(n)`` measures
    the other library at one size."""
    sizes = _check_num_envs(num_envs)
    ours, theirs = [], []
    for n in sizes:
        ours.append(benchmark(env_or_id, (n,), steps, repeats, mode, params=params, env_kwargs=env_kwargs,
                              seed=seed, progress=progress))
        theirs.append(measure_theirs(n))
    ours_r, theirs_r = BenchResult.merge(ours), BenchResult.merge(theirs)
    # Modes outermost, like benchmark(): a stable sort on the mode alone keeps the
    # num_envs order the caller gave.
    order = {m: i for i, m in enumerate(_check_modes(mode))}
    ours_r.rows.sort(key=lambda r: order[r.mode])
    ours_r.machine = theirs_r.machine  # has the other library's version too
    return CompareResult(ours=ours_r, theirs=theirs_r)


def compare(
    env_or_id: Env | str,
    jaxmarl_id: str,
    num_envs: int | Sequence[int] = DEFAULT_NUM_ENVS,
    steps: int = 1000,
    repeats: int = 3,
    mode: str | Sequence[str] = "vec",
    *,
    params: Any = None,
    env_kwargs: dict | None = None,
    jaxmarl_kwargs: dict | None = None,
    seed: int = 0,
    progress: Callable[[BenchRow], None] | None = None,
) -> CompareResult:
    """Ours against JaxMARL's, back to back in this process for each ``num_envs``
    (ours first, then JaxMARL's, at the same size) so that both see the same machine
    state. Arguments as in ``benchmark`` / ``benchmark_jaxmarl``.

    Returns:
        ``CompareResult``; ``.ratios()`` / ``.ratio_table()`` give ours / JaxMARL's.
    """
    _check_num_envs(num_envs)
    _check_count("steps", steps)
    _check_count("repeats", repeats)
    _check_modes(mode)
    _import_jaxmarl()  # fail before measuring anything

    def theirs(n):
        return benchmark_jaxmarl(jaxmarl_id, (n,), steps, repeats, seed=seed, progress=progress,
                                 **(jaxmarl_kwargs or {}))

    return _compare(theirs, env_or_id, num_envs, steps, repeats, mode, params, env_kwargs, seed, progress)


# --------------------------------------------------------------------------- pgx
def _import_pgx():
    try:
        return importlib.import_module("pgx")
    except ImportError as e:
        raise ImportError(f"pgx benchmarks need the optional 'pgx' package: pip install pgx ({e})") from e


def _make_pgx(pgx_id: str):
    pgx = _import_pgx()
    if pgx_id.startswith(PGX_PREFIX):
        pgx_id = pgx_id[len(PGX_PREFIX):]
    available = pgx.available_envs()
    if pgx_id not in available:
        import difflib

        close = difflib.get_close_matches(pgx_id, available, n=3, cutoff=0.4)
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        raise ValueError(f"unknown pgx environment id {pgx_id!r}.{hint} Available: {', '.join(available)}")
    return pgx.make(pgx_id), pgx_id


def _pgx_parts(env, num_envs: int):
    """``(sample, step)`` of the pgx program (see ``_scan_rollout``) for a batch of
    ``num_envs`` pgx states.

    pgx has no auto-reset in ``env.step``; ``pgx.experimental.auto_reset`` is the wrapper
    pgx's own examples train with (two ``lax.cond``, which become selects under vmap: a
    reset is computed every step, JaxMARL's cost model). Its step key is
    ``split(key)[0]`` and its reset key ``split(key)[1]``, as ours.

    Actions are drawn exactly as on our side: our ``random_actions`` on a shim with one
    single-agent role per player whose mask is ``state.legal_action_mask`` (one uniform
    per player picks the k-th legal action), and the current player's draw is taken
    (our turn-based games also draw for every role and use the active one's).
    """
    from pgx.experimental import auto_reset

    n_players, n_actions = int(env.num_players), int(env.num_actions)
    names = [f"player_{i}" for i in range(n_players)]
    shim = SimpleNamespace(roles={a: Role(1, ja_spaces.Box(0.0, 1.0, (1,)), ja_spaces.Discrete(n_actions))
                                  for a in names})

    def sample_one(k, s):
        masks = {a: s.legal_action_mask[None] for a in names}
        acts = random_actions(shim, k, SimpleNamespace(action_mask=masks))
        return jnp.stack([acts[a][0] for a in names])[jnp.clip(s.current_player, 0, n_players - 1)]

    sample_batch = jax.vmap(sample_one)
    vstep = jax.vmap(auto_reset(env.step, env.init))

    def sample(k, state, aux):
        return sample_batch(jax.random.split(k, num_envs), state)

    def step(k, state, aux, actions, params):
        state = vstep(state, actions, jax.random.split(k, num_envs))
        # auto_reset keeps the finished episode's rewards and flags on the new state
        done = state.terminated | state.truncated
        return state, aux, jnp.sum(state.rewards, dtype=jnp.float32), jnp.sum(done, dtype=jnp.int32)

    return sample, step


def _pgx_program(env, num_envs: int, steps: int, key: jax.Array):
    """``(run, args)`` for pgx's ``jax.vmap(auto_reset(env.step, env.init))`` with random
    legal actions (``_pgx_parts``); args = (key, state, None, None)."""
    k_reset, k_run = jax.random.split(key)
    state = jax.jit(jax.vmap(env.init))(jax.random.split(k_reset, num_envs))
    sample, step = _pgx_parts(env, num_envs)
    return _scan_rollout(sample, step, steps), (k_run, state, None, None)


def benchmark_pgx(
    pgx_id: str,
    num_envs: int | Sequence[int] = DEFAULT_NUM_ENVS,
    steps: int = 1000,
    repeats: int = 3,
    *,
    seed: int = 0,
    progress: Callable[[BenchRow], None] | None = None,
) -> BenchResult:
    """Measure a pgx environment with the same protocol, in this process.

    The timed program is ``jit`` of ``lax.scan`` over ``steps`` of
    ``jax.vmap(pgx.experimental.auto_reset(env.step, env.init))`` (pgx's recommended
    auto-reset: it computes a reset every step under vmap) with random legal actions
    drawn like ours (see ``_pgx_program``). pgx's observation is part of its state, so
    it is computed every step, as ours is. Rows have ``library="pgx"``,
    ``mode="pgx"`` and ``num_agents = env.num_players``.

    Args:
        pgx_id: a ``pgx.make`` id (``"kuhn_poker"``, ``"leduc_holdem"``,
            ``"tic_tac_toe"``, ...), with or without the ``"pgx:"`` prefix.
        num_envs, steps, repeats, seed, progress: as in ``benchmark``.

    Raises:
        ImportError: pgx is not installed (``pip install pgx``).
        ValueError: unknown id (with close matches) or bad sizes.
    """
    sizes = _check_num_envs(num_envs)
    steps = _check_count("steps", steps)
    repeats = _check_count("repeats", repeats)
    env, label = _make_pgx(pgx_id)
    key = jax.random.key(seed)
    rows = []
    for n in sizes:
        run, args = _pgx_program(env, n, steps, key)
        compile_s, times, episodes = _measure(run, args, repeats)
        row = BenchRow.from_times(library="pgx", env=label, mode="pgx", num_agents=int(env.num_players),
                                  num_envs=n, steps=steps, compile_s=compile_s, times_s=times, episodes=episodes)
        rows.append(row)
        if progress is not None:
            progress(row)
    machine = machine_info()
    machine["pgx"] = _version("pgx")
    return BenchResult(rows=rows, machine=machine)


def compare_pgx(
    env_or_id: Env | str,
    pgx_id: str,
    num_envs: int | Sequence[int] = DEFAULT_NUM_ENVS,
    steps: int = 1000,
    repeats: int = 3,
    mode: str | Sequence[str] = "vec",
    *,
    params: Any = None,
    env_kwargs: dict | None = None,
    seed: int = 0,
    progress: Callable[[BenchRow], None] | None = None,
) -> CompareResult:
    """Ours against pgx's, back to back in this process for each ``num_envs`` (ours
    first). Arguments as in ``benchmark`` / ``benchmark_pgx``; e.g.
    ``compare_pgx("leduc_poker", "leduc_holdem")``.

    Returns:
        ``CompareResult``; ``.ratios()`` / ``.ratio_table()`` give ours / pgx's.
    """
    _check_num_envs(num_envs)
    _check_count("steps", steps)
    _check_count("repeats", repeats)
    _check_modes(mode)
    _make_pgx(pgx_id)  # fail (missing pgx, unknown id) before measuring anything

    def theirs(n):
        return benchmark_pgx(pgx_id, (n,), steps, repeats, seed=seed, progress=progress)

    return _compare(theirs, env_or_id, num_envs, steps, repeats, mode, params, env_kwargs, seed, progress)


__all__ = [
    "MODES", "DEFAULT_NUM_ENVS", "BenchRow", "BenchResult", "CompareResult",
    "benchmark", "benchmark_jaxmarl", "benchmark_pgx", "compare", "compare_pgx", "machine_info",
]
