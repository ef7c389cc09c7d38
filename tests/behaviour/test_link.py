"""The link study (lostmid.behaviour.link): a run grows with more examples and nothing
else, survives a torn record, and its needle span covers the needle."""

from __future__ import annotations

from pathlib import Path

from lostmid.behaviour.link.design import LinkScale, grows
from lostmid.behaviour.link.run import EXAMPLES, read_examples


def _design(per_depth: int) -> dict:
    return LinkScale("t", ("m",), 100, per_depth, 1).design("m", 0)


def test_a_run_grows_with_more_examples_and_nothing_else() -> None:
    small, large = _design(2), _design(5)
    assert grows(small, large) and not grows(large, small)
    assert not grows(small, large | {"length": 200})


def test_a_torn_last_record_is_dropped_and_recomputed(tmp_path: Path) -> None:
    path = tmp_path / EXAMPLES
    path.write_text('{"model": "pretrained", "depth": 0, "index": 0}\n{"model": "pre')
    assert read_examples(path) == [{"model": "pretrained", "depth": 0, "index": 0}]
    assert path.read_text().endswith("}\n") and len(path.read_text().splitlines()) == 1


def test_the_needle_span_covers_the_needle(bpe_model_dir: Path) -> None:
    from lostmid.behaviour.decoding.prompts import prompt_format
    from lostmid.behaviour.decoding.tokenizers import ByteTokenizer, tokenizer_for_model
    from lostmid.behaviour.tasks.needles import needles_example

    for tok in (tokenizer_for_model(str(bpe_model_dir)), ByteTokenizer()):
        ex = needles_example(
            seed=0,
            index=1,
            depth=50,
            length=600,
            variant="niah-multikey",
            distractors=1,
            count_tokens=lambda s, tok=tok: len(tok.encode(s)),
        )
        fmt = prompt_format("auto", tok, "on")
        ids, (start, end) = fmt.encode_span(ex, tok, *ex.spans[0])
        needle = ex.prompt[slice(*ex.spans[0])]
        assert ids == tok.encode(fmt.text(ex, tok), special=fmt.add_special_tokens)
        assert needle.strip() in tok.decode(ids[start:end])
        assert needle.strip() not in tok.decode(ids[start + 1 : end])  # no wider than it
