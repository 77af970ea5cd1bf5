"""Sphinx configuration of the jaxagents site (``sphinx-build -W docs docs/_build/html``).

Sphinx, not MkDocs: the JAX libraries we build on (jax, flax, optax, chex) document
themselves with Sphinx, MyST-NB renders our notebooks from their stored outputs without
re-running them, autosummary enumerates every public module of ``jaxagents`` so a new
module gets its page without an edit here, and ``-W`` turns a broken reference or a
docstring that does not parse into a failed build.
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

project = "jaxagents"
author = "the jaxagents authors"
copyright = "2026, the jaxagents authors"

extensions = [
    "myst_nb",  # Markdown pages (MyST) and the stored notebooks
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",  # Google-style "Args:" / "Returns:" sections
    "sphinx.ext.viewcode",
    "sphinx.ext.mathjax",
]

# the notebooks are rendered from what is stored in them; `python notebooks/execute.py`
# re-runs them, the site never does
nb_execution_mode = "off"
myst_enable_extensions = ["colon_fence", "dollarmath"]
myst_heading_anchors = 3

autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_class_signature = "separated"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False

templates_path = ["_templates"]
exclude_patterns = ["_build", "figures/*.json", "notebooks/src", "notebooks/execute.py"]
# .rst first: autosummary writes its generated pages with the first suffix
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
master_doc = "index"

html_theme = "furo"
html_title = "jaxagents"
html_static_path = []


def _site_links(app, docname, source):
    """Links that work on GitHub point at ``../BENCHMARKS.md`` (outside this folder);
    on the site that file is the ``benchmarks`` page, which includes it."""
    source[0] = source[0].replace("](../BENCHMARKS.md", "](benchmarks.md")


def setup(app):
    app.connect("source-read", _site_links)
