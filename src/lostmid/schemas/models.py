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
    """A record whose keys are all declared: an unknown key is refused. Values are read
    strictly: no bool as a number, no text as a number (JSON's ``true`` is not 1)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class Open(BaseModel):
    """A record whose declared keys are checked (strictly, as :class:`Strict`); a
    capability may add its own."""

    model_config = ConfigDict(extra="allow", frozen=True, strict=True)


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


class TheoryParams(Open):
    """The theory run's parameters (theory.json ``params``)."""

    length: int = Field(description="L: positions in the sequence.")
    layers: int = Field(description="H: attention layers.")
    alphas: Numbers = Field(description="(H,) each layer's residual strength a_l.")
    mask: Any = Field(description="The attention mask, as its spec.")
    kernel: str
    target: int = Field(description="The position whose output is differentiated (1..L).")
    log_domain: bool = Field(description="Whether the row was computed in log space.")


# -- the kinds -------------------------------------------------------------------------


class TheoryFile(Strict):
    """theory.json: the exact influence profile of the theory (``lostmid theory``)."""

    schema_: _tag("theory") = Field(alias="schema", description=TAG)  # type: ignore[valid-type]
    influence: Numbers = Field(description="(L,) influence of position j on the target.")
    log10_influence: Numbers = Field(
        description="(L,) log10 of influence, exact where influence underflows."
    )
    peak_to_valley: Number = Field(description="Peak over valley of the profile (summary).")
    log10_peak_to_valley: Number = Field(description="Its log10.")
    params: TheoryParams
    summary: ProfileSummaryRecord
    path_weights: Numbers | None = Field(
        description="(H+1,) b_k: the weight of paths with k attention hops (k = 0: residual)."
    )
    continuum: Numbers | None = Field(
        description="(L,) the continuum limit of the row (causal mask); null where not computed."
    )
    continuum_error: Object | None = Field(
        description="How far the exact row is from the continuum."
    )
    regions: Object | None = Field(
        description="The paper's regions (primacy tail, dead zone, recency anchor) here."
    )
    metadata: Metadata


class MeasureFile(Strict):
    """measure.json: a model's measured influence profile (``lostmid measure``)."""

    schema_: _tag("measure") = Field(alias="schema", description=TAG)  # type: ignore[valid-type]
    positions: str = Field(description="The index convention: 1..L.")
    influence: Numbers = Field(
        description="(L,) influence of position j on the target: RMS Jacobian norm."
    )
    stderr: Numbers | None = Field(
        description="(L,) its standard error; null when undefined (one input, one probe)."
    )
    mean_sq: Numbers | None = Field(description="(L,) the unbiased estimate of E ||J_j||_F^2.")
    stderr_sq: Numbers | None = Field(description="(L,) the standard error of mean_sq.")
    var_probe: Numbers | None = Field(
        description="(L,) within-input (probe) variance; null with one probe."
    )
    var_sample: Numbers | None = Field(
        description="(L,) between-input variance; null with one input."
    )
    stderr_basis: str | None = Field(
        description="What the standard error rests on (inputs, or probes alone with one input)."
    )
    best_probes_per_sample: Number = Field(
        description="The probes per input that would minimise the error at equal cost."
    )
    max_relative_stderr: Number = Field(
        description="The largest stderr / influence over positions."
    )
    per_layer: list[Numbers] | None = Field(
        description="(H, L) the profile on the residual stream after each layer, or null."
    )
    residual_strength_method: str | None = Field(
        description="jacobian (s_l / (1 + s_l), the theory's a_l) or forward."
    )
    residual_strength_mean: Number = Field(description="Mean of residual_strength over layers.")
    residual_strength_jacobian: Numbers | None = Field(
        description="(H,) s_l / (1 + s_l) from the branch gain."
    )
    residual_strength: Numbers | None = Field(
        description="(H,) the a_l predictions use (by residual_strength_method)."
    )
    branch_gain: Numbers | None = Field(
        description="(H,) s_l: the attention branch's Jacobian gain per unit of attention weight."
    )
    residual_strength_forward: Numbers | None = Field(
        description="(H,) the forward ratio ||attn|| / (||x|| + ||attn||)."
    )
    mlp_gain: Numbers | None = Field(description="(H,) the MLP branch's gain.")
    mlp_coherence: Numbers | None = Field(
        description="(H,) 1: the same MLP Jacobian at every position up to scale; 0: unrelated."
    )
    gain_per_position: list[Numbers] | None = Field(
        description="(H, L) the branch gain at each position."
    )
    mlp_gain_per_position: list[Numbers] | None = Field(
        description="(H, L) the MLP gain at each position."
    )
    mlp_coherence_per_position: list[Numbers] | None = Field(
        description="(H, L) the MLP coherence at each position; null where the MLP is zero."
    )
    gain_directions: int | None = Field(description="Random directions the gains were measured on.")
    layer_masks: list[str] | None = Field(
        description="(H,) each layer's attention mask as a theory mask spec."
    )
    notes: list[str] = Field(description="What the run noticed (one line each).")
    summary: ProfileSummaryRecord
    shape: ShapeRecord | None = Field(
        description="Shape indices of positions 1..target from stderr; null without it."
    )
    config: Object = Field(description="The model and measurement facts.")
    requested: Object | None = Field(
        description="The options as given (config holds them resolved)."
    )
    metadata: Metadata


