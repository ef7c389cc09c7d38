"""``retrieve --export-lm-eval DIR``: the examples as lm-evaluation-harness tasks.

One task per (task, length cell): ``DIR/lostmid_TASK[_LENGTH].yaml`` and its documents
``DIR/lostmid_TASK[_LENGTH].jsonl``, with one ``DIR/utils.py`` beside them that loads the
documents (``custom_dataset``, so the directory can move and nothing is downloaded) and
scores an answer by the run's rule (``process_results``, metric ``acc``). The rule is
written out in ``utils.py`` (a copy of :mod:`lostmid.behaviour.decoding.answers`' definition
that needs nothing but the standard library), so the task runs where lostmid is not
installed; the round-trip test checks it against lostmid's scores.

Each task: ``output_type: generate_until``, greedy (``do_sample: false``,
``temperature: 0``), ``max_gen_toks`` the run's greedy budget, no stop strings but the
model's end-of-sequence token (lm-eval adds it; lostmid cuts its answers there too),
``doc_to_text: question`` and ``gen_prefix: answer_prefix`` (the prompt cut where the
answer starts: lm-eval puts the prefix after the question as written, or with
``--apply_chat_template`` at the start of the assistant's turn, where lostmid puts it
for a chat model; lm-eval adds a space between the two only when neither has one at the
join) and each document's position fields (``gold_index`` or ``depth``,
``depth_pct``, ``length_cell``, ``item``), so per-position accuracy can be computed from
lm-eval's logged samples.

    lm_eval --model hf --model_args pretrained=./my-llm --include_path DIR \\
        --tasks lostmid_kv --apply_chat_template --log_samples --output_path results/lm-eval

with ``--apply_chat_template`` exactly when lostmid applied the model's chat template:
the export says so in three places lm-eval's user reads (``DIR/README.md`` with the
whole command, each YAML's header and its ``metadata``), and each document carries the
template's markers (``chat_template_markers``: the text the template puts between the
user's message and the answer), which lm-eval logs with every sample. ``lostmid score``
checks the logged prompts for them (:func:`check_chat_template`): samples of a task
exported with a template but run without it are refused in one line, since they score a
model prompted otherwise than lostmid prompted it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from lostmid.behaviour.tasks.example import RetrievalExample
from lostmid.errors import UserError

UTILS = r'''"""Written by lostmid retrieve --export-lm-eval: load the documents beside this file
and score greedy answers by the run's rule (standard library only)."""

import json
import re
import string
from pathlib import Path

_ARTICLES = re.compile(r"\b(a|an|the)\b")


def load_docs(data_file, **_):
    import datasets

    path = Path(__file__).parent / data_file
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return datasets.DatasetDict({"test": datasets.Dataset.from_list(rows)})


def _normalise(text):
    return " ".join(text.lower().split())


def _squad(text):
    text = "".join(ch for ch in text.lower() if ch not in set(string.punctuation))
    return " ".join(_ARTICLES.sub(" ", text).split())


def _found(rule, answer, reference):
    if rule == "substring":
        return _normalise(reference) in _normalise(answer)
    line = _squad(answer.split("\n")[0].strip())
    if rule == "exact":
        return line == _squad(reference)
    return _squad(reference) in line


def process_results(doc, results):
    hits = [_found(doc["rule"], results[0], r) for r in doc["references"]]
    correct = all(hits) if doc["match"] == "all" else any(hits)
    return {"acc": 1.0 if correct else 0.0}
