"""The ``population:`` section of a run config, and building a ``Population`` from it.

::

    population:
      size: 8                      # members P
      ranges: {lr: [1.0e-4, 1.0e-2], ent_coef: [0.0, 0.05]}   # drawn per member (scale: the learner's)
      pbt:                         # null: no PBT (independent members, e.g. a sweep)
        interval: 20               # updates between ready points
        fraction: 0.25             # bottom quarter copies the top quarter
        hparams: [lr, ent_coef]    # what explore perturbs (x0.8 / x1.2) or resamples
        resample_prob: 0.25
        fitness: null              # a metric name; null: the learner's default fitness
        fitness_sign: 1            # -1 when lower is better (eval/exploitability)
      mesh: {pop: null, data: 1}   # devices along the member axis (null: as many as fit) and
                                   # along each member's environments (data parallelism)
      chunk: null                  # members vmapped together per device (default: all)

``ranges`` default to the ``pbt.hparams`` over the learner's own ranges
(``learner.hparam_space``), so ``population: {size: 8, pbt: {}}`` is a complete PBT
setup on the learning rate.
"""

from __future__ import annotations

import dataclasses

from jaxagents.core.validate import check_positive_int
from jaxagents.population.pbt import PBTConfig


@dataclasses.dataclass(frozen=True)
class MeshConfig:
    """``pop``: devices along the member axis (None: as many as the devices present
    allow); ``data``: devices each member's environments are split over (the learner
    is then built with ``data_axis="data", data_shards=data``)."""

    pop: int | None = None
    data: int = 1

    def __post_init__(self):
        object.__setattr__(self, "pop", check_positive_int("population.mesh.pop", self.pop, none_ok=True))
        object.__setattr__(self, "data", check_positive_int("population.mesh.data", self.data))


@dataclasses.dataclass(frozen=True)
class PopulationConfig:
    """The ``population`` section (see the module docstring); mappings are accepted for
    ``pbt`` and ``mesh``.

    Attributes:
        size: members P.
        pbt: ``PBTConfig`` or None (independent members).
        ranges: ``{name: (low, high)}`` drawn per member (``{}``: every member at the
            config's values); None when ``pbt`` is set and no ranges are given:
            ``build_population`` then uses ``pbt.hparams`` over the learner's own ranges.
        mesh: ``MeshConfig``, the devices along the member and data axes.
        chunk: members updated together by one ``vmap`` on a device (None: all).
    """

    size: int = 8
    pbt: PBTConfig | None = None
    ranges: dict | None = None
    mesh: MeshConfig = MeshConfig()
    chunk: int | None = None

    def __post_init__(self):
        object.__setattr__(self, "size", check_positive_int("population.size", self.size))
        if isinstance(self.pbt, dict):
            object.__setattr__(self, "pbt", _prefixed(PBTConfig, self.pbt))
        if isinstance(self.mesh, dict):
            object.__setattr__(self, "mesh", MeshConfig(**self.mesh))
        if self.mesh is None:
            object.__setattr__(self, "mesh", MeshConfig())
        object.__setattr__(self, "chunk", check_positive_int("population.chunk", self.chunk, none_ok=True))
        ranges = dict(self.ranges or {})
        if self.pbt is not None and not ranges:
            ranges = None  # filled from the learner's hparam_space in build_population
        object.__setattr__(self, "ranges", ranges)


def _prefixed(cls, values: dict):
    """``cls(**values)`` with the config's own errors named ``population.pbt...``."""
    try:
        return cls(**values)
    except ValueError as e:
        raise ValueError(f"population.{e}" if str(e).startswith("pbt.") else str(e)) from None


def build_population(cfg: PopulationConfig, learner, callback=None):
    """The ``Population`` of ``learner`` that ``cfg`` describes, on a mesh over the
    devices present (or ``cfg.mesh.pop`` x ``cfg.mesh.data`` of them). With
    ``mesh.data > 1`` the learner must have been built with ``data_axis="data",
    data_shards=cfg.mesh.data`` (``learner_kwargs``)."""
    import jax

    from jaxagents.population.core import Population
    from jaxagents.population.mesh import make_mesh

    ranges = cfg.ranges
    if ranges is None and cfg.pbt is not None:  # explore the PBT hparams over the learner's ranges
        ranges = {n: (learner.hparam_space[n].low, learner.hparam_space[n].high) for n in cfg.pbt.hparams if n in learner.hparam_space}
    data = cfg.mesh.data
    if data > len(jax.devices()):
        raise ValueError(f"population.mesh.data={data} needs {data} devices; {len(jax.devices())} are present")
    present = jax.devices()
    devices = cfg.mesh.pop if cfg.mesh.pop is not None else _largest_divisor(cfg.size, len(present) // data)
    mesh = make_mesh(devices, data=data) if devices * data > 1 or cfg.mesh.pop is not None else None
    population = Population(learner, cfg.size, cfg.pbt, ranges=ranges, mesh=mesh, chunk=cfg.chunk, callback=callback)
    population.placement = placement(cfg, devices, present)
    return population


def _largest_divisor(size: int, devices: int) -> int:
    """The most devices (at most ``devices``) that split ``size`` members evenly."""
    return max(d for d in range(1, devices + 1) if size % d == 0)


def placement(cfg: PopulationConfig, pop: int, present: list) -> dict:
    """Where the members of ``cfg`` go on the ``present`` devices with ``pop``
    devices on the member axis: the figures a run prints at start and keeps in its
    run directory, and ``warning`` (None, or one line) when the size leaves devices
    idle that a chosen ``mesh.pop`` did not ask to leave (6 members on 4 devices use
    3: the warning names the sizes that would use all 4)."""
    data = cfg.mesh.data
    used = pop * data
    out = {
        "members": cfg.size, "pop": pop, "data": data, "members_per_device": cfg.size // pop,
        "devices_used": used, "devices_present": len(present), "platform": present[0].platform,
        "processes": len({d.process_index for d in present}),
        "line": (f"population of {cfg.size} members on {used} of {len(present)} {present[0].platform} device(s): "
                 f"mesh pop={pop} x data={data}, {cfg.size // pop} member(s) per device"),
        "warning": None,
    }
    fit = len(present) // data
    if cfg.mesh.pop is None and used < len(present):
        sizes = ", ".join(str(fit * k) for k in range(1, 4))
        out["warning"] = (f"population.size={cfg.size} leaves {len(present) - used} of {len(present)} devices idle "
                          f"({cfg.size} members split evenly over at most {pop}); sizes that use all of them: {sizes}, ... "
                          f"(or set population.mesh.pop={pop} to make this choice explicit)")
    return out


def learner_kwargs(cfg: PopulationConfig) -> dict:
    """The ``make_train`` arguments a population config asks of its learner: a data
    axis when ``mesh.data > 1``."""
    data = cfg.mesh.data
    return {"data_axis": "data", "data_shards": data} if data > 1 else {}