class CompareFile(Strict):
    """compare.json: every candidate scored against the measurements (``lostmid compare``)."""

    schema_: _tag("compare") = Field(alias="schema", description=TAG)  # type: ignore[valid-type]
    measured: Object = Field(
        description="The measurement compared: its files, seeds, length, profile and gains."
    )
    theory_source: str | None = Field(
        description="The theory.json compared against; null: computed from the measurement."
    )
    settings: Object = Field(description="Fit metric, spike policy, bins, kernels.")
    metric_definitions: dict[str, str] = Field(description="What each agreement metric is.")
    noise_floor: Object | None = Field(
        description="Agreement between the seeds' own measurements; null with one seed."
    )
    candidates: dict[str, Object] = Field(
        description="Each candidate (theories, predictions, baselines) and its scores."
    )
    ranking: Object = Field(description="The candidates ordered by each metric.")
    claims: list[Claim] = Field(description="The claims judged from these numbers.")
    notes: list[str] = Field(description="What the comparison noticed (one line each).")
    files: dict[str, str] = Field(description="The figures written beside it.")
    metadata: Metadata


class TrainingFile(Strict):
    """dynamics.json: a language model's profile through training (``lostmid train``)."""

    schema_: _tag("training") = Field(alias="schema", description=TAG)  # type: ignore[valid-type]
    config: Object = Field(
        description="The resolved training configuration (preset, model, optimiser, seed)."
    )
    interventions: str = Field(description="The interventions trained with (none: plain training).")
    model: Object = Field(
        description="The model trained: family, layers, hidden size, context, parameters."
    )
    corpus: Object = Field(description="The corpus and its held-out split.")
    checkpoint_steps: list[int] = Field(description="The steps at which checkpoints are measured.")
    complete: bool = Field(description="false: interrupted; --resume continues it.")
    records: list[Object] = Field(description="One checkpoint each: step, loss, profile ...")
    tokens_per_second: Number = Field(description="Training throughput.")
    metadata: Metadata | None = Field(
        description="Provenance (null in a run written before it had any)."
    )


class RetrievalTrainingFile(Strict):
    """retrieval.json: retrieval training, accuracy and influence by checkpoint
    (``lostmid train --task kv|mqar``)."""

    schema_: _tag("retrieval training") = Field(alias="schema", description=TAG)  # type: ignore[valid-type]
    config: Object = Field(description="The resolved preset: task, training, evaluation.")
    parameters: int = Field(description="Trainable parameters.")
    sequence_length: int = Field(description="Tokens a training row.")
    prompt_length: int = Field(description="Tokens of an evaluation prompt.")
    record_spans: list[list[int]] = Field(
        description="Each record's [first, last] token position in a prompt."
    )
    checkpoints: list[Object] = Field(
        description="One per evaluation: step, accuracy by record, influence, learning signal."
    )
    link: Object = Field(description="Influence-accuracy rank correlation at init, final.")
    final_accuracy: Number = Field(description="Mean accuracy at the last checkpoint.")
    learning: Object | None = Field(description="When each record was learnt.")
    train_seconds: float = Field(description="Seconds spent training.")
    wall_seconds: float = Field(description="Seconds of the whole run.")
    cpu_seconds: float = Field(description="CPU seconds of the whole run.")
    metadata: Metadata | None = Field(None, description="Absent while the run trains.")


