"""Ablation switches: one real ingredient of a model turned off, through its adapter.

Each function edits the model in place (a built model is cheap; build another to undo)
and returns a one-line description for result files. They take a
:class:`~lostmid.models.LoadedModel` or a bare causal LM (its adapter then comes from
:func:`~lostmid.models.adapters.adapter_for_model`), so the ablation ladder (uniform
attention and no MLP, + MLP, + attention logits, + positions; frozen norm gains; scaled
embeddings) works for every family the adapters serve.

>>> from lostmid.models import load_model
>>> m = load_model("tiny-gpt2")
>>> uniform_attention(m)
'uniform attention: W_Q = W_K = 0 in 2 layers (q.k = 0)'
>>> remove_mlp(m)
'no MLP: the MLP branch is 0 in 2 layers'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from lostmid.checks import check_positive
from lostmid.errors import UserError
from lostmid.models.adapters import FamilyAdapter, adapter_for_model
from lostmid.models.adapters.layout import replace_module
from lostmid.models.loaded import LoadedModel
from lostmid.typing import Int

if TYPE_CHECKING:
    from transformers import PreTrainedModel


def _model_and_adapter(
    model: LoadedModel | PreTrainedModel,
) -> tuple[PreTrainedModel, FamilyAdapter]:
    if isinstance(model, LoadedModel):
        return model.model, model.adapter
    return model, adapter_for_model(model)


def uniform_attention(model: LoadedModel | PreTrainedModel) -> str:
    """Zero W_Q and W_K (with their biases) in every layer, and remove ALiBi biases.

    Then q.k = 0 for every pair, so softmax attention is uniform over what the mask
    lets a position see: A[i, j] = 1/i (causal) or 1/min(i, W) (sliding window W),
    positions 1-indexed. Rotary embeddings rotate q = 0 to 0, so they no longer matter.
    """
    net, adapter = _model_and_adapter(model)
    blocks = adapter.blocks(net)
    with torch.no_grad():
        for block in blocks:
            for tensor in adapter.query_key(block):
                tensor.zero_()
    text = f"uniform attention: W_Q = W_K = 0 in {len(blocks)} layers (q.k = 0)"
    if adapter.has_alibi:
        adapter.remove_alibi(net)
        text += ", ALiBi removed"
    return text


def _zero_output(module: nn.Module, args: tuple, output: Any) -> Any:
    if isinstance(output, tuple):
        return (torch.zeros_like(output[0]), *output[1:])
    return torch.zeros_like(output)


def remove_mlp(model: LoadedModel | PreTrainedModel) -> str:
    """Make the MLP branch 0 in every layer: block output = x + a (serial or parallel).

    A forward hook on the adapter's ``mlp_out`` replaces the branch by zeros.
    """
    net, adapter = _model_and_adapter(model)
    blocks = adapter.blocks(net)
    for block in blocks:
        out = adapter.mlp_out(block)
        if not getattr(out, "_lostmid_zeroed", False):
            out.register_forward_hook(_zero_output)
            # torch types Module.__setattr__ for tensors and modules only
            out._lostmid_zeroed = True  # type: ignore[assignment]
    return f"no MLP: the MLP branch is 0 in {len(blocks)} layers"


@dataclass(frozen=True)
class NormForm:
    """A norm y = g * (x - mean(x) if centered else x) / sqrt(mean(.^2) + eps) + b.

    ``one_plus`` means g = 1 + weight (Gemma) instead of g = weight; no weight means g = 1.
    """

    centered: bool
    eps: float
    one_plus: bool


def _gain(norm: nn.Module, form: NormForm, dtype: torch.dtype) -> torch.Tensor | None:
    weight = getattr(norm, "weight", None)
    if weight is None:
        return None
    return (1.0 + weight.to(dtype)) if form.one_plus else weight.to(dtype)


def _bias(norm: nn.Module, dtype: torch.dtype) -> torch.Tensor | None:
    bias = getattr(norm, "bias", None)
    return None if bias is None else bias.to(dtype)


def _apply(norm: nn.Module, form: NormForm, x: torch.Tensor, inv_sigma: Any) -> torch.Tensor:
    """The norm's formula with 1/sigma given (a tensor per row, or one number)."""
    wide = torch.promote_types(x.dtype, torch.float32)
    y = x.to(wide)
    if form.centered:
        y = y - y.mean(-1, keepdim=True)
    y = y * inv_sigma
    gain, bias = _gain(norm, form, wide), _bias(norm, wide)
    if gain is not None:
        y = y * gain
    if bias is not None:
        y = y + bias
    return y.to(x.dtype)


