"""The two plug-in shapes of ``lostmid reproduce``: a stage of the plan and a section.

A **stage** (:class:`PlannedStage`) is one unit of work with a name, the configuration
that identifies its saved result, how to compute it and how to read its record back; the
stages of every section run together (:func:`lostmid.reproduce.run.run_stages`: in this
process, in worker processes or on Ray) and a finished one is reused.

A **section** (:class:`Section`) is one part of the run and of its report beside the
core (the measured models against the theory): its stages, what it makes of their
results, its claims, figures and record in ``reproduce.json``, and its part of the
report. The sections of a run are :data:`lostmid.reproduce.sections.SECTIONS`, in the
order of their claims; adding one is one module that defines a :class:`Section` and one
entry in that list (docs/ARCHITECTURE.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

if TYPE_CHECKING:
    from lostmid.compare.claims import Claim
    from lostmid.models.spec import ModelSpec
    from lostmid.report.html import Report
    from lostmid.reproduce.config import ReproduceConfig


@dataclass(frozen=True)
class PlannedStage:
    """One stage of the plan: its name, the configuration that identifies its saved
    result, how to compute it and how to read its record back."""

    name: str
    config: Mapping[str, Any]
    compute: Callable[[], Any]
    read: Callable[[Mapping[str, Any]], Any]
    threads: int | None = None  # what the stage is worth (Job.threads); None: its share
    priority: int = 0  # Job.priority: higher starts first
    # refuses in one line what the stage's own command would refuse for its size (memory,
    # a day's time), called for every stage before any runs
    check: Callable[[], None] | None = None


class Section(Protocol):
    """One optional part of a reproduce run and of its report.

    ``key`` names it in ``reproduce.json`` (its :meth:`record` there, ``null`` when the
    run had none) and in :attr:`lostmid.reproduce.analysis.ReproduceResult.sections`.
    What :meth:`collect` returns (the section's result, or None when the run has none)
    has a ``claims`` attribute: a sequence of :class:`~lostmid.compare.claims.Claim`,
    appended to the run's claims in the order of the sections.

    A section may also define ``summary_panels(value)``: the panels it adds to the
    report's lead figure ``summary.png`` (each a callable that draws on one matplotlib
    axes), after the core's one a model (:func:`panels_of`).
    """

    key: str

    def check(self, config: ReproduceConfig) -> None:
        """Refuse in one line, before any stage runs, what ``collect`` could not read (a
        folder the configuration names that holds no finished run of the section)."""
        ...

    def stages(self, config: ReproduceConfig, device: str, out: Path) -> list[PlannedStage]:
        """The stages this section adds to the plan (none when it is off)."""
        ...

    def collect(self, config: ReproduceConfig, results: Mapping[str, Any], out: Path) -> Any:
        """The section's result from the stage results by name (or a folder the
        configuration names); None when the run has none."""
        ...

    def figures(self, value: Any, folder: Path) -> dict[str, Path]:
        """Figure name -> PNG written under ``folder`` (names unique across sections)."""
        ...

    def record(self, value: Any) -> Any:
        """What ``reproduce.json`` keeps of the section's result."""
        ...

    def report(self, report: Report, value: Any, figures: Mapping[str, Path]) -> None:
        """Add the section to the report (``value`` None: the run had none; a section may
        then say how to get it); ``figures`` is every figure of the run by name."""
        ...


class StandardSection:
    """The usual :class:`Section` parts for a result with ``paragraphs()``, ``table()``,
    ``claims`` and ``record()``: its record as is, and one report section titled
    :attr:`title` with the figures whose names start with :attr:`figure_prefix` (none
    when the run had no result). A section subclasses it and writes ``stages``,
    ``collect`` and ``figures``."""

    title: str = ""
    figure_prefix: str = ""

    def check(self, config: ReproduceConfig) -> None:
        """Nothing to check beyond the option's own (:class:`SectionOption`)."""

    def record(self, value: Any) -> Any:
        return value.record()

    def report(self, report: Report, value: Any, figures: Mapping[str, Path]) -> None:
        if value is None:
            return
        report.add_section(
            self.title,
            paragraphs=list(value.paragraphs()),
            table=value.table(),
            figures=figures_named(figures, self.figure_prefix),
            verdicts=value.claims,
        )


