"""Write the environment reference: one page per registered id, built from the registry
and the environment itself, so the pages cannot drift from the code.

    python docs/environments/generate.py            # rewrite docs/environments/reference/*.md
                                                    # and docs/api/environments.rst
    python docs/environments/generate.py --frames   # also render one frame per id that renders
    python docs/environments/generate.py --check    # exit 1 when a page is missing or stale

Each page gives the id's description, class and constructor arguments (the registry's
defaults applied), its roles with their observation and action spaces, its params with
their defaults (ranges from the params class's own docstring where it gives them), its
capabilities (scripted players, exact evaluation, rendering, named tasks), what the
family page says it is checked against, its row of the family throughput table in
BENCHMARKS.md, a frame (``docs/figures/envs/ID.png``, written by ``--frames``: the
state after a reset with ``jax.random.key(0)`` and a few random legal steps) or, for a
text game, the first observation as text, and the bundled config that ``jaxagents train
ID`` runs. ``docs/check_site.py`` runs ``--check``.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import io
import os
import re
import sys

DOCS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(DOCS)
OUT = os.path.join(DOCS, "environments", "reference")
FRAMES = os.path.join(DOCS, "figures", "envs")
FAMILIES = ("games", "robots", "economy", "meanfield")
FRAME_STEPS = 5  # random legal steps before a frame (fewer when the episode would end)
FRAME_MIN_WIDTH = 240  # pixels; a narrower frame is enlarged by a whole factor


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def checked_against() -> dict[str, tuple[str, str]]:
    """``{id: (family page, checked-against cell)}`` from the family pages' tables
    (``| id | what | checked against |``; a row names its ids in backquotes)."""
    out = {}
    for family in FAMILIES:
        with open(os.path.join(DOCS, "environments", family + ".md")) as f:
            lines = f.read().splitlines()
        for i, line in enumerate(lines):
            if _cells(line)[:1] != ["id"] or "checked against" not in line:
                continue
            for row in lines[i + 2:]:
                if not row.startswith("|"):
                    break
                cells = _cells(row)
                for env_id in re.findall(r"`([a-z0-9_]+)`", cells[0]):
                    out[env_id] = (family, cells[-1])
    return out


def bench_rows() -> dict[str, list[str]]:
    """``{id: [markdown lines]}``: the header and the row of every throughput table in
    BENCHMARKS.md whose first column is ``env`` and has a row for the id."""
    with open(os.path.join(ROOT, "BENCHMARKS.md")) as f:
        lines = f.read().splitlines()
    out: dict[str, list[str]] = {}
    for i, line in enumerate(lines):
        if not line.startswith("| env |"):
            continue
        header = lines[i:i + 2]
        for row in lines[i + 2:]:
            if not row.startswith("|"):
                break
            m = re.fullmatch(r"`([a-z0-9_]+)`", _cells(row)[0])
            if m and m.group(1) not in out:
                out[m.group(1)] = header + [row]
    return out


def _space(space) -> str:
    shape = "×".join(str(d) for d in space.shape) or "scalar"
    name = type(space).__name__
    if name == "Discrete":
        return f"`Discrete({space.n})`, {space.dtype.name}"
    if name == "MultiDiscrete":
        return f"`MultiDiscrete({list(map(int, space.nvec))})`, {space.dtype.name}"
    if name == "Box":
        import numpy as np

        lo, hi = np.asarray(space.low), np.asarray(space.high)
        bounds = f"[{lo.min():g}, {hi.max():g}]" if lo.size else ""
        return f"`Box` {shape} {space.dtype.name} {bounds}".strip()
    return f"`{name}` {shape} {space.dtype.name}"


def _value(v) -> str:
    import numpy as np

    a = np.asarray(v)
    if a.ndim == 0:
        text = repr(a.item())
    elif a.size <= 8:
        text = repr(a.tolist())
    else:
        text = f"{a.dtype.name}[{', '.join(map(str, a.shape))}]"
    return text.replace("|", "\\|")


def _param_notes(params_cls) -> dict[str, str]:
    """``{field: text}`` from an ``Attributes:`` section of the params class docstring;
    an entry naming several fields (``a, b: text``) gives each the text."""
    return _section_notes([inspect.getdoc(params_cls) or ""], ("Attributes:", "Fields:"))


def _arg_notes(cls) -> dict[str, str]:
    """``{argument: text}`` from the ``Args:`` sections of the class and ``__init__``
    docstrings; an entry naming several arguments (``a, b: text``) gives each the text."""
    return _section_notes([inspect.getdoc(cls) or "", inspect.getdoc(cls.__init__) or ""], ("Args:",))


def _section_notes(docs: list[str], headers: tuple[str, ...]) -> dict[str, str]:
    """``{name: text}`` of the entries (``name: text``, ``a, b: text``, continued on lines
    indented 6 or more) under any of ``headers`` in ``docs``, up to an unindented line."""
    notes, current = {}, []
    for doc in docs:
        inside = False
        for line in doc.splitlines():
            if line.strip() in headers:
                inside, current = True, []
                continue
            if not inside:
                continue
            m = re.match(r"^ {2,8}(\*{0,2}[a-z_][a-z0-9_]*(?:, [a-z_][a-z0-9_]*)*)(?: \([^)]*\))?:\s*(.*)$", line)
            if m:
                current = [n.strip() for n in m.group(1).split(",")]
                for n in current:
                    notes[n] = m.group(2)
            elif line.strip() and current and line.startswith(" " * 6):
                for n in current:
                    notes[n] += " " + line.strip()
            elif line.strip() and not line.startswith(" "):
                inside = False
    return {k: " ".join(v.split()).replace("|", "\\|") for k, v in notes.items()}


def spaces_text(cls) -> list[str]:
    """What the observation and action arrays hold, in the environment's own words: the
    paragraphs of its module and class docstrings that begin with ``Observation`` or
    ``Action`` (each paragraph with the indented lines that continue it)."""
    out = []
    for doc in (inspect.getdoc(sys.modules[cls.__module__]) or "", inspect.getdoc(cls) or ""):
        lines = doc.splitlines()

        def paragraph_end(j):  # the blank line (or the end) after the paragraph at j
            while j < len(lines) and (lines[j].strip() or (j + 1 < len(lines) and lines[j + 1].startswith(" "))):
                j += 1
            return j

        i = 0
        while i < len(lines):
            if re.match(r"^(Observations?|Actions?)\b", lines[i]):
                j = paragraph_end(i + 1)
                # a paragraph that ends with ":" goes on with the list under it
                while (lines[j - 1].rstrip().endswith(":") or re.match(r"^(\* |- |\d+\. )", lines[j - 1].lstrip())
                       or lines[j - 1].startswith(" ")) and j + 1 < len(lines) \
                        and re.match(r"^(\* |- |\d+\. |  )", lines[j + 1]):
                    j = paragraph_end(j + 1)
                block = "\n".join(lines[i:j]).rstrip()
                if block not in out:
                    out.append(block)
                i = j
            else:
                i += 1
    return out


def renders(env) -> bool:
    """Whether ``env`` -- below its wrappers, which forward ``render`` -- draws frames."""
    from jaxagents.core.env import Env

    return type(getattr(env, "unwrapped", env)).render is not Env.render


def budget_key(path: str) -> str:
    """The dotted key of a config's ``total_timesteps`` (``train.total_timesteps``, or
    ``train.ppo.total_timesteps`` where the learner nests its PPO settings)."""
    import yaml

    def find(node, prefix):
        if isinstance(node, dict):
            if "total_timesteps" in node:
                return prefix + ".total_timesteps"
            for k, v in node.items():
                found = find(v, f"{prefix}.{k}")
                if found:
                    return found
        return None

    with open(path) as f:
        return find(yaml.safe_load(f).get("train", {}), "train") or "train.total_timesteps"


def page(env_id: str, checks: dict, bench: dict) -> str:
    """The markdown page of ``env_id``."""
    import jaxagents_baselines as baselines

    from jaxagents.core import registry
    from jaxagents.core.env import Env

    spec = registry.spec(env_id)
    cls = registry.load_entry_point(spec.entry_point)
    env = registry.make(env_id)
    params = env.default_params()
    qual = f"{cls.__module__}.{cls.__qualname__}"
    lines = [f"# `{env_id}`", "", spec.description + ".", ""]
    summary = (inspect.getdoc(cls) or "").split("\n\n")[0]
    lines += [f"Class {{py:class}}`{qual}`.", "", " ".join(summary.split()), ""]
    made = ", ".join(f"{k}={v!r}" for k, v in spec.kwargs.items())
    lines += ["```python", "import jaxagents", f"env = jaxagents.make({env_id!r}{', ' + made if made else ''})",
              "```", ""]

    lines += ["## Roles", "", "| role | agents | observation (one agent) | action (one agent) | always legal / active |",
              "|---|---:|---|---|---|"]
    for name, role in env.roles.items():
        flags = f"{'yes' if role.always_legal else 'no'} / {'yes' if role.always_active else 'no'}"
        lines.append(f"| `{name}` | {role.num_agents} | {_space(role.observation_space)} | "
                     f"{_space(role.action_space)} | {flags} |")
    lines += ["", "Arrays carry a leading agent axis per role: `obs[role]` is `[agents, *observation]`, "
              "`actions[role]` is `[agents, *action]` ({doc}`../../contract`).", ""]
    meaning = spaces_text(cls)
    if meaning:
        lines += ["What the observation and action entries mean, from the environment's docstring:", "",
                  "```text", *"\n\n".join(meaning).splitlines(), "```", ""]
    else:
        lines += [f"What each observation entry means: the docstring of {{py:class}}`{qual}` and of its module.", ""]

    sig = inspect.signature(cls.__init__)
    args = [(n, p) for n, p in sig.parameters.items() if n != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
    lines += ["## Constructor arguments", ""]
    if args:
        arg_notes = _arg_notes(cls)
        lines += ["Static: each value compiles its own program. `jaxagents.make` and a config's `env.kwargs` take them.", "",
                  "| argument | default | meaning / range |", "|---|---|---|"]
        for n, p in args:
            default = spec.kwargs.get(n, p.default)
            shown = "required" if default is inspect.Parameter.empty else f"`{default!r}`".replace("|", "\\|")
            lines.append(f"| `{n}` | {shown} | {arg_notes.get(n, '')} |")
        if any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values()) and arg_notes.get("**kwargs"):
            lines.append(f"| `**kwargs` | | {arg_notes['**kwargs']} |")
    else:
        lines.append("None.")
    lines.append("")

    lines += ["## Params", ""]
    fields = dataclasses.fields(params) if dataclasses.is_dataclass(params) else []
    if fields:
        notes = _param_notes(type(params))
        lines += ["Dynamic: passed to `reset` / `step`, overridden in a config's `env.params`; "
                  "`env.validate_params` checks types and ranges.", "",
                  "| param | default | meaning / range |", "|---|---|---|"]
        for f in fields:
            lines.append(f"| `{f.name}` | `{_value(getattr(params, f.name))}` | {notes.get(f.name, '')} |")
    else:
        lines.append("None.")
    lines.append("")

    caps = []
    scripted = env.scripted_policies()
    if scripted:
        caps.append(f"scripted players: {', '.join(f'`{k}`' for k in scripted)}")
    if env.exact_evaluation(params) is not None:
        caps.append("exact evaluation (`env.exact_evaluation(params)`): policies scored without sampling")
    if renders(env):
        caps.append("rendering (`env.render(state)`: an RGB frame)")
    if hasattr(cls, "tasks"):
        caps.append(f"{len(cls.tasks())} named tasks (`jaxagents list-tasks {env_id}`)")
    lines += ["## Capabilities", "", *(f"- {c}" for c in caps or ["none beyond the contract"]), ""]

    family, check = checks.get(env_id, (None, None))
    lines += ["## Checked against", ""]
    lines.append(f"{check} (the {{doc}}`{family} family page <../{family}>` gives the details)." if check
                 else "Not listed on a family page.")
    lines.append("")
    lines += ["## Throughput", ""]
    if env_id in bench:
        lines += ["Its row in the throughput tables of {doc}`../../benchmarks` (measured on 2 CPU cores):", "",
                  *bench[env_id], ""]
    else:
        lines += [f"`jaxagents bench {env_id} --num-envs 1 64 1024` measures it; the measured figures are in "
                  "{doc}`../../benchmarks`.", ""]
    if os.path.exists(os.path.join(FRAMES, env_id + ".png")):
        lines += ["## A frame", "", f"`env.render(state)` after `env.reset(jax.random.key(0))` and up to {FRAME_STEPS} "
                  "random legal steps (`jaxagents.random_actions`):", "",
                  f"![{env_id}: a rendered frame after a reset and a few random legal steps]"
                  f"(../../figures/envs/{env_id}.png)", ""]
    if hasattr(env, "render_observation"):
        role, text = first_observation(env)
        lines += ["## A first observation", "",
                  f"`env.render_observation(ts.obs[{role!r}][0])` after `env.reset(jax.random.key(0))`, "
                  f"for `{role}`, the seat to act:", "", "```text", text.strip("\n"), "```", ""]

    lines += ["## Training it", ""]
    try:
        name = baselines.for_env(env_id)
        budget = budget_key(baselines.resolve(name))
        lines += [f"`jaxagents train {env_id}` runs the bundled config `{name}` "
                  f"(`baselines/configs/{name}.yaml`); {{doc}}`../../which_learner` says why that learner.", "",
                  "```bash", f"jaxagents train {env_id}",
                  f"jaxagents train {env_id} {budget}=100000 --run-dir runs/{env_id}", "```", ""]
    except ValueError as e:
        lines += [f"`jaxagents train {env_id}` answers: {e}", ""]
    return "\n".join(lines)


def index(ids: list[str]) -> str:
    """The reference's index page: one line per id and the hidden toctree."""
    from jaxagents.core import registry

    lines = ["# Environment reference", "",
             f"One page per registered id ({len(ids)}), generated from the registry and the environments "
             "themselves by `python docs/environments/generate.py`: roles, spaces, constructor arguments, "
             "params, capabilities and the config that trains it.", "", "| id | description |", "|---|---|"]
    lines += [f"| {{doc}}`{i} <{i}>` | {registry.spec(i).description} |" for i in ids]
    lines += ["", "```{toctree}", ":hidden:", "", *ids, "```", ""]
    return "\n".join(lines)


