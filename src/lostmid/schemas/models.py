"""The typed layout of every result file: pydantic models, one per kind.

Each model types the file's top level (every key a writer puts there, with what it
holds) and the records that several kinds share (:class:`Metadata`, :class:`Claim`,
:class:`IntervalRecord`, :class:`ShapeRecord`, :class:`PositionScore`); deeper objects
that belong to one capability are typed as JSON objects and described in its command's
page. A top level accepts no key it does not declare, so a writer that adds one is
caught by the tests (and the published JSON Schema stays what the files hold).

Numbers: JSON has no nan or infinity; lostmid writes a non-finite number as ``null``
(:func:`lostmid.runinfo.to_jsonable`), so every measured number may be null.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from lostmid.files import RESULT_KINDS
from lostmid.stats.verdicts import CLAIM_VERDICTS, REMEDY_VERDICTS

Number = float | None
"""A number; null where it is not finite (nan: undefined, inf: unbounded)."""
Numbers = list[float | None]
Object = dict[str, Any]
TAG = "The file's kind and layout version (lostmid.files.RESULT_KINDS)."


def _tag(kind: str) -> Any:
    """The schema tag of ``kind`` (:data:`lostmid.files.RESULT_KINDS`) as a literal."""
    return Literal[RESULT_KINDS[kind].schema]


class Strict(BaseModel):
    """A record whose keys are all declared: an unknown key is refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Open(BaseModel):
    """A record whose declared keys are checked; a capability may add its own."""

    model_config = ConfigDict(extra="allow", frozen=True)


class Metadata(Open):
    """What every result file carries so that its run can be traced and repeated
    (:func:`lostmid.runinfo.run_metadata`); a command adds its own (``backend``,
    ``stages``, ``checkpoint_sha256`` ...)."""

    command: str = Field(description="The lostmid command (or section) that wrote the file.")
    argv: list[str] = Field(description="The command line, as typed.")
    config: Object = Field(description="The resolved configuration: every option's value.")
    seed: int | None = Field(description="The run's seed; null where it has none.")
    versions: dict[str, str | None] = Field(description="Python's and the libraries'.")
    platform: str
    cpu_count: int | None
    timings_s: dict[str, float] = Field(description="Wall-clock seconds by phase.")
    finished_utc: str = Field(description="ISO 8601, seconds.")


class IntervalRecord(Strict):
    """An estimate with its 95% interval (:class:`lostmid.stats.Interval`); a null end is
    an infinite one (nothing known of the spread), a null estimate an undefined one."""

    estimate: Number
    ci_low: Number
    ci_high: Number
    n: int | None = Field(None, description="Seeds, folds or items; absent for a contrast.")


class Claim(Strict):
    """One row of a claims table (claims.json, compare.json, reproduce.json)."""

    claim: str = Field(description="The paper's statement, in words.")
    paper: str = Field(description="The paper's number, as text.")
    ours: str = Field(description="Our number with its 95% interval, as text.")
    verdict: Literal[CLAIM_VERDICTS] = Field(  # type: ignore[valid-type]
        description="What the rule made of the two."
    )
    rule: str = Field(description="The rule, stated with its numbers.")


class ShapeRecord(Open):
    """The shape of a curve over positions, decided by intervals
    (:class:`lostmid.stats.ShapeIndices`)."""

    kind: str = Field(description="proportion | estimate | seeds: what the values are.")
    margin: float = Field(description="A contrast inside +-margin counts as flat.")
    first: Number
    middle: Number
    last: Number
    mean: IntervalRecord | Object
    gap: Object = Field(description="Best minus worst position, with its interval.")
    primacy: Object = Field(description="First minus middle, with its interval.")
    recency: Object = Field(description="Last minus middle, with its interval.")
    shape: Literal["flat", "primacy", "recency", "U", "inverted U", "undetermined"]


class PositionScore(Open):
    """Accuracy at one position (its key, ``depth`` or ``index``, names the axis)."""

    n: int
    correct: int
    accuracy: Number
    ci_low: Number = Field(description="Wilson 95%.")
    ci_high: Number
    mean_logprob: Number = None
    logprob_ci_low: Number = None
    logprob_ci_high: Number = None


class ProfileSummaryRecord(Strict):
    """The shape of an influence profile (:class:`lostmid.theory.ProfileSummary`, whose
    module gives the definitions); positions are 1-indexed."""

    target: int = Field(description="The position whose output is differentiated.")
    support: list[int] = Field(description="First and last position that can influence it.")
    primacy: Number = Field(description="Influence of the first position of the support.")
    recency: Number = Field(description="Influence of the target itself.")
    valley: Number = Field(description="The smallest influence over the support but t.")
    valley_position: int | None
    peak: Number
    peak_position: int
    peak_to_valley: Number
    log10_peak_to_valley: Number
    dead_zone_level: Number = Field(description="Median influence over the middle half.")
    uniform_level: Number = Field(description="1 / the support's length: a flat row's.")
    log10_primacy: Number
    log10_recency: Number
    log10_valley: Number
    log10_dead_zone_level: Number