# A stage that runs a real checkpoint is the longest of a run (the default scale,
# 2026-12-03: 330-438 s against 23-129 s for every other stage): started first, it does
# not end a run alone on one core (docs/BENCHMARKS.md, "reproduce").
REAL_CHECKPOINT_PRIORITY = 1


class PerModelSection(StandardSection):
    """A section that runs one stage per model at a named scale, or reads a folder of
    finished runs: its scale or folder is the :class:`~lostmid.reproduce.config.Scale`
    field :attr:`key` (``off`` skips it). A subclass names :attr:`scales` (name -> an
    object with ``name`` and ``models``), :attr:`stage` ((scale name, model, seed,
    folder) -> the stage's record, a dict), :attr:`folder` (``OUT/<folder>/<scale>/
    <model slug>``), :attr:`figure` (the PNG in each run's folder) and
    :attr:`result_type` (built from ``(source, records)``, or from a folder by its
    ``read``)."""

    key: str = ""
    result_type: Any = None  # (source, runs) -> the result; .read(folder) -> the result
    scales: Mapping[str, Any] = {}
    folder: str = ""
    figure: str = ""
    needs_layout: bool = False  # hooks inside the model (a family adapter's layout)

    @staticmethod
    def stage(scale: str, model: ModelSpec | str, seed: int, folder: Path) -> dict[str, Any]:
        raise NotImplementedError

    def result(self, source: str, runs: tuple[Mapping[str, Any], ...] | Path) -> Any:
        """The section's result: :attr:`result_type` from ``runs`` (the stages' records)
        or read from a folder (its ``read``)."""
        if isinstance(runs, Path):
            return self.result_type.read(runs)
        return self.result_type(source, runs)

    def variants(self, scale: Any) -> tuple[tuple[str, dict[str, Any]], ...]:
        """The runs of one model at ``scale``: (a suffix of its folder and stage name, the
        keyword arguments its :attr:`stage` gets, which also enter the stage's key). One
        plain run by default."""
        return (("", {}),)

    def stages(self, config: ReproduceConfig, device: str, out: Path) -> list[PlannedStage]:
        from lostmid.models.spec import model_slug

        scale = self.scales.get(getattr(config.scale, self.key))
        if scale is None:
            return []
        # the prompt options enter a stage's record only when set (ModelSpec.options)
        return [
            PlannedStage(
                f"{self.folder}-{scale.name}-{model_slug(spec.name)}{suffix}",
                {"scale": scale.name, "model": spec.name, "seed": config.seed, "record": 1}
                | spec.options()
                | kwargs,
                partial(
                    self.stage,
                    scale.name,
                    spec,
                    config.seed,
                    out / self.folder / scale.name / f"{model_slug(spec.name)}{suffix}",
                    **kwargs,
                ),
                dict,
                priority=REAL_CHECKPOINT_PRIORITY,
            )
            for spec in config.trained_specs(tuple(scale.models))
            for suffix, kwargs in self.variants(scale)
        ]

    def check(self, config: ReproduceConfig) -> None:
        """A folder of finished runs is read now, so that one that is not is refused in
        one line before any stage runs; so is a ``--trained`` model this scale cannot
        study (:func:`lostmid.models.load.check_trained_model`)."""
        value = getattr(config.scale, self.key)
        if value != "off" and value not in self.scales:
            self.result(f"the runs in {value}", Path(value))
        scale = self.scales.get(value)
        if scale is not None and config.trained:
            from lostmid.models.load import check_trained_model

            for spec in config.trained_specs(()):
                check_trained_model(
                    spec.name,
                    scale.length,
                    layout=self.needs_layout,
                    option="--trained",
                    dtype=spec.dtype,
                    trust_remote_code=spec.trust_remote_code,
                )

    def collect(self, config: ReproduceConfig, results: Mapping[str, Any], out: Path) -> Any:
        value = getattr(config.scale, self.key)
        if value == "off":
            return None
        if value not in self.scales:
            return self.result(f"the runs in {value}", Path(value))
        names = [s.name for s in self.stages(config, "cpu", out)]
        runs = tuple(results[n] for n in names if n in results)
        return self.result(f"{value} scale", runs) if runs else None

    def figures(self, value: Any, folder: Path) -> dict[str, Path]:
        from lostmid.models.spec import model_slug

        return {
            f"{self.folder}-{Path(run['folder']).name or model_slug(run['model'])}": Path(
                run["folder"]
            )
            / self.figure
            for run in value.runs
        }


