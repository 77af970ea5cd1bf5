"""What a measurement produces and how it is reported: ``BenchRow`` (one environment,
mode and ``num_envs``), ``BenchResult`` (rows plus the machine: tables, auto-reset
overheads, JSON, a log-log plot) and ``CompareResult`` (ours and another library's,
measured back to back, with their ratios).
"""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
from typing import Iterable, Sequence


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
        """A row from the raw timings: ``times_s`` are the timed runs' wall times of one
        ``steps``-long scan over ``num_envs`` environments; the rates (best = fastest run,
        median) and ``repeats`` are derived from them."""
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
        """One result holding every row of ``results``, in order, with the first one's
        machine (and its command unless ``command`` is given). Raises ``ValueError`` when
        ``results`` is empty."""
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
        """The table's footer: machine, versions, the measuring protocol, extra libraries'
        versions, the command, and a note when a row has fewer than 3 timed runs."""
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
        """A JSON-ready dict: ``rows`` (each row's fields), ``machine`` and ``command``."""
        return {
            "rows": [dataclasses.asdict(r) for r in self.rows],
            "machine": dict(self.machine),
            "command": self.command,
        }

    def to_json(self, path: str | os.PathLike) -> None:
        """Write ``to_dict()`` to ``path`` as indented JSON."""
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
        """Our rate divided by theirs, one dict per row of ours whose ``num_envs`` they also
        measured: ``env``, ``theirs_library``, ``theirs_env``, ``mode``, ``num_envs`` and
        ``{best,median}_{env,agent}_ratio`` (> 1: jaxagents faster)."""
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
        """The heading printed above ``ratio_table()``."""
        return f"ratio jaxagents / {self.library} (> 1: jaxagents faster)"

    def ratio_table(self) -> str:
        """``ratios()`` as a plain-text table."""
        rows = [[o["env"], o["mode"], o["theirs_env"], str(o["num_envs"]),
                 f"{o['best_env_ratio']:.2f}", f"{o['median_env_ratio']:.2f}",
                 f"{o['best_agent_ratio']:.2f}", f"{o['median_agent_ratio']:.2f}"] for o in self.ratios()]
        headers = ["ours", "mode", self.library, "num_envs", "env-steps ratio (best)", "(median)",
                   "agent-steps ratio (best)", "(median)"]
        return _render(headers, rows, [False, False, False] + [True] * 5)

    def merged(self) -> BenchResult:
        """Both libraries' rows in one ``BenchResult`` (ours first)."""
        return BenchResult.merge([self.ours, self.theirs])

    def table(self) -> str:
        """The merged rows' table with its footer, then the titled ratio table."""
        return self.merged().table() + "\n\n" + self.ratio_title() + "\n" + self.ratio_table()

    def to_dict(self) -> dict:
        """``merged().to_dict()`` plus ``ratios``: a JSON-ready dict."""
        return {**self.merged().to_dict(), "ratios": self.ratios()}

    def to_json(self, path: str | os.PathLike) -> None:
        """Write ``to_dict()`` to ``path`` as indented JSON."""
        with open(path, "w") as f:
            json.dump(self.to_dict(), f, indent=2)
            f.write("\n")

    def plot(self, path: str | os.PathLike, title: str | None = None) -> None:
        """``BenchResult.plot`` of both libraries' rows: one line per (library, env, mode)."""
        self.merged().plot(path, title)
