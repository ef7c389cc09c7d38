"""``lostmid diagnose MODEL`` (lostmid.reproduce.diagnose) and ``reproduce --trained``: a
model the tests build (a Hugging Face folder, a GGUF file) through every trained-model
study, the same numbers both ways, and what does not fit refused before any compute."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from cli_args import SECTIONS_OFF

from lostmid.behaviour.link.design import LinkScale
from lostmid.errors import UserError
from lostmid.models.spec import ModelSpec, model_slug
from lostmid.pretrained.cells import read_cell
from lostmid.pretrained.study import StudyConfig
from lostmid.reproduce import checkpoints as ck
from lostmid.reproduce import real_behaviour as rb
from lostmid.reproduce import real_link as rl
from lostmid.reproduce import real_remedies as rr
from lostmid.reproduce.config import ReproduceConfig
from lostmid.reproduce.diagnose import DiagnoseConfig, estimate_minutes

sys.path.insert(0, str(Path(__file__).parents[1] / "models"))
from gguf_files import write_tiny_llama_gguf  # noqa: E402

TITLES = (
    ck.CheckpointsPlugin.title,
    "Real checkpoints: does a real LLM lose the middle?",
    rl.RealLinkPlugin.title,
    rr.RealRemediesPlugin.title,
)


@pytest.fixture
def small_scales(monkeypatch: pytest.MonkeyPatch) -> None:
    """The four sections' quick scales, small enough for a 2-layer model in seconds."""
    monkeypatch.setitem(
        ck.CHECKPOINT_SCALES,
        "quick",
        StudyConfig(lengths=(64,), kinds=("random", "text"), inputs=2, twins=1, probes=1),
    )
    monkeypatch.setitem(
        rb.REAL_SCALES,
        "quick",
        rb.RealScale("quick", ("x",), 300, 3, 2, True, pilot_examples=2,
                     extra={"knob_values": (0, 1)}),
    )  # fmt: skip
    monkeypatch.setitem(rl.LINK_SCALES, "quick", LinkScale("quick", ("x",), 600, 1, 1, 1))
    monkeypatch.setitem(
        rr.REAL_REMEDY_SCALES, "quick", rr.RealRemedyScale("quick", ("x",), 600, 2, 1)
    )


def _trained_claims(folder: Path, model: Path) -> list[dict]:
    """The claims of the trained-model sections: those whose numbers name the model."""
    claims = json.loads((folder / "claims.json").read_text())
    return [c for c in claims if str(model) in c["ours"]]