def classes_rst(ids: list[str]) -> str:
    """The API reference's page of environment classes: every registered class once."""
    from jaxagents.core import registry

    quals = sorted({(lambda c: f"{c.__module__}.{c.__qualname__}")(registry.load_entry_point(registry.spec(i).entry_point))
                    for i in ids})
    lines = ["Environment classes", "===================", "",
             "The class of every registered environment id (``jaxagents_environments``, the repository's",
             "``environments/`` folder); each id's page in the environment reference gives its roles, spaces",
             "and params. Written by ``python docs/environments/generate.py``.", ""]
    for q in quals:
        lines += [f".. autoclass:: {q}", "   :no-members:", ""]
    return "\n".join(lines)


def pages() -> dict[str, str]:
    """``{path under docs/: text}`` of the whole reference."""
    from jaxagents.core import registry

    ids = registry.list_envs()
    checks, bench = checked_against(), bench_rows()
    out = {f"environments/reference/{i}.md": page(i, checks, bench) for i in ids}
    out["environments/reference/index.md"] = index(ids)
    out["api/environments.rst"] = classes_rst(ids)
    return out


def first_observation(env) -> tuple[str, str]:
    """``(role, text)``: a text game's first observation, after ``reset(jax.random.key(0))``,
    of the seat to act (the first role when none is)."""
    import jax
    import numpy as np

    _, ts = env.reset(jax.random.key(0))
    roles = list(env.roles)
    role = next((r for r in roles if bool(np.asarray(ts.active[r]).any())), roles[0])
    return role, env.render_observation(ts.obs[role][0])