'''

YAML = """# Written by lostmid retrieve --export-lm-eval ({examples} examples; rule {rule}).
# lostmid encoded prompts with add_special_tokens={special}{chat}.
# Run it as README.md beside this file says:
#   {command}
task: {name}
custom_dataset: !function utils.load_docs
dataset_kwargs:
  data_file: {name}.jsonl
test_split: test
output_type: generate_until
doc_to_text: question
gen_prefix: "{{{{answer_prefix}}}}"
doc_to_target: value
target_delimiter: ""
generation_kwargs:
  until: []
  do_sample: false
  temperature: 0.0
  max_gen_toks: {new_tokens}
process_results: !function utils.process_results
metric_list:
  - metric: acc
    aggregation: mean
    higher_is_better: true
metadata:
  version: 1.0
  lostmid_chat_template: {applied}
"""

RUN_CONFIG = "lm_eval_config.yaml"
"""lm-eval's own run configuration (``lm_eval run --config FILE``), beside the tasks."""

README = """# lm-eval tasks written by lostmid retrieve --export-lm-eval

{tasks}. Run them on your model with lm-evaluation-harness, logging every sample, then
score the samples by position with lostmid. `{config}` beside this file holds lm-eval's
run settings for them (flags given on the command line override it):

```bash
lm_eval run --config {directory}/{config}
lostmid score OUT/*/samples_{first}_*.jsonl --out runs/scored
```

or, the same run with every flag written out:

```bash
{command}
```

{why}
`pretrained=` takes a Hugging Face model folder (for a registry checkpoint, the folder
`lostmid list models` names); any other lm-eval model type (`--model vllm`, an API)
works the same way, prompted the same way.
"""

APPLIED = (
    "lostmid applied the model's chat template to these prompts, so lm-eval must too: "
    "`--apply_chat_template` is part of the command. Without it the same model is asked "
    "a different prompt and scores differently, and `lostmid score` refuses its samples "
    "(each prompt lm-eval logs is checked for the template's markers)."
)
RAW = (
    "lostmid sent these prompts raw (no chat template), so the command has no "
    "`--apply_chat_template`."
)
SENTINEL = "LOSTMIDUSERMESSAGE"


def template_markers(render_chat: Callable[[str], str]) -> list[str]:
    """The text a chat template puts after the user's message and before the answer
    (its lines, stripped): what every prompt rendered with the template contains.

    >>> chatml = lambda m: f"<|im_start|>user\\n{m}<|im_end|>\\n<|im_start|>assistant\\n"
    >>> template_markers(chatml)
    ['<|im_end|>', '<|im_start|>assistant']
    """
    rendered = render_chat(SENTINEL)
    after = rendered[rendered.index(SENTINEL) + len(SENTINEL) :]
    return [line.strip() for line in after.splitlines() if line.strip()]


def lm_eval_command(names: Sequence[str], directory: Path, model: str, applied: bool) -> str:
    """The lm-eval command line that runs the exported tasks as lostmid prompted them.

    >>> print(lm_eval_command(["lostmid_kv"], Path("tasks"), "./m", True))
    ... # doctest: +NORMALIZE_WHITESPACE
    lm_eval --model hf --model_args pretrained=./m --include_path tasks --tasks lostmid_kv
     --apply_chat_template --log_samples --output_path OUT
    """
    chat = " --apply_chat_template" if applied else ""
    return (
        f"lm_eval --model hf --model_args pretrained={model} --include_path {directory} "
        f"--tasks {','.join(names)}{chat} --log_samples --output_path OUT"
    )


def task_name(task: str, length: int | None) -> str:
    """``lostmid_kv``, ``lostmid_niah_512``, ...

    >>> task_name("niah", 512), task_name("kv", None)
    ('lostmid_niah_512', 'lostmid_kv')
    """
    return f"lostmid_{task}" + ("" if length is None else f"_{length}")


def export_lm_eval(
    examples: Sequence[RetrievalExample],
    directory: Path,
    *,
    rule: str,
    new_tokens: int,
    tokenizer: str | None = None,
    add_special_tokens: bool = True,
    chat_template: bool = False,
    markers: Sequence[str] = (),
    model: str = "MODEL_FOLDER",
) -> list[Path]:
    """Write the tasks (module doc) into ``directory``; returns the YAML files.
    ``markers``: the chat template's (:func:`template_markers`), when it was applied;
    ``model``: what the command in README.md names for ``pretrained=``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "utils.py").write_text(UTILS, encoding="utf-8")
    groups: dict[str, list[RetrievalExample]] = {}
    for ex in examples:
        groups.setdefault(task_name(ex.task, ex.length), []).append(ex)
    command = lm_eval_command(list(groups), directory, model, chat_template)
    written = []
    for name, members in groups.items():
        with (directory / f"{name}.jsonl").open("w", encoding="utf-8") as f:
            for ex in members:
                cut = len(ex.prompt) - len(ex.answer_prefix)
                doc = {
                    "prompt": ex.prompt,
                    "question": ex.prompt[:cut],
                    # after a chat template's assistant tag the prefix starts the turn,
                    # without its leading space or newline (as lostmid prompts it)
                    "answer_prefix": ex.answer_prefix.lstrip()
                    if chat_template
                    else ex.answer_prefix,
                    "value": ex.value,
                    "references": list(ex.references),
                    "match": ex.match,
                    "rule": rule,
                    "task": ex.task,
                    "gold_index": ex.gold_index,
                    "depth": ex.depth,
                    "position": ex.position,
                    "depth_pct": ex.depth_pct,
                    "length_cell": ex.length,
                    "item": ex.item,
                    # lostmid score checks lm-eval's logged prompts for these
                    "chat_template_markers": list(markers) if chat_template else [],
                }
                f.write(json.dumps(doc, ensure_ascii=False) + "\n")
        yaml = YAML.format(
            name=name,
            examples=len(members),
            rule=rule,
            new_tokens=new_tokens,
            special=add_special_tokens,
            chat="; a chat template was applied: run lm_eval with --apply_chat_template"
            if chat_template
            else "",
            command=command,
            applied="true" if chat_template else "false",
        )
        if tokenizer is not None:
            yaml = yaml.replace("\ntask:", f"\n# tokenizer: {tokenizer}\ntask:", 1)
        path = directory / f"{name}.yaml"
        path.write_text(yaml, encoding="utf-8")
        written.append(path)
    readme = README.format(
        tasks=", ".join(f"`{n}`" for n in groups),
        command=command.replace(" --", " \\\n    --"),
        first=next(iter(groups)),
        why=APPLIED if chat_template else RAW,
        config=RUN_CONFIG,
        directory=directory,
    )
    (directory / "README.md").write_text(readme, encoding="utf-8")
    (directory / RUN_CONFIG).write_text(
        run_config(list(groups), directory, model, chat_template), encoding="utf-8"
    )
    return written


def run_config(names: Sequence[str], directory: Path, model: str, applied: bool) -> str:
    """lm-eval's run configuration (its ``EvaluatorConfig`` fields, read by ``lm_eval run
    --config``): the tasks, where they are, every sample logged, and
    ``apply_chat_template`` as lostmid prompted (each value JSON, which YAML reads).

    >>> print(run_config(["lostmid_kv"], Path("/t"), "./m", True).splitlines()[-3])
    apply_chat_template: true
    """
    values = {
        "model": "hf",
        "model_args": {"pretrained": model},
        "tasks": list(names),
        "include_path": str(Path(directory).resolve()),
        "apply_chat_template": applied,
        "log_samples": True,
        "output_path": "OUT",
    }
    head = (
        "# Written by lostmid retrieve --export-lm-eval: lm-eval's run settings for these\n"
        "# tasks, prompted as lostmid prompted them (apply_chat_template). Set\n"
        "# model_args.pretrained to your model folder and output_path to a folder.\n"
    )
    return head + "".join(f"{key}: {json.dumps(value)}\n" for key, value in values.items())


def _prompts(value: Any) -> Iterator[str]:
    """Every string inside a logged sample's ``arguments`` (lm-eval's file nests them
    as ``{"gen_args_0": {"arg_0": prompt, ...}}``, its Python result as tuples)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for inner in value.values():
            yield from _prompts(inner)
    elif isinstance(value, list | tuple):
        for inner in value:
            yield from _prompts(inner)


def check_chat_template(path: Path) -> None:
    """Refuse lm-eval samples whose prompts lack the chat template the export applied.

    A task exported with the model's chat template names the template's markers in
    every document (``chat_template_markers``); lm-eval logs each sample's prompt under
    ``arguments``. A prompt without them was sent raw: lm-eval ran without
    ``--apply_chat_template``, so the samples measure a model prompted otherwise than
    lostmid prompted it (on SmolLM2 it moved a verdict). Samples of a task exported
    without a template, or from an older export, pass unchecked.

    Raises:
        UserError: one line naming the first such sample and the flag.
    """
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            sample = json.loads(line)
            doc = sample.get("doc") if isinstance(sample, Mapping) else None
            markers = doc.get("chat_template_markers") if isinstance(doc, Mapping) else None
            if not markers or "arguments" not in sample:
                continue
            prompts = list(_prompts(sample["arguments"]))
            if not any(all(m in p for m in markers) for p in prompts):
                raise UserError(
                    f"{path}:{number}: the task was exported with the model's chat template "
                    f"but this prompt lacks its markers ({' '.join(markers)}): lm-eval ran "
                    "without --apply_chat_template; run it again with that flag (or export "
                    "with --chat-template off to score raw prompts)"
                )