def test_diagnose_runs_every_trained_study_on_a_folder_and_reproduce_agrees(
    bpe_model_dir: Path, tmp_path: Path, run_cli, small_scales
) -> None:
    out = tmp_path / "d"
    code, said, err = run_cli(
        "diagnose", str(bpe_model_dir), "--scale", "quick", "--jobs", "1", "--out", out
    )
    assert code == 0, err
    assert "about" in said and "min on 2 cores" in said  # the time, said before it starts
    assert "diagnose: started" in said and "reproduce:" not in said  # its own name
    html = (out / "report.html").read_text()
    assert all(title in html for title in TITLES), [t for t in TITLES if t not in html]
    assert "Noise floor" not in html  # no at-init core in a diagnosis
    assert "Remedies at equal budget" not in html  # nor a section it did not run
    assert f"Where does {bpe_model_dir.name} lose the middle?" in html
    # the model by its short label; its full path in Provenance only (a table, no JSON)
    before, provenance = html.split('<section id="provenance">')
    assert str(bpe_model_dir) not in before and f"{bpe_model_dir.name}:" in before
    assert f"<td>{bpe_model_dir}</td>" in provenance and "<pre>" not in provenance
    assert provenance.count("<td>seed</td>") == 1
    # no zero-width interval (identical arms have none); the link section says its n
    assert not re.search(r"([+-]\d\.\d\d) \[\1, \1\]", html), "a zero-width interval"
    assert "no interval: no spread" in html
    assert "n = 5 prompts" in html and "on other items" in html
    # the summary leads with the trained-model figures: profile vs twins, accuracy by depth
    summary = html.split('id="summary"')[1].split('id="claims"')[0]
    assert "The models as given: each one" in summary and "by needle depth" in summary
    record = json.loads((out / "reproduce.json").read_text())
    assert record["models"] == {}
    assert record["metadata"]["config"]["trained"] == [str(bpe_model_dir)]
    for key in ("checkpoints", "real_behaviour", "real_link", "real_remedies"):
        assert record[key] is not None, key
    claims = _trained_claims(out, bpe_model_dir)
    assert len(claims) == len(json.loads((out / "claims.json").read_text()))  # no other
    # 3 structural claims a cell (2 kinds), 1 behavioural, 3 remedies, 1 link
    assert [c["claim"] for c in claims].count(ck.DEEPEN_CLAIM) == 2
    assert len(claims) == 11 and any(c["claim"] == rb.CLAIM for c in claims)
    # run again: every stage reused, the same claims
    code, said, err = run_cli(
        "diagnose", str(bpe_model_dir), "--scale", "quick", "--jobs", "1", "--out", out
    )
    assert code == 0, err
    assert "0 stages computed" in said
    assert _trained_claims(out, bpe_model_dir) == claims
    # the same model through reproduce --trained, beside an at-init model: the same numbers
    args = ["--models", "tiny-gpt2", "--length", "16", "--seeds", "1", "--samples", "1"]
    args += [*SECTIONS_OFF[:6], "--checkpoints", "quick", "--real-behaviour", "quick"]
    args += ["--real-link", "quick", "--real-remedies", "quick", "--jobs", "1"]
    code, _, err = run_cli(
        "reproduce", "--quick", *args, "--trained", str(bpe_model_dir), "--out", tmp_path / "r"
    )
    assert code == 0, err
    assert _trained_claims(tmp_path / "r", bpe_model_dir) == claims


def test_a_prompt_format_travels_to_every_stage_and_is_recorded(
    chat_model_dir: Path, tmp_path: Path, small_scales
) -> None:
    config = DiagnoseConfig(str(chat_model_dir), scale="quick", chat_template="off")
    inner = config.reproduce_config()
    assert inner.trained_specs(("ignored",)) == (ModelSpec(str(chat_model_dir), "off", "on"),)
    assert inner.record()["chat_template"] == "off"
    from lostmid.reproduce import sections

    stages = [s for sec in sections.SECTIONS for s in sec.stages(inner, "cpu", tmp_path)]
    per_model = [s for s in stages if s.name.startswith(("real-", "real_"))]
    assert per_model and all(s.config["chat_template"] == "off" for s in per_model)
    # the default format adds nothing to a stage's record: older folders resume
    plain = DiagnoseConfig(str(chat_model_dir), scale="quick").reproduce_config()
    stages = [s for sec in sections.SECTIONS for s in sec.stages(plain, "cpu", tmp_path)]
    assert all("chat_template" not in s.config for s in stages)
    assert (
        rb.REAL_SCALES["quick"].retrieve_config(ModelSpec("m", "off", "off"), 0).answer_prefix
        == "off"
    )


