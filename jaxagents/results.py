"""What a run shows a person: the progress bar while it trains, and the results
table at the end (every evaluation at the start and at the end of training, the
population's members when there are some)."""

from __future__ import annotations

import numpy as np


class Progress:
    """A progress bar over updates, created at the first update (so compile time
    does not distort its rate)."""

    def __init__(self, total: int, enabled: bool):
        self.bar, self.total, self.enabled = None, total, enabled

    def __call__(self, update, metrics):  # host callback, once per update
        if not self.enabled:
            return
        if self.bar is None:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=self.total, unit="upd", dynamic_ncols=True)
        u = int(np.max(np.asarray(update)))
        self.bar.n = max(self.bar.n, u)
        if "fitness" in metrics:  # a population: its best and median member
            f = np.asarray(metrics["fitness"], np.float64)
            if np.isfinite(f).any():
                self.best, self.median = float(np.nanmax(f)), float(np.nanmedian(f))
            if getattr(self, "best", None) is not None:
                self.bar.set_postfix({"best": f"{self.best:.4g}", "median": f"{self.median:.4g}"}, refresh=False)
            self.bar.refresh()
            return
        shown = {k.split("/", 1)[-1][:14]: float(np.nanmean(np.asarray(v))) for k, v in metrics.items() if k.startswith("episode_return/")}
        self.bar.set_postfix({k: f"{v:.3g}" for k, v in list(shown.items())[:3]}, refresh=False)
        self.bar.refresh()

    def close(self):
        """Close the bar, if one was made."""
        if self.bar is not None:
            self.bar.close()


def final_metrics(rows: list[dict]) -> dict:
    """Last value of every metric (evaluations are sparse: their last entry; training
    returns from the last update in which an episode finished -- in the others the
    learner reports a placeholder 0 next to ``episodes == 0``)."""
    out = {}
    for r in rows:
        no_episode = r.get("episodes") == 0
        for k, v in r.items():
            if k.endswith("@seeds") or k in ("update", "env_steps"):
                continue
            if k.startswith("eval/") or (k.startswith("episode_return/") and not no_episode):
                out[k] = v
    return out


def _num(v) -> str:
    return f"{v:>10.4f}" if isinstance(v, (int, float)) else f"{'-':>10}"


def format_results(results: dict) -> str:
    """The results table: every evaluation at the start (update 0, the untrained
    policy) and at the end, and the final training returns."""
    start = results.get("start") or {}
    lines = [
        f"run       {results['run_dir']}",
        f"learner   {results['learner']} on {results['env']} ({results['num_seeds']} seed(s))",
        f"updates   {results['updates']}   env steps {results['env_steps']:,}",
        f"time      {results['wall_s']:.1f} s total, {results['compile_s']:.1f} s compiling"
        + (f", {results['env_steps_per_s']:,.0f} env-steps/s training" if results.get("env_steps_per_s") else ""),
        "",
        f"{'metric':<40} {'start':>10} {'final':>10}",
        f"{'-' * 40} {'-' * 10} {'-' * 10}",
    ]
    for k, v in results["final"].items():
        lines.append(f"{k:<40} {_num(start.get(k))} {_num(v)}")
    if "eval/exploitability" in start and "eval/exploitability" in results["final"]:
        lines.append(
            f"\nexploitability {start['eval/exploitability']:.3f} (untrained, about uniform play) -> "
            f"{results['final']['eval/exploitability']:.4f}"
            + (f" (parameter average {results['final']['eval/average/exploitability']:.4f})" if "eval/average/exploitability" in results["final"] else "")
        )
    pop = results.get("population")
    if pop:
        from jaxagents.population.report import format_members

        lines.append(f"\npopulation of {pop['size']} ({'PBT' if pop['pbt'] else 'no PBT'}), seed 0, last measured fitness:")
        lines.append(format_members(pop["members"], pop["best"]))
    if results.get("plot"):
        lines.append(f"\nlearning curves: {results['plot']}")
    for path in (pop or {}).get("plots", []):
        lines.append(f"population: {path}")
    return "\n".join(lines)
