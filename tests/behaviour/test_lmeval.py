"""``--export-lm-eval``: the exported task loads with lm-evaluation-harness's own task
loader, runs with lm-eval on the same local model, and lm-eval's logged samples give the
answers and the per-position accuracy that lostmid measured on the same examples."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

Cli = Callable[..., tuple[int, str, str]]
ROLE_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Nothing from the network: Hugging Face offline, caches in a temporary folder."""
    for name in ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.setenv(name, "1")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-datasets"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))


@pytest.mark.parametrize("chat", ["off", "on"])
def test_lm_eval_round_trip(
    chat_model_dir: Path,
    tmp_path: Path,
    run_cli: Cli,
    offline: None,
    chat: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import warnings

    import lm_eval  # the lmeval extra, installed by scripts/setup.sh
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager
    from transformers import AutoModelForCausalLM, AutoTokenizer

    export, out = tmp_path / "lm-eval", tmp_path / "r"
    if chat == "on":  # a template that names each turn's role, as real ones do
        model_dir = tmp_path / "model"
        shutil.copytree(chat_model_dir, model_dir)
        config = json.loads((model_dir / "tokenizer_config.json").read_text())
        config["chat_template"] = ROLE_TEMPLATE
        (model_dir / "tokenizer_config.json").write_text(json.dumps(config))
        (model_dir / "chat_template.jinja").unlink(missing_ok=True)
        chat_model_dir = model_dir
    # one-character values: a random model's answers contain them often enough that
    # accuracy varies by position, so the comparison can fail
    code, _, err = run_cli(
        "retrieve", "--model", chat_model_dir, "--pairs", "6", "--key-chars", "1",
        "--positions", "3", "--examples", "6", "--passes", "generate", "--chat-template",
        chat, "--export-lm-eval", export, "--out", out,
    )  # fmt: skip
    assert code == 0, err
    assert sorted(p.name for p in export.iterdir()) == [
        "README.md",
        "lm_eval_config.yaml",
        "lostmid_kv.jsonl",
        "lostmid_kv.yaml",
        "utils.py",
    ]
    # the command to run is written out whole, with the flag exactly when it is needed
    readme, yaml = (export / "README.md").read_text(), (export / "lostmid_kv.yaml").read_text()
    command = readme.split("```bash")[2].split("```")[0]  # the flags written out
    assert "--log_samples" in command and f"pretrained={chat_model_dir}" in command
    assert ("--apply_chat_template" in command) == (chat == "on")
    assert f"lostmid_chat_template: {'true' if chat == 'on' else 'false'}" in yaml
    assert ("--apply_chat_template" in yaml.split("task:")[0]) == (chat == "on")
    result = json.loads((out / "retrieve.json").read_text())
    mine = {c["index"]: c["generate_accuracy"] for c in result["cells"]}
    answers = {
        (r["item"], r["position"]): r["answer"]
        for r in map(json.loads, (out / "predictions.jsonl").read_text().splitlines())
    }
    # lm-eval's own reader of its run configuration: the flag is where lm-eval reads it
    from lm_eval.config.evaluate_config import EvaluatorConfig

    run = EvaluatorConfig.from_config(export / "lm_eval_config.yaml")
    assert run.apply_chat_template is (chat == "on") and run.log_samples is True
    assert run.tasks == ["lostmid_kv"] and Path(str(run.include_path)) == export.resolve()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        manager = TaskManager(include_path=str(export), include_defaults=False)
        assert "lostmid_kv" in manager.all_tasks  # lm-eval's own loader found the task
        model = AutoModelForCausalLM.from_pretrained(chat_model_dir)
        tok = AutoTokenizer.from_pretrained(chat_model_dir)
        # lostmid encoded with add_special_tokens=True (the YAML says so): lm-eval's BOS on
        # the YAML says how lostmid encoded: BOS added to a raw prompt; a template has its own
        bos = chat == "off"
        lm = HFLM(pretrained=model, tokenizer=tok, batch_size=1, device="cpu", add_bos_token=bos)
        evaluated = lm_eval.simple_evaluate(
            model=lm, tasks=["lostmid_kv"], task_manager=manager, log_samples=True,
            bootstrap_iters=0, apply_chat_template=run.apply_chat_template,
        )  # fmt: skip
    samples = evaluated["samples"]["lostmid_kv"]
    assert len(samples) == 18
    theirs: dict[int, list[float]] = {}
    for s in samples:
        doc = s["doc"]
        theirs.setdefault(doc["position"], []).append(s["acc"])
        assert s["filtered_resps"][0] == answers[(doc["item"], doc["position"])]
    per_position = {p: sum(v) / len(v) for p, v in theirs.items()}
    assert per_position == pytest.approx(mine)
    assert 0 < sum(mine.values()) < len(mine)  # neither all wrong nor all right
    # the samples file lm-eval's own logger writes, read back by lostmid score: the
    # accuracy by position, its intervals and the shape that retrieve itself found
    from lm_eval.loggers import EvaluationTracker

    tracker = EvaluationTracker(output_path=str(tmp_path / "lm-eval-out"))
    results = {k: v for k, v in evaluated.items() if k != "samples"}  # as lm_eval's CLI
    tracker.save_results_aggregated(results=results, samples=evaluated["samples"])
    tracker.save_results_samples(task_name="lostmid_kv", samples=samples)
    (logged,) = (tmp_path / "lm-eval-out").rglob("samples_lostmid_kv_*.jsonl")
    code, said, err = run_cli("score", logged, "--out", tmp_path / "score")
    assert code == 0, err
    assert "shape" in said
    scored = json.loads((tmp_path / "score" / "score.json").read_text())
    assert scored["schema"] == "lostmid.score/1" and scored["samples"] == 18
    for theirs_p, ours_p in zip(scored["positions"], result["positions"], strict=True):
        for key in ("index", "n", "correct", "accuracy", "ci_low", "ci_high"):
            assert theirs_p[key] == pytest.approx(ours_p[key]), key
    assert scored["shape"] == result["shape"]
    if chat == "off":
        return
    # the same task run by lm-eval without --apply_chat_template: refused in one line
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raw = lm_eval.simple_evaluate(
            model=lm, tasks=["lostmid_kv"], task_manager=manager, log_samples=True,
            bootstrap_iters=0, apply_chat_template=False, limit=2,
        )  # fmt: skip
    tracker = EvaluationTracker(output_path=str(tmp_path / "raw-out"))
    tracker.save_results_aggregated(
        results={k: v for k, v in raw.items() if k != "samples"}, samples=raw["samples"]
    )
    tracker.save_results_samples(task_name="lostmid_kv", samples=raw["samples"]["lostmid_kv"])
    (unprompted,) = (tmp_path / "raw-out").rglob("samples_lostmid_kv_*.jsonl")
    capsys.readouterr()  # lm-eval's own progress bars are not score's
    code, _, err = run_cli("score", unprompted, "--out", tmp_path / "score-raw")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "without --apply_chat_template" in err and "<|end|><|assistant|>" in err
    assert not (tmp_path / "score-raw" / "score.json").exists()


def test_the_exported_rule_agrees_with_lostmids_on_every_rule(tmp_path: Path) -> None:
    """utils.py carries its own copy of the rules (standard library only); on answers
    that each rule accepts or refuses, it says what lostmid.behaviour.decoding.answers says."""
    import importlib.util

    from lostmid.behaviour.decoding.answers import RULES, answer_correct
    from lostmid.behaviour.formats.lmeval import export_lm_eval
    from lostmid.behaviour.tasks.kv import kv_query

    export_lm_eval([kv_query([("a", "b"), ("c", "d")], 0)], tmp_path, rule="substring",
                   new_tokens=3)  # fmt: skip
    spec = importlib.util.spec_from_file_location("exported_utils", tmp_path / "utils.py")
    assert spec is not None and spec.loader is not None
    utils = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(utils)
    answers = [" The Eiffel Tower.\nParis", "\nEiffel tower", " eiffel-tower, in Paris",
               "TOWER", " 12 and 34", " 12"]  # fmt: skip
    references = [("eiffel tower",), ("Eiffel Tower", "Paris"), ("12", "34")]
    outcomes = set()
    for rule in RULES:
        for refs in references:
            for match in ("any", "all"):
                for answer in answers:
                    doc = {"rule": rule, "references": list(refs), "match": match}
                    mine = answer_correct(rule, answer, refs, match)
                    assert utils.process_results(doc, [answer]) == {"acc": float(mine)}
                    outcomes.add((rule, mine))
    assert len(outcomes) == 6  # every rule said yes and no somewhere


def test_the_documented_lm_eval_command_asks_for_the_template_as_lm_eval_parses_it() -> None:
    """score.md's step 2, read by lm-eval's own command-line parser: the chat template is
    applied and every sample logged (what score needs and checks)."""
    import shlex

    from lm_eval._cli import HarnessCLI

    page = (Path(__file__).resolve().parents[2] / "docs" / "commands" / "score.md").read_text()
    block = page.split("```bash")[1].split("```")[0].replace("\\\n", " ")
    (line,) = [ln for ln in block.splitlines() if ln.startswith("lm_eval ")]
    args = HarnessCLI()._parser.parse_args(["run", *shlex.split(line)[1:]])
    assert args.apply_chat_template is True and args.log_samples is True
    assert args.include_path == "tasks/" and args.tasks == ["lostmid_niah-multikey"]