def test_the_load_options_travel_to_every_stage_and_are_recorded(
    chat_model_dir: Path, tmp_path: Path, small_scales
) -> None:
    """--tokenizer, --dtype and --trust-remote-code reach every trained-model section's
    model (its command's config, the link's design, the checkpoint study's stage) and
    each stage's key; the defaults add nothing to a key."""
    from lostmid.reproduce import real_link, real_remedies, sections

    options = {"tokenizer": str(chat_model_dir), "dtype": "float64", "trust_remote_code": True}
    config = DiagnoseConfig(str(chat_model_dir), scale="quick", **options)
    spec = config.model_spec
    assert (spec.tokenizer, spec.dtype, spec.trust_remote_code) == tuple(options.values())
    inner = config.reproduce_config()
    assert {k: inner.record()[k] for k in options} == options
    stages = [s for sec in sections.SECTIONS for s in sec.stages(inner, "cpu", tmp_path)]
    per_model = [s for s in stages if s.name.startswith("real-")]
    assert per_model and all(options.items() <= s.config.items() for s in per_model)
    (checkpoints,) = [s for s in stages if s.name.startswith("checkpoints-")]
    assert checkpoints.config["options"] == {str(chat_model_dir): options}
    retrieve = rb.REAL_SCALES["quick"].retrieve_config(spec, 0)
    remedies = real_remedies.REAL_REMEDY_SCALES["quick"].remedies_config(spec, 0)
    for made in (retrieve.model_spec, remedies.model_spec):
        assert (made.tokenizer, made.dtype, made.trust_remote_code) == tuple(options.values())
    design = real_link.LINK_SCALES["quick"].design(spec, 0)
    assert ModelSpec.from_record(design) == spec
    plain = DiagnoseConfig(str(chat_model_dir), scale="quick").reproduce_config()
    stages = [s for sec in sections.SECTIONS for s in sec.stages(plain, "cpu", tmp_path)]
    assert not any(set(options) & set(s.config) or "options" in s.config for s in stages)
    assert not set(options) & set(real_link.LINK_SCALES["quick"].design(str(chat_model_dir), 0))


def test_diagnose_refuses_a_bad_dtype_in_one_line(run_cli, chat_model_dir: Path, tmp_path):
    code, _, err = run_cli("diagnose", str(chat_model_dir), "--dtype", "int3", "--out", tmp_path)
    assert code == 2 and "--dtype" in err and "Traceback" not in err


def test_what_does_not_fit_is_refused_in_one_line_before_any_compute(
    tmp_path: Path, run_cli, small_scales, monkeypatch: pytest.MonkeyPatch, unknown_family_dir
) -> None:
    monkeypatch.setenv("LOSTMID_CACHE", str(tmp_path / "cache"))
    gguf = tmp_path / "tiny.gguf"
    write_tiny_llama_gguf(gguf)  # 256 positions: shorter than the behaviour's 300 tokens
    cases = [
        (("tiny-gpt2",), "holds only the architecture"),
        ((str(gguf),), "its context is 256 tokens, shorter than the 300"),
        ((str(tmp_path / "nowhere"),), "no such directory"),
        ((str(gguf), "--chat-template", "maybe"), "--chat-template"),
    ]
    for args, message in cases:
        out = tmp_path / "x"
        code, _, err = run_cli("diagnose", *args, "--scale", "quick", "--out", out)
        assert code == 2 and message in err, (args, err)
        # one line (a GGUF file's first read dequantises it, with its progress bar)
        lines = [ln for ln in err.strip().splitlines() if "de-quantizing" not in ln]
        assert len(lines) == 1 and message in lines[0], err
        assert not (out / "stages").exists()  # nothing ran
        assert "smaller scale" not in err  # quick is the smallest: advice it can follow
    assert (
        "quick is the smallest scale"
        in run_cli("diagnose", str(gguf), "--scale", "quick", "--out", tmp_path / "x")[2]
    )
    # a model lostmid reads no layout of (a GPT-J, with weights): the remedies and the
    # link need one; the profile and the accuracy by depth do not
    from transformers import AutoConfig, AutoModelForCausalLM

    from lostmid.models.load import check_trained_model

    config = AutoConfig.from_pretrained(unknown_family_dir)
    AutoModelForCausalLM.from_config(config).save_pretrained(unknown_family_dir)
    assert check_trained_model(str(unknown_family_dir), 16)["layers"] == 2
    with pytest.raises(UserError, match="no family adapter reads its layout"):
        check_trained_model(str(unknown_family_dir), 16, layout=True)