class RemediesFile(Strict):
    """remedies.json: each remedy against its baseline (``lostmid remedies``)."""

    schema_: _tag("remedies") = Field(alias="schema", description=TAG)  # type: ignore[valid-type]
    remedies: list[RemedyEntry] = Field(
        description="Each remedy (the baselines included) over its seeds."
    )
    config: Object = Field(description="The resolved configuration.")
    rule: str = Field(description="The verdict rule, in words.")
    seconds: float = Field(description="Seconds of the run.")
    metadata: Metadata
    alpha: Object | None = Field(None, description="The theory's alpha and its source.")


class FactorialRecord(Strict):
    """``retrieve.json``'s ``factorial``: the gold needle's depth crossed with its rank
    among the needles on the same items (:mod:`lostmid.behaviour.retrieve.factorial`;
    the model and its rules: :mod:`lostmid.stats.factorial`). Effects are in accuracy
    units, each with ``estimate``, ``ci_low``, ``ci_high`` (95%)."""

    metric: str = Field(description="The outcome modelled: generate (greedy) or teacher.")
    design: Object = Field(
        description="depths, ranks (first, middle, last), cells [depth, rank] run, left_out "
        "cells (no room for a distractor before depth 0 or after 100), items, needles, "
        "gap_tokens (the least filler between two needles, as asked), smallest_gap_placed, "
        "arrangements (factorial, ends) in words."
    )
    cells: list[Object] = Field(
        description="Each (depth, rank) cell of the factorial: n, correct, accuracy, Wilson "
        "ci_low, ci_high."
    )
    formula: str = Field(description="The model: logit P(correct) by rank, depth, distance.")
    method: str = Field(description="How it is fitted (GEE, items as clusters) and read.")
    n: int = Field(description="Examples fitted (the factorial cells).")
    clusters: int = Field(description="Items: the GEE's clusters.")
    converged: bool = Field(description="Whether the fit converged (else: infinite intervals).")
    within_item_correlation: Number = Field(description="The exchangeable correlation fitted.")
    coefficients: dict[str, Object] = Field(
        description="Each term's log-odds coefficient with its robust 95% interval."
    )
    depth_effect: Object = Field(
        description="The depth effect adjusted for rank: (P(depth 0) + P(depth 100)) / 2 - "
        "P(depth 50), each example's rank held; with its verdict (supported, not supported, "
        "inconclusive)."
    )
    rank_effect: Object = Field(
        description="The rank effect adjusted for depth: (P(first) + P(last)) / 2 - "
        "P(middle), each example's depth held; with its verdict."
    )
    depth_tilt: Object = Field(description="P(depth 100) - P(depth 0), rank held; no verdict.")
    rank_tilt: Object = Field(description="P(last) - P(first), depth held; no verdict.")
    rules: dict[str, str] = Field(description="The verdict rules, stated before the data.")
    distractors_moved: Object | None = Field(
        description="The gold fixed at the depth nearest 50 with every rank, the distractors "
        "moved: each rank against another, paired by item (Newcombe)."
    )
    gold_moved: Object | None = Field(
        description="The distractors fixed at both ends, the gold (middle rank) moved: "
        "accuracy by depth, the end depths against the middle one, paired by item."
    )
    errors: list[Object] | None = Field(
        description="Per arrangement, depth and rank: n and the greedy answers naming the "
        "gold, an earlier needle, a later one, or none (null without greedy answers)."
    )