@dataclass(frozen=True)
class SectionRuns:
    """The result of a :class:`PerModelSection`: where its runs came from (``source``)
    and one summary record per run (``runs``). A subclass names its :attr:`result_file`
    and :attr:`option`, writes :meth:`summary` (a result file's summary) and the
    section's ``claims``, ``table`` and ``paragraphs``; the record and the reading of a
    folder are these."""

    source: str
    runs: tuple[Mapping[str, Any], ...]
    result_file: ClassVar[str] = ""
    option: ClassVar[str] = ""  # the reproduce option that names a folder of runs

    @classmethod
    def summary(cls, result: dict[str, Any], folder: Path) -> Mapping[str, Any]:
        """One run's summary from its result file (raises a one-line UserError for a
        file that is not such a run's)."""
        raise NotImplementedError

    def record(self) -> dict[str, Any]:
        claims = self.claims  # type: ignore[attr-defined]
        return {"source": self.source, "runs": list(self.runs), "claims": list(claims)}

    @classmethod
    def read(cls, folder: Path) -> Any:
        """The runs of ``OPTION DIR``: ``DIR/RESULT`` (one run's folder) or every
        ``DIR/<model>/RESULT`` (a section's folder)."""
        from lostmid.errors import UserError
        from lostmid.files import read_json_object

        folder = Path(folder)
        one = folder / cls.result_file
        paths = [one] if one.is_file() else sorted(folder.glob(f"*/{cls.result_file}"))
        runs = []
        for path in paths:
            try:
                runs.append(cls.summary(read_json_object(path, option=cls.option), path.parent))
            except (KeyError, TypeError, AttributeError, IndexError, ValueError) as err:
                raise UserError(
                    f"{cls.option} {folder}: {path} is not a finished run of this section "
                    f"({type(err).__name__}: {err}); give a folder this section wrote"
                ) from None
        if not runs:
            raise UserError(
                f"{cls.option} {folder}: no {cls.result_file} or MODEL/{cls.result_file} there"
            )
        return cls(f"the runs in {folder}", tuple(runs))


def run_replacing(run: Callable[..., Any], config: Any, folder: Path) -> None:
    """``run(config, out=folder)``, resuming a run of this configuration there and
    replacing one of another (a section's stage at another scale writes the same folder
    only when the user changed the scale)."""
    from lostmid.errors import UserError

    try:
        run(config, out=folder)
    except UserError as err:
        if "another configuration" not in str(err):
            raise
        run(config, out=folder, overwrite=True)


Panel = Callable[[Any], None]
"""One panel of the lead figure: draws on the matplotlib axes it is given."""


def panels_of(section: Any, value: Any) -> list[Panel]:
    """The panels a section's result adds to the lead figure (its optional
    ``summary_panels``; none for no result)."""
    draw = getattr(section, "summary_panels", None)
    return [] if value is None or draw is None else list(draw(value))


def claims_of(value: Any) -> Sequence[Claim]:
    """A section result's claims (none for no result)."""
    return () if value is None else tuple(value.claims)


def figures_named(figures: Mapping[str, Path], prefix: str) -> list[Path]:
    """The figures whose name starts with ``prefix`` and that were written."""
    return [path for name, path in figures.items() if name.startswith(prefix) and path.exists()]


def preset_threads(spec: Any) -> int | None:
    """The threads of a stage that trains the model of ``spec`` (a
    :class:`lostmid.train.config.ModelSpec`): one for a model under
    :data:`lostmid.runs.jobs.SMALL_MODEL` parameters, else its share
    (:func:`lostmid.runs.jobs.stage_threads`, counted from the config, no weights built)."""
    from lostmid.models.budget import parameter_count
    from lostmid.runs.jobs import stage_threads
    from lostmid.train.model import hf_config

    return stage_threads(parameter_count(hf_config(spec)))