def test_a_gguf_file_goes_through_the_checkpoint_study(
    tmp_path: Path, run_cli, small_scales, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOSTMID_CACHE", str(tmp_path / "cache"))
    gguf = tmp_path / "tiny.gguf"
    write_tiny_llama_gguf(gguf)
    args = ["--models", "tiny-gpt2", "--length", "16", "--seeds", "1", "--samples", "1"]
    args += [*SECTIONS_OFF[:6], "--checkpoints", "quick", "--real-behaviour", "off"]
    code, _, err = run_cli(
        "reproduce",
        "--quick",
        *args,
        "--jobs",
        "1",
        "--trained",
        str(gguf),
        "--out",
        tmp_path / "r",
    )
    assert code == 0, err
    record = json.loads((tmp_path / "r" / "reproduce.json").read_text())
    cells = record["checkpoints"]["cells"]
    assert set(cells) == {f"{gguf}/L64/random", f"{gguf}/L64/text"}
    facts = read_cell(
        tmp_path / "r/checkpoints/profiles" / model_slug(str(gguf)) / "L64/text/twin0.npz"
    )[1]
    # the file does not carry the initialiser range: where the twin's came from is recorded
    assert "file does not carry it" in facts["init_facts"]["initializer_range"]["from"]


def test_the_estimate_scales_with_size_and_the_config_checks_its_scale() -> None:
    assert estimate_minutes("quick", 10) < estimate_minutes("default", 10)
    assert estimate_minutes("full", 2_000) == pytest.approx(2 * estimate_minutes("full", 1_000))
    with pytest.raises(UserError, match="--scale"):
        DiagnoseConfig("m", scale="huge")
    with pytest.raises(UserError, match="--models is empty"):
        ReproduceConfig(models=(), trained=())


def test_every_section_runs_in_worker_processes_at_the_real_quick_scale(
    bpe_model_dir: Path, tmp_path: Path, run_cli
) -> None:
    """The default backend: each stage in a worker process (a daemon, which may start
    none of its own: the remedies' arms run in turn inside their stage)."""
    out = tmp_path / "d"
    code, _, err = run_cli("diagnose", str(bpe_model_dir), "--scale", "quick", "--jobs", "2",
                           "--out", out)  # fmt: skip
    assert code == 0, err
    record = json.loads((out / "reproduce.json").read_text())
    assert all(record[k] for k in ("checkpoints", "real_behaviour", "real_link", "real_remedies"))


def _with_own_code(source: Path, folder: Path) -> Path:
    """``source`` (a Qwen2 folder with weights and a tokenizer) whose config names its own
    classes (``auto_map``): a Qwen2 under another name, as a hub model with custom code."""
    import shutil

    shutil.copytree(source, folder)
    config = json.loads((folder / "config.json").read_text())
    config["auto_map"] = {
        "AutoConfig": "own_config.OwnConfig",
        "AutoModelForCausalLM": "own_model.OwnModel",
    }
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "own_config.py").write_text(
        "from transformers import Qwen2Config\n\n\nclass OwnConfig(Qwen2Config):\n    pass\n"
    )
    (folder / "own_model.py").write_text(
        "from transformers import Qwen2ForCausalLM\n\nfrom .own_config import OwnConfig\n\n\n"
        "class OwnModel(Qwen2ForCausalLM):\n    config_class = OwnConfig\n"
    )
    return folder


