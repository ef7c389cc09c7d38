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
        --tasks lostmid_kv --log_samples --output_path results/lm-eval
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from lostmid.behaviour.tasks.example import RetrievalExample

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
"""


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
) -> list[Path]:
    """Write the tasks (module doc) into ``directory``; returns the YAML files."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "utils.py").write_text(UTILS, encoding="utf-8")
    groups: dict[str, list[RetrievalExample]] = {}
    for ex in examples:
        groups.setdefault(task_name(ex.task, ex.length), []).append(ex)
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
        )
        if tokenizer is not None:
            yaml = yaml.replace("\ntask:", f"\n# tokenizer: {tokenizer}\ntask:", 1)
        path = directory / f"{name}.yaml"
        path.write_text(yaml, encoding="utf-8")
        written.append(path)
    return written