class RemedyEntry(Strict):
    """One remedy over its seeds (remedies.json ``remedies``): each metric with its 95%
    t interval over seeds, its paired differences to the baseline, the verdict and what
    it cost (:class:`lostmid.remedies.summary.RemedyRecord`)."""

    name: str
    kind: Literal["training", "inference"]
    description: str
    knobs: Object = Field(description="The remedy's settings.")
    seeds: list[int]
    tokens: int | None = Field(description="Training input tokens a seed.")
    steps: int | None
    parameters: int | None
    extra_parameters: int | None = Field(description="Parameters beyond the baseline's.")
    extra_forward_passes: int
    mean_accuracy: IntervalRecord | None = None
    gap: IntervalRecord | None = Field(None, description="Best minus worst position.")
    primacy: IntervalRecord | None = None
    recency: IntervalRecord | None = None
    log10_peak_to_valley: IntervalRecord | None = None
    difference_to_baseline: dict[str, IntervalRecord] | None = Field(
        description="Paired by seed; null for the baseline itself."
    )
    verdict: Literal[REMEDY_VERDICTS] | None = Field(  # type: ignore[valid-type]
        description="null for the baseline."
    )
    margin: Number = Field(description="The reduction of the gap that counts.")
    halves_gap: bool | None
    accuracy_by_position: list[Object] = Field(description="index, and its interval.")
    theory: Object | None = Field(description="The theory's prediction for the remedy.")
    measured_init_log10_peak_to_valley: IntervalRecord | None
    seconds: float


class SweepUnit(Strict):
    """One unit of a sweep (sweep.json ``units``) and what became of it."""

    key: str = Field(description="The unit's folder under units/.")
    task: str
    params: Object
    resources: Object = Field(description="cpus, gpus, memory_gb asked of the backend.")
    result: str | None = Field(description="Its result file, relative to the sweep folder.")
    status: str = Field(description="done (computed now) | reused | failed.")
    seconds: Number
    compute_seconds: Number
    attempts: int
    summary: Object | None = Field(description="The headline numbers read from its result.")
    error: str | None
    traceback: str | None


# -- the kinds -------------------------------------------------------------------------


class TheoryFile(Strict):
    """theory.json: the exact influence profile of the theory (``lostmid theory``)."""

    schema_: _tag("theory") = Field(alias="schema", description=TAG)  # type: ignore[valid-type]
    influence: Numbers = Field(description="(L,) influence of position j on the target.")
    log10_influence: Numbers
    peak_to_valley: Number
    log10_peak_to_valley: Number
    params: Object = Field(description="length, layers, alphas, mask, kernel, target ...")
    summary: ProfileSummaryRecord
    path_weights: Numbers | None
    continuum: Numbers | None
    continuum_error: Object | None
    regions: Object | None
    metadata: Metadata


class MeasureFile(Strict):
    """measure.json: a model's measured influence profile (``lostmid measure``)."""

    schema_: _tag("measure") = Field(alias="schema", description=TAG)  # type: ignore[valid-type]
    positions: str = Field(description="The index convention: 1..L.")
    influence: Numbers
    stderr: Numbers | None
    mean_sq: Numbers | None
    stderr_sq: Numbers | None
    var_probe: Numbers | None
    var_sample: Numbers | None
    stderr_basis: str | None
    best_probes_per_sample: Number
    max_relative_stderr: Number
    per_layer: list[Numbers] | None
    residual_strength_method: str | None
    residual_strength_mean: Number
    residual_strength_jacobian: Numbers | None
    residual_strength: Numbers | None
    branch_gain: Numbers | None
    residual_strength_forward: Numbers | None
    mlp_gain: Numbers | None
    mlp_coherence: Numbers | None
    gain_per_position: list[Numbers] | None
    mlp_gain_per_position: list[Numbers] | None
    mlp_coherence_per_position: list[Numbers] | None
    gain_directions: int | None
    layer_masks: list[str] | None
    notes: list[str]
    summary: ProfileSummaryRecord
    shape: ShapeRecord | None
    config: Object = Field(description="The model and measurement facts.")
    requested: Object | None
    metadata: Metadata


class CompareFile(Strict):
    """compare.json: every candidate scored against the measurements (``lostmid compare``)."""

    schema_: _tag("compare") = Field(alias="schema", description=TAG)  # type: ignore[valid-type]
    measured: Object
    theory_source: str | None
    settings: Object
    metric_definitions: dict[str, str]
    noise_floor: Object | None
    candidates: dict[str, Object]
    ranking: Object
    claims: list[Claim]
    notes: list[str]
    files: dict[str, str]
    metadata: Metadata


class TrainingFile(Strict):
    """dynamics.json: a language model's profile through training (``lostmid train``)."""

    schema_: _tag("training") = Field(alias="schema", description=TAG)  # type: ignore[valid-type]
    config: Object
    interventions: str
    model: Object
    corpus: Object
    checkpoint_steps: list[int]
    complete: bool = Field(description="false: interrupted; --resume continues it.")
    records: list[Object] = Field(description="One checkpoint each: step, loss, profile ...")
    tokens_per_second: Number
    metadata: Metadata | None