def _inv_sigma(form: NormForm, x: torch.Tensor) -> torch.Tensor:
    """1/sigma per row of x (..., d): sigma = sqrt(mean((x - centre)^2) + eps)."""
    y = x.to(torch.promote_types(x.dtype, torch.float32))
    if form.centered:
        y = y - y.mean(-1, keepdim=True)
    return torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + form.eps)


def norm_form(norm: nn.Module) -> NormForm:
    """Which of the known norm formulas ``norm`` computes, checked on a probe input.

    LayerNorm (centred) and RMSNorm (not), with gain w or 1 + w: the candidate that
    reproduces the module's own output on a random probe is returned; none is an error.
    """
    eps = getattr(norm, "eps", None)
    eps = getattr(norm, "variance_epsilon", None) if eps is None else eps
    weight = getattr(norm, "weight", None)
    shape = getattr(norm, "normalized_shape", None)
    width = int(shape[-1]) if shape else (None if weight is None else int(weight.shape[-1]))
    if eps is None or width is None:
        raise UserError(f"cannot freeze {type(norm).__name__}: no eps or width to read")
    param = next(norm.parameters(), None)
    dtype = torch.float32 if param is None else param.dtype
    device = "cpu" if param is None else param.device
    gen = torch.Generator().manual_seed(0)
    probe = (torch.randn(4, width, generator=gen) + 1.0).to(dtype=dtype, device=device)
    with torch.no_grad():
        wanted = norm(probe).float()
        for centered in (True, False):
            for one_plus in (False, True) if weight is not None else (False,):
                form = NormForm(centered=centered, eps=float(eps), one_plus=one_plus)
                got = _apply(norm, form, probe, _inv_sigma(form, probe)).float()
                if (got - wanted).norm() <= 1e-2 * wanted.norm() + 1e-6:
                    return form
    raise UserError(
        f"cannot freeze {type(norm).__name__}: it is neither a LayerNorm nor an RMSNorm "
        "(gain w or 1 + w)"
    )


class FrozenScaleNorm(nn.Module):
    """A norm whose 1/sigma is one number c: y = g * (x - mean(x) or x) * c + b.

    Linear in x (affine with the bias b). It shares the original norm's ``weight`` and
    ``bias`` parameters.
    """

    def __init__(self, norm: nn.Module, form: NormForm, inv_sigma: float) -> None:
        super().__init__()
        self.register_parameter("weight", getattr(norm, "weight", None))
        self.register_parameter("bias", getattr(norm, "bias", None))
        self.form = form
        self.inv_sigma = inv_sigma

    def extra_repr(self) -> str:
        return f"centered={self.form.centered}, inv_sigma={self.inv_sigma:.6g}"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _apply(self, self.form, x, self.inv_sigma)