class RetrievalFile(Strict):
    """retrieve.json: accuracy by position on a retrieval task (``lostmid retrieve``)."""

    schema_: _tag("retrieval") = Field(alias="schema", description=TAG)  # type: ignore[valid-type]
    task: str = Field(description="The retrieval task (kv, mqar, niah, niah-multikey, ...).")
    axis: Literal["depth", "index"] = Field(
        description="depth (needle depth in %) or index (gold record index): what a position is."
    )
    metric: str = Field(
        description="generate (greedy answers) or teacher (teacher-forced): positions' metric."
    )
    positions: list[PositionScore] = Field(
        description="Accuracy at each position, with its Wilson interval."
    )
    summary: Object = Field(
        description="Mean accuracy and the gap, primacy and recency contrasts with their intervals."
    )
    shape: ShapeRecord
    by_metric: dict[str, Object] = Field(description="The same for each metric run.")
    lengths: list[int | None] = Field(
        description="The context lengths of by_length (null: the one length)."
    )
    by_length: list[Object] = Field(description="Positions, summary and shape at each length.")
    cells: list[Object] = Field(
        description="Each (length, position) cell: its count, each metric's correct and interval."
    )
    scoring: Object = Field(description="The answer rule used, the one asked and the passes run.")
    prompt: Object = Field(
        description="The prompt format: template, answer prefix, a rendered example, the budget."
    )
    calibration: Object | None = Field(
        description="The pilot that placed the difficulty off floor and ceiling, or null."
    )
    design: str = Field(
        description="moved (one example a position) or shared (one context, every position asked)."
    )
    data: Object | None = Field(description="The --data file read; null for generated examples.")
    model: Object = Field(
        description="The model as loaded: spec, family, adapter, sizes, init, dtype, checkpoint."
    )
    tokenizer: str | None = Field(description="null: the task's own token ids (mqar).")
    examples: int = Field(description="Examples scored.")
    seconds: float = Field(description="Seconds of the run.")
    config: Object = Field(description="The run as asked (a rerun compares it).")
    measured_config: Object | None = Field(
        None, description="The run as measured, where --calibrate or --lead-in learn changed it."
    )
    lead_in: Object | None = Field(None, description="The lead-in learnt from a pilot.")
    factorial: FactorialRecord | None = Field(
        None,
        description="--needle-order factorial: depth against the gold's rank among the "
        "needles (absent otherwise).",
    )
    metadata: Metadata


class ScoreFile(Strict):
    """score.json: accuracy by position from another tool's samples (``lostmid score``)."""

    schema_: _tag("score") = Field(alias="schema", description=TAG)  # type: ignore[valid-type]
    source: str = Field(description="The samples file that was scored.")
    format: str = Field(description="Its format: lm-eval, ruler or needle-tester.")
    axis: str = Field(description="depth | index: what a position is.")
    samples: int = Field(description="Samples read.")
    positions: list[PositionScore] = Field(
        description="Accuracy at each position, with its Wilson interval."
    )
    summary: Object = Field(
        description="Mean accuracy and the paired gap, primacy and recency contrasts."
    )
    shape: ShapeRecord
    by_length: dict[str, Object] | None = Field(
        None,
        description="The same by context length (its tokens, as text), where the samples "
        "have several.",
    )
    metadata: Metadata


class AblationFile(Strict):
    """ablation.json: the ladder of ablations and where the gap opens (``lostmid ablate``)."""

    schema_: _tag("ablation") | None = Field(None, alias="schema", description=TAG)  # type: ignore[valid-type]
    config: Object = Field(description="The resolved configuration.")
    definitions: Object = Field(description="What each rung, score and rule means.")
    rungs: list[Object] = Field(
        description="Each rung of the ladder: its ingredients, its measurements and scores."
    )
    skipped: dict[str, str] = Field(description="Rungs not measured, with why.")
    gap_rung: str | None = Field(
        description="The first rung whose best prediction is off the noise floor; null if none."
    )
    files: dict[str, str] = Field(description="The figures written beside it.")
    metadata: Metadata