class RetrievalTrainingFile(Strict):
    """retrieval.json: retrieval training, accuracy and influence by checkpoint
    (``lostmid train --task kv|mqar``)."""

    schema_: _tag("retrieval training") = Field(alias="schema", description=TAG)  # type: ignore[valid-type]
    config: Object
    parameters: int
    sequence_length: int
    prompt_length: int
    record_spans: list[list[int]]
    checkpoints: list[Object]
    link: Object = Field(description="Influence-accuracy rank correlation at init, final.")
    final_accuracy: Number
    learning: Object | None = Field(description="When each record was learnt.")
    train_seconds: float
    wall_seconds: float
    cpu_seconds: float
    metadata: Metadata | None = Field(None, description="Absent while the run trains.")


class RemediesFile(Strict):
    """remedies.json: each remedy against its baseline (``lostmid remedies``)."""

    schema_: _tag("remedies") = Field(alias="schema", description=TAG)  # type: ignore[valid-type]
    remedies: list[RemedyEntry]
    config: Object
    rule: str = Field(description="The verdict rule, in words.")
    seconds: float
    metadata: Metadata
    alpha: Object | None = Field(None, description="The theory's alpha and its source.")


class RetrievalFile(Strict):
    """retrieve.json: accuracy by position on a retrieval task (``lostmid retrieve``)."""

    schema_: _tag("retrieval") = Field(alias="schema", description=TAG)  # type: ignore[valid-type]
    task: str
    axis: Literal["depth", "index"]
    metric: str
    positions: list[PositionScore]
    summary: Object
    shape: ShapeRecord
    by_metric: dict[str, Object]
    lengths: list[int | None]
    by_length: list[Object]
    cells: list[Object]
    scoring: Object
    prompt: Object
    calibration: Object | None
    design: str
    data: Object | None
    model: Object
    tokenizer: str | None = Field(description="null: the task's own token ids (mqar).")
    examples: int
    seconds: float
    config: Object
    measured_config: Object | None = Field(
        None, description="The run as measured, where --calibrate or --lead-in learn changed it."
    )
    lead_in: Object | None = Field(None, description="The lead-in learnt from a pilot.")
    metadata: Metadata


class ScoreFile(Strict):
    """score.json: accuracy by position from another tool's samples (``lostmid score``)."""

    schema_: _tag("score") = Field(alias="schema", description=TAG)  # type: ignore[valid-type]
    source: str
    format: str
    axis: str
    samples: int
    positions: list[PositionScore]
    summary: Object
    shape: ShapeRecord
    by_length: list[Object] | None = None
    metadata: Metadata


class AblationFile(Strict):
    """ablation.json: the ladder of ablations and where the gap opens (``lostmid ablate``)."""

    schema_: _tag("ablation") | None = Field(None, alias="schema", description=TAG)  # type: ignore[valid-type]
    config: Object
    definitions: Object
    rungs: list[Object]
    skipped: dict[str, str]
    gap_rung: str | None
    files: dict[str, str]
    metadata: Metadata


class SweepFile(Strict):
    """sweep.json: every unit of a sweep and what became of it (``lostmid sweep``)."""

    schema_: _tag("sweep") | None = Field(None, alias="schema", description=TAG)  # type: ignore[valid-type]
    units: list[SweepUnit]
    counts: dict[str, int]
    seconds: float
    config: Object
    complete: bool
    units_planned: int
    metadata: Metadata
    summaries: list[Object] | None = Field(None, description="Absent while it runs.")


class DoseFile(Strict):
    """dose.json: the depth dose-response of retrieval training runs."""

    schema_: _tag("dose") = Field(alias="schema", description=TAG)  # type: ignore[valid-type]
    arms: list[Object]
    variants: list[Object]
    dose_response: Object | None
    runs: list[Object]
    metadata: Metadata


class ReproduceFile(Open):
    """reproduce.json: the paper's claims judged, section by section (``lostmid
    reproduce``); each section null when it was off. A section registered beside these
    (:data:`lostmid.reproduce.sections.SECTIONS`) adds its own key."""

    schema_: _tag("reproduce") | None = Field(None, alias="schema", description=TAG)  # type: ignore[valid-type]
    scale: Object
    models: dict[str, Object]
    training: Object | None
    behaviour: Object | None
    remedies: Object | None
    dose: Object | None
    checkpoints: Object | None
    real_behaviour: Object | None
    real_remedies: Object | None
    real_link: Object | None
    claims: list[Claim]
    figures: dict[str, str | None]
    metadata: Metadata


MODELS: dict[str, type[BaseModel]] = {
    "theory": TheoryFile,
    "measure": MeasureFile,
    "compare": CompareFile,
    "training": TrainingFile,
    "retrieval training": RetrievalTrainingFile,
    "remedies": RemediesFile,
    "retrieval": RetrievalFile,
    "score": ScoreFile,
    "ablation": AblationFile,
    "sweep": SweepFile,
    "dose": DoseFile,
    "reproduce": ReproduceFile,
}
"""Result kind (:data:`lostmid.files.RESULT_KINDS`) -> its model."""
