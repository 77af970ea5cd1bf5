"""Import names and the dependency direction: the folders environments/ and
baselines/ install as jaxagents_environments and jaxagents_baselines (never as the
plain names, which other packages own), and jaxagents/ imports nothing from them."""

import ast
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_jaxagents_imports_no_environment():
    offenders = []
    for path in (ROOT / "jaxagents").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [f"{path.relative_to(ROOT)}: {n}" for n in names
                          if n.split(".")[0] in ("jaxagents_environments", "environments", "jaxagents_baselines", "baselines")]
    assert not offenders, offenders


# the top of jaxagents: reading and writing runs, configs, the command line
TOP_LEVEL = ("runner", "runs", "build", "config", "cli", "cli_train", "outputs", "rundir", "results", "preemption",
             "checkpoint", "segments", "training")
LIBRARY = ("core", "nn", "learners", "evaluation", "population", "bench", "compat", "advantages.py")


def _jaxagents_imports(path: Path) -> list[str]:
    """Every ``jaxagents`` module ``path`` imports, at its top or inside a function."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.append(node.module)
            if node.module == "jaxagents":  # from jaxagents import runner
                found += [f"jaxagents.{a.name}" for a in node.names]
    return [m for m in found if m.split(".")[0] == "jaxagents"]


def test_library_layers_never_reach_up():
    """Learners, evaluators, populations and the environment contract take data and
    never import the modules that read run directories or configs, not even inside a
    function (the partners of FCP and the policies of cross-play come through
    ``jaxagents.runs``); ``jaxagents.core`` imports nothing but itself."""
    offenders = []
    for part in LIBRARY:
        paths = [ROOT / "jaxagents" / part] if part.endswith(".py") else (ROOT / "jaxagents" / part).rglob("*.py")
        for path in paths:
            for module in _jaxagents_imports(path):
                parts = module.split(".")
                upward = len(parts) > 1 and parts[1] in TOP_LEVEL
                outside_core = part == "core" and parts[:2] != ["jaxagents", "core"]
                if upward or outside_core:
                    offenders.append(f"{path.relative_to(ROOT)}: {module}")
    assert not offenders, offenders


def test_installed_import_names(tmp_path):
    code = (
        "import importlib.util as u, os\n"
        "import jaxagents_environments.games.kuhn, jaxagents_baselines as b\n"
        "assert os.path.isdir(b.CONFIG_DIR)\n"
        "root = os.environ['ROOT']\n"
        "for plain in ('environments', 'baselines'):\n"
        "    spec = u.find_spec(plain)\n"
        "    assert spec is None or not (spec.origin or '').startswith(root), (plain, spec)\n"
        "import jaxagents\n"
        "assert type(jaxagents.make('kuhn_poker')).__module__ == 'jaxagents_environments.games.kuhn'\n"
    )
    env = {**os.environ, "ROOT": str(ROOT), "JAX_PLATFORMS": "cpu"}
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]


def test_lowest_pins_are_the_declared_lower_bounds():
    """``.ci/lowest.txt`` (what CI's smoke set runs on) pins exactly the lower bound of
    every dependency in ``pyproject.toml``, so the declared range starts at a tested
    version."""
    import re
    import tomllib

    from packaging.version import Version

    declared = {}
    for dep in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]:
        name, low = re.match(r"([A-Za-z0-9_.-]+)\s*>=\s*([0-9][^,;\s]*)", dep).groups()
        declared[name.lower()] = Version(low)
    pins = {}
    for line in (ROOT / ".ci" / "lowest.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, version = line.split("==")
            pins[name.strip().lower()] = Version(version.strip())
    # jaxlib is not declared (jax brings it) but must match jax's pin
    assert pins.pop("jaxlib") == pins["jax"]
    assert pins == declared


def test_experiment_scripts_do_nothing_on_import():
    """``experiments/`` (the lab, not installed): no script edits ``sys.path`` (the
    packages are installed; a reference implementation is loaded by path, see
    ``experiments/_reference.py``), and none runs on import: at module level only
    imports, definitions, assignments and the ``__main__`` guard."""
    offenders = []
    for path in sorted((ROOT / "experiments").glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "path" and getattr(node.value, "id", None) == "sys":
                offenders.append(f"{path.name}:{node.lineno}: sys.path")
        for node in tree.body:
            guard = isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)
            docstring = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            allowed = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign)
            if not (guard or docstring or isinstance(node, allowed)):
                offenders.append(f"{path.name}:{node.lineno}: {type(node).__name__} at module level")
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and any(
                    isinstance(n, ast.Call) and "parse_args" in ast.unparse(n.func) for n in ast.walk(node)):
                offenders.append(f"{path.name}:{node.lineno}: parses the command line on import")
    assert not offenders, offenders


def test_learner_folders_import_in_one_direction():
    """``jaxagents/learners/``: ``skeleton`` imports no other learner folder, the
    ``partners`` parts import only the skeleton, and the two families never import
    each other (what they share lives in the skeleton)."""
    forbidden = {
        "skeleton": ("partners", "policy_gradient", "value_based"),
        "partners": ("policy_gradient", "value_based"),
        "value_based": ("policy_gradient",),
        "policy_gradient": ("value_based",),
    }
    offenders = []
    for folder, banned in forbidden.items():
        for path in (ROOT / "jaxagents" / "learners" / folder).rglob("*.py"):
            for module in _jaxagents_imports(path):
                parts = module.split(".")
                if parts[:2] == ["jaxagents", "learners"] and (len(parts) == 2 or parts[2] in banned):
                    offenders.append(f"{path.relative_to(ROOT)}: {module}")
    assert not offenders, offenders


def _module_name(path: Path) -> str:
    name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    return name[: -len(".__init__")] if name.endswith(".__init__") else name


def test_no_import_circle():
    """No module of the package reaches itself through its imports (at its top or
    inside a function): e.g. the run writer (runner) and the run reader (runs) both
    stand on build and never on each other. The package's own ``__init__`` (its
    public names) is left out: every module may import ``jaxagents``."""
    modules = {_module_name(p): p for p in (ROOT / "jaxagents").rglob("*.py")}

    def known(name: str) -> str | None:
        while name not in modules and "." in name:
            name = name.rsplit(".", 1)[0]
        return name if name in modules and name != "jaxagents" else None

    graph = {}
    for name, path in modules.items():
        found = []
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found += [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:  # a module imported from a package is that module
                found += [f"{node.module}.{a.name}" for a in node.names]
        graph[name] = {m for m in map(known, found) if m and m != name}
    circles = []
    for start in graph:
        seen, stack = set(), [start]
        while stack:
            for nxt in graph.get(stack.pop(), ()):
                if nxt == start:
                    circles.append(start)
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
    assert not sorted(set(circles)), sorted(set(circles))