class SweepFile(Strict):
    """sweep.json: every unit of a sweep and what became of it (``lostmid sweep``)."""

    schema_: _tag("sweep") | None = Field(None, alias="schema", description=TAG)  # type: ignore[valid-type]
    units: list[SweepUnit] = Field(description="Every unit and what became of it.")
    counts: dict[str, int] = Field(description="Units done, reused and failed.")
    seconds: float = Field(description="Seconds of the sweep.")
    config: Object = Field(description="The grids, backend and retries.")
    complete: bool = Field(description="false: interrupted; a rerun resumes it.")
    units_planned: int = Field(description="Units the grids make.")
    metadata: Metadata
    summaries: list[Object] | None = Field(None, description="Absent while it runs.")


class DoseFile(Strict):
    """dose.json: the depth dose-response of retrieval training runs."""

    schema_: _tag("dose") = Field(alias="schema", description=TAG)  # type: ignore[valid-type]
    arms: list[Object] = Field(
        description="Each depth arm over seeds: structural primacy S, learning order B."
    )
    variants: list[Object] = Field(
        description="Each variant against its depth's base arm (paired by seed)."
    )
    dose_response: Object | None = Field(
        description="The verdict of the stated rule (does B grow with S?); null with too few arms."
    )
    runs: list[Object] = Field(description="Each retrieval training run summarised.")
    metadata: Metadata


class SeriesFile(Strict):
    """series.json: a training run's checkpoints against the same random-init twins
    (``lostmid series``)."""

    schema_: _tag("series") = Field(alias="schema", description=TAG)  # type: ignore[valid-type]
    models: list[str] = Field(description="The checkpoints, in step order, as given.")
    steps: list[int] = Field(description="Each checkpoint's training step.")
    length: int = Field(description="Tokens an input (L).")
    peaks: dict[str, str] = Field(
        description="Each peak of the peak-to-valley ratio and the readout that reads it."
    )
    kinds: dict[str, Object] = Field(
        description="Each input kind: its inputs and twins, the trajectory (each checkpoint's "
        "change against the twins at each peak with its 95% interval, where its valley is, "
        "the full comparison) and the verdict of the last checkpoint against the first."
    )
    deepens: Object = Field(
        description="Deepens along the series: the verdict over every kind and peak, its "
        "rule, and each kind's verdict."
    )
    figures: dict[str, str] = Field(description="Figure name -> PNG file in the folder.")
    metadata: Metadata


class ReproduceFile(Open):
    """reproduce.json: the paper's claims judged, section by section (``lostmid
    reproduce``); each section null when it was off. A section registered beside these
    (:data:`lostmid.reproduce.sections.SECTIONS`) adds its own key."""

    schema_: _tag("reproduce") | None = Field(None, alias="schema", description=TAG)  # type: ignore[valid-type]
    scale: Object = Field(description="The scale run (sizes, seeds, sections).")
    models: dict[str, Object] = Field(
        description="Each model measured at init: its analysis against the theory."
    )
    training: Object | None = Field(description="The training section's result; null when off.")
    behaviour: Object | None = Field(
        description="The behavioural section's (retrieval training) result; null when off."
    )
    remedies: Object | None = Field(description="The remedies section's result; null when off.")
    dose: Object | None = Field(
        description="The depth dose-response section's result; null when off."
    )
    checkpoints: Object | None = Field(
        description="The pretrained-vs-twins study's result; null when off."
    )
    real_behaviour: Object | None = Field(
        description="Accuracy by depth on the registry checkpoints; null when off."
    )
    real_remedies: Object | None = Field(
        description="Inference remedies on the registry checkpoints; null when off."
    )
    real_link: Object | None = Field(
        description="Influence against behaviour on the same prompts; null when off."
    )
    claims: list[Claim] = Field(description="The claims table (also claims.json).")
    figures: dict[str, str | None] = Field(description="Figure name -> PNG path.")
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
    "series": SeriesFile,
    "reproduce": ReproduceFile,
}
"""Result kind (:data:`lostmid.files.RESULT_KINDS`) -> its model."""