def test_a_model_with_its_own_code_runs_with_trust_remote_code_only(
    bpe_model_dir: Path, tmp_path: Path, run_cli
) -> None:
    """A user's model whose config names its own code: refused in one line before any
    compute without --trust-remote-code (diagnose, retrieve); with it, its own classes
    load and score exactly what the same weights score without custom code."""
    own = _with_own_code(bpe_model_dir, tmp_path / "own")
    code, _, err = run_cli("diagnose", str(own), "--scale", "quick", "--out", tmp_path / "d")
    assert code == 2 and "--trust-remote-code" in err and "Traceback" not in err
    assert not (tmp_path / "d").exists()
    args = ["--task", "kv", "--pairs", "4", "--key-chars", "2", "--examples", "2"]
    args += ["--positions", "2", "--passes", "teacher"]
    code, _, err = run_cli("retrieve", "--model", str(own), *args, "--out", tmp_path / "r0")
    assert code == 2 and "--trust-remote-code" in err
    code, _, err = run_cli(
        "retrieve", "--model", str(own), *args, "--trust-remote-code", "--out", tmp_path / "r1"
    )
    assert code == 0, err
    code, _, err = run_cli(
        "retrieve", "--model", str(bpe_model_dir), *args, "--out", tmp_path / "r2"
    )
    assert code == 0, err
    ours, plain = (json.loads((tmp_path / r / "retrieve.json").read_text()) for r in ("r1", "r2"))
    assert ours["positions"] == plain["positions"]
    spec = ModelSpec(str(own), trust_remote_code=True)
    assert type(spec.load(init="pretrained").model).__name__ == "OwnModel"
    # diagnose's check before any compute takes it with the option (layout: hooks found)
    from lostmid.models.load import check_trained_model

    facts = check_trained_model(str(own), 64, layout=True, trust_remote_code=True)
    assert facts["layers"] == 2


def test_a_tokenizer_that_is_not_there_is_refused_before_any_stage(
    run_cli, chat_model_dir: Path, tmp_path: Path
) -> None:
    """--tokenizer names a folder that does not exist: one line before any compute and
    nothing written (it used to start every stage and fail in each)."""
    out = tmp_path / "d"
    code, _, err = run_cli(
        "diagnose", str(chat_model_dir), "--tokenizer", str(tmp_path / "none"), "--out", out
    )
    assert code == 2 and "no such directory" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def _damaged(folder: Path, how: str) -> None:
    """Damage a model folder's weights or tokenizer as a user's copy can be."""
    weights = folder / "model.safetensors"
    if how == "truncated safetensors":
        data = weights.read_bytes()
        weights.write_bytes(data[: len(data) // 2])
    elif how == "pickle weights":
        import pickle

        weights.unlink()
        (folder / "pytorch_model.bin").write_bytes(pickle.dumps({"w": print}))
    elif how == "no tokenizer":
        for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
            (folder / name).unlink(missing_ok=True)
    elif how == "template divides by zero":
        config = json.loads((folder / "tokenizer_config.json").read_text())
        (folder / "tokenizer_config.json").write_text(
            json.dumps({**config, "chat_template": "{{ 1/0 }}"})
        )
        (folder / "chat_template.jinja").unlink(missing_ok=True)


@pytest.mark.parametrize(
    ("how", "words"),
    [
        ("truncated safetensors", "not a readable safetensors file"),
        ("pickle weights", "cannot load the weights"),
        ("no tokenizer", "has no tokenizer"),
        ("template divides by zero", "chat template cannot be rendered (ZeroDivisionError"),
    ],
)
def test_a_damaged_model_is_refused_before_any_stage_and_its_fix_is_accepted(
    run_cli, chat_model_dir: Path, tmp_path: Path, how: str, words: str
) -> None:
    """Weights, tokenizer and template are checked before the folder is claimed: one
    line, nothing written, so the fix the line names is not refused as another run."""
    import shutil

    model = tmp_path / "model"
    shutil.copytree(chat_model_dir, model)
    _damaged(model, how)
    out = tmp_path / "d"
    code, _, err = run_cli("diagnose", str(model), "--scale", "quick", "--out", out)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and words in lines[0], err
    assert "Traceback" not in err and not (out / "stages").exists()
    assert not (out / ".lostmid.run.json").exists()  # nothing claimed: a fix is no new run