def freeze_norm_scale(
    model: LoadedModel | PreTrainedModel, input_ids: Int[torch.Tensor, "B L"]
) -> str:
    """Replace every norm's per-position 1/sigma_j by its mean over positions.

    One forward pass of ``input_ids`` (B, L) records, for each norm, 1/sigma_j at every
    position j of every sample (sigma_j = sqrt(mean_k (x_jk - centre)^2 + eps)); the
    norm then computes g * (x - centre) * c + b with c = mean over samples and
    positions of 1/sigma_j: linear in its input. All norms are measured on the original
    model in the same pass.
    """
    net, adapter = _model_and_adapter(model)
    norms = [n for n in adapter.norms(net) if not isinstance(n, FrozenScaleNorm)]
    forms = {id(n): norm_form(n) for n in norms}
    sums: dict[int, list[float]] = {id(n): [0.0, 0.0] for n in norms}

    def record(module: nn.Module, args: tuple) -> None:
        inv = _inv_sigma(forms[id(module)], args[0].detach()).double()  # (..., 1)
        sums[id(module)][0] += float(inv.sum())
        sums[id(module)][1] += inv.numel()

    handles = [n.register_forward_pre_hook(record) for n in norms]
    try:
        embed = adapter.token_embedding(net)
        ids = input_ids.to(embed.get_parameter("weight").device)
        with torch.no_grad():
            adapter.base(net)(inputs_embeds=embed(ids), use_cache=False)
    finally:
        for handle in handles:
            handle.remove()
    unused = [type(n).__name__ for n in norms if sums[id(n)][1] == 0]
    if unused:
        raise UserError(f"freeze_norm_scale: {len(unused)} norm(s) not reached by the forward pass")
    for n in norms:
        total, count = sums[id(n)]
        replace_module(net, n, FrozenScaleNorm(n, forms[id(n)], total / count))
    return (
        f"frozen norm gains: {len(norms)} norms use their mean 1/sigma over "
        f"{input_ids.shape[0]} x {input_ids.shape[1]} positions"
    )


def scale_embeddings(model: LoadedModel | PreTrainedModel, factor: float) -> str:
    """Multiply the token embedding table by ``factor`` (x_j -> factor x_j).

    Large factors make the stream norm at every layer dominated by the embedding, so it
    no longer depends on position. A tied LM head is untied first and keeps its weights.
    """
    check_positive("embedding scale factor", factor, integer=False)
    net, adapter = _model_and_adapter(model)
    table = adapter.token_embedding(net).get_parameter("weight")
    head = net.get_output_embeddings() if hasattr(net, "get_output_embeddings") else None
    if head is not None and head.weight is table:
        head.weight = nn.Parameter(table.detach().clone(), requires_grad=table.requires_grad)
        net.config.tie_word_embeddings = False
    with torch.no_grad():
        table.mul_(factor)
    return f"token embeddings scaled x{factor:g}"


def remove_positions(model: LoadedModel | PreTrainedModel) -> str:
    """Remove whatever positional encoding the family has (rotary, learned table, ALiBi)."""
    net, adapter = _model_and_adapter(model)
    removed = []
    if adapter.has_rope:
        adapter.remove_rope(net)
        removed.append("rotary")
    if adapter.has_position_embedding:
        adapter.remove_position_embedding(net)
        removed.append("learned positions")
    if adapter.has_alibi:
        adapter.remove_alibi(net)
        removed.append("ALiBi")
    if not removed:
        return "no positional encoding to remove"
    return "positions removed: " + ", ".join(removed)


def global_attention_overrides(config: Any) -> dict[str, Any] | None:
    """Config overrides that make every layer of a sliding-window model attend globally
    (``layer_types`` all ``full_attention``: Gemma 2/3, Mistral-style configs that list
    their layers), for a twin without the windows; None for a model with no sliding
    layer (nothing to remove).

    >>> from types import SimpleNamespace as Config
    >>> global_attention_overrides(Config(layer_types=["sliding_attention", "full_attention"]))
    {'layer_types': ['full_attention', 'full_attention']}
    >>> global_attention_overrides(Config(layer_types=["full_attention"])) is None
    True
    """
    text = getattr(config, "text_config", None) or config
    kinds = getattr(text, "layer_types", None)
    if not isinstance(kinds, list) or all(k == "full_attention" for k in kinds):
        return None
    return {"layer_types": ["full_attention"] * len(kinds)}