def frame_state(env, steps: int = FRAME_STEPS):
    """The state after ``reset(jax.random.key(0))`` and up to ``steps`` uniformly random
    legal steps (``jaxagents.random_actions``, keys folded from ``key(1)``); a step that
    would end the episode is not taken, so the frame shows a game in progress."""
    import jax

    from jaxagents.core.env import random_actions

    params = env.default_params()
    state, ts = env.reset(jax.random.key(0), params)

    @jax.jit
    def step(key, state, ts):
        k_act, k_step = jax.random.split(key)
        return env.step(k_step, state, random_actions(env, k_act, ts), params)

    for i in range(steps):
        nxt, nts = step(jax.random.fold_in(jax.random.key(1), i), state, ts)
        if bool(nts.terminated) or bool(nts.truncated):
            break
        state, ts = nxt, nts
    return state, params


def write_frames(ids: list[str]) -> None:
    """``docs/figures/envs/ID.png``: a frame (``frame_state``) of every id that renders."""
    import matplotlib.pyplot as plt
    import numpy as np

    from jaxagents.core import registry
    from jaxagents.tracking import atomic_write

    os.makedirs(FRAMES, exist_ok=True)
    for env_id in ids:
        env = registry.make(env_id)
        if not renders(env):
            continue
        state, params = frame_state(env)
        frame = np.asarray(env.render(state, params))
        scale = max(1, -(-FRAME_MIN_WIDTH // frame.shape[1]))  # small boards: whole pixels enlarged
        frame = frame.repeat(scale, axis=0).repeat(scale, axis=1)
        buf = io.BytesIO()
        plt.imsave(buf, frame, format="png")
        atomic_write(os.path.join(FRAMES, env_id + ".png"), buf.getvalue())
        print(f"{env_id}: {FRAMES}/{env_id}.png")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a page is missing or differs from the code")
    parser.add_argument("--frames", action="store_true", help="also render docs/figures/envs/ID.png")
    args = parser.parse_args(argv)
    sys.path.insert(0, ROOT)
    if args.frames:
        from jaxagents.core import registry

        write_frames(registry.list_envs())
    want = pages()
    if args.check:
        bad = []
        for name, text in want.items():
            path = os.path.join(DOCS, name)
            if not os.path.exists(path):
                bad.append(f"no page {path}")
            elif open(path).read() != text:
                bad.append(f"stale: {path}")
        known = set(os.listdir(OUT)) if os.path.isdir(OUT) else set()
        bad += [f"no registered id: {os.path.join(OUT, n)}" for n in sorted(known)
                if n.endswith(".md") and f"environments/reference/{n}" not in want]
        for line in bad:
            print(f"environment reference: {line} (run python docs/environments/generate.py)", file=sys.stderr)
        return 1 if bad else 0
    from jaxagents.tracking import atomic_write

    os.makedirs(OUT, exist_ok=True)
    for name, text in want.items():
        atomic_write(os.path.join(DOCS, name), text)
    print(f"{len(want) - 2} environment pages in {OUT}, and docs/api/environments.rst")
    return 0


if __name__ == "__main__":
    sys.exit(main())
