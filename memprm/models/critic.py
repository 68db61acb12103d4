"""The memory-utility critic PRM_M (paper §3.4): a LoRA-adapted backbone with two heads, trained offline.

- :class:`CriticNet`: backbone (:mod:`memprm.models.backbone`) → pooled vector h → the logits of the utility
  score φ(x) and of p(x), the probability that the written entry is retrieved.
- :class:`CriticModule`: the LightningModule that trains it with Eq. (5), offline and, with an
  :class:`AnchorSet` term, in the online refresh (:mod:`memprm.models.critic_retrain`).
- :class:`FrozenCritic`: eval-mode, no-grad, batched scoring of rendered texts, for the online stage.
- :func:`save_critic` / :func:`load_critic`: the adapter, the heads, the tokenizer and the config (a few MB).
  Lightning's own checkpoints hold the full state dict (frozen base included); use ``save_critic`` for exports.
"""

from __future__ import annotations

import copy
import json
import math
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from lightning.pytorch import LightningModule
from peft import PeftModel
from safetensors.torch import load_file, save_file
from torch import nn
from torchmetrics.aggregation import CatMetric
from transformers import AutoTokenizer, PretrainedConfig, PreTrainedModel, PreTrainedTokenizerBase

from memprm.configtools import build, to_dict
from memprm.eval.metrics import binary_auc, spearman
from memprm.models.backbone import (
    Backbone,
    build_backbone,
    encode_texts,
    load_base,
    pad_right,
)
from memprm.models.critic_config import CriticConfig
from memprm.models.critic_data import CriticBatch
from memprm.models.critic_losses import LossTerms, critic_loss

FORMAT = "memprm-critic/1"
_CHECKSUM_RTOL = 1e-6


class CriticNet(nn.Module):
    """Backbone + the φ and p heads. ``forward`` returns the two logits, each [B].

    ``φ(x) = sigmoid(w_φ·h + b_φ)`` is the utility score and ``p(x) = sigmoid(w_p·h + b_p)`` the probability
    that the written entry is retrieved; logits are kept so the BCE term is computed from them.
    """

    def __init__(self, backbone: Backbone):
        super().__init__()
        self.backbone = backbone
        self.phi_head = nn.Linear(backbone.hidden_size, 1)
        self.p_head = nn.Linear(backbone.hidden_size, 1)

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """input_ids, attention_mask: [B, L] → (phi_logit [B], p_logit [B])."""
        h = self.backbone(input_ids, attention_mask)  # [B, H] float32
        return self.phi_head(h).squeeze(-1), self.p_head(h).squeeze(-1)

    def heads_state_dict(self) -> dict[str, torch.Tensor]:
        return {
            **{f"phi_head.{k}": v for k, v in self.phi_head.state_dict().items()},
            **{f"p_head.{k}": v for k, v in self.p_head.state_dict().items()},
        }

    def load_heads(self, state: dict[str, torch.Tensor]) -> None:
        expected = set(self.heads_state_dict())
        if set(state) != expected:
            raise ValueError(f"critic heads: expected keys {sorted(expected)}, got {sorted(state)}")
        self.phi_head.load_state_dict(
            {k.removeprefix("phi_head."): v for k, v in state.items() if k.startswith("phi_head.")}
        )
        self.p_head.load_state_dict(
            {k.removeprefix("p_head."): v for k, v in state.items() if k.startswith("p_head.")}
        )

    def trainable_names(self) -> list[str]:
        """The parameters that train, offline and in a refresh: the LoRA weights (``lora_`` in the name) and the
        two heads; the base weights stay frozen."""
        heads = ("phi_head.", "p_head.")
        names = [n for n, _ in self.named_parameters() if "lora_" in n or n.startswith(heads)]
        if not any("lora_" in n for n in names):
            raise ValueError("CriticNet: the net has no LoRA parameters (not built by build_backbone?)")
        return names

    def base_checksum(self) -> float:
        """Float64 sum of every frozen base-model weight (LoRA excluded): identifies the base a critic was built on."""
        total = 0.0
        for name, p in self.backbone.model.named_parameters():
            if "lora_" not in name:
                total += float(p.detach().double().sum())
        return total


@dataclass(frozen=True, eq=False)
class AnchorSet:
    """Texts whose φ a training run holds near fixed targets: the term ``weight · MSE(sigmoid(φ_logit), phi)``.

    Optimizer step k uses the ``per_step`` anchors at positions ``k·per_step + j`` (mod A, j < per_step) of
    ``order``, a permutation of ``range(A)``: the anchors are taken in that order, cycling.
    """

    #: A token-id tensors ``[L_i]`` int64, encoded as the critic encodes the texts it scores.
    input_ids: tuple[torch.Tensor, ...]
    #: ``[A]`` float32 target φ in [0, 1].
    phi: torch.Tensor
    #: the term's weight λ_anchor (> 0).
    weight: float
    #: anchors per optimizer step, 1 ≤ per_step ≤ A.
    per_step: int
    #: a permutation of ``range(A)``: the order the anchors are taken in.
    order: tuple[int, ...]

    def __post_init__(self) -> None:
        a = len(self.input_ids)
        if a == 0 or tuple(self.phi.shape) != (a,) or sorted(self.order) != list(range(a)):
            raise ValueError(
                f"AnchorSet: {a} texts, phi of shape {tuple(self.phi.shape)} and an order of {len(self.order)} "
                "positions: expected A > 0 texts, phi of shape (A,) and a permutation of range(A)"
            )
        if not (1 <= self.per_step <= a and self.weight > 0):
            raise ValueError(
                f"AnchorSet: need 1 <= per_step <= {a} and weight > 0, got {self.per_step}, {self.weight}"
            )

    def take(self, step: int) -> list[int]:
        """The anchors (indices into ``input_ids``) optimizer step ``step`` uses."""
        a = len(self.order)
        return [self.order[(step * self.per_step + j) % a] for j in range(self.per_step)]


class CriticModule(LightningModule):
    """Trains :class:`CriticNet` with Eq. (5) on :class:`memprm.models.critic_data.CriticBatch` batches.

    The net is built from ``cfg.backbone`` (``model`` / ``tokenizer`` as in :func:`build_backbone`), or is the
    given ``net`` (a copy of a trained critic's: its :meth:`CriticNet.trainable_names` train, the rest is
    frozen). Loss = Eq. (5) (:func:`memprm.models.critic_losses.critic_loss`), logged as ``{train,val}/loss``,
    ``/mse``, ``/bce``, ``/rank``. With an ``anchor`` set each training step adds ``anchor.weight`` times
    :meth:`anchor_loss`, logged as ``train/anchor``. Validation also logs ``val/spearman`` (Spearman of φ
    against u) and ``val/auroc`` (binary AUC of p against u^RR) over the whole validation epoch, with the
    project's one implementation (:mod:`memprm.eval.metrics`) on the epoch's scores, gathered over ranks by
    torchmetrics' ``CatMetric``. Degenerate epochs are logged as NaN on purpose, never as a made-up number:
    Spearman when φ or u is constant (or fewer than two examples), AUC when u^RR holds one class only. AdamW over the
    trainable parameters only (LoRA + heads), one learning rate ``cfg.lr``, weight decay ``cfg.weight_decay``.
    """

    def __init__(
        self,
        cfg: CriticConfig,
        model: PreTrainedModel | PretrainedConfig | None = None,
        tokenizer: PreTrainedTokenizerBase | None = None,
        *,
        net: CriticNet | None = None,
        anchor: AnchorSet | None = None,
    ):
        super().__init__()
        self.cfg = cfg
        self.anchor = anchor
        if net is None:
            net = CriticNet(build_backbone(cfg.backbone, model, tokenizer))
        elif model is not None or tokenizer is not None:
            raise ValueError("CriticModule: give a net or the model / tokenizer to build one, not both")
        else:
            trainable = set(net.trainable_names())
            for name, p in net.named_parameters():
                p.requires_grad_(name in trainable)
        self.net = net
        # from_pretrained returns eval-mode models and Lightning keeps the modes it finds: start in train mode
        # so dropout (LoRA's and the backbone's own) is active during fit, as in ordinary fine-tuning.
        self.net.train()
        # the validation epoch's scores and targets, each [N] once gathered (over DDP ranks too)
        self.val_phi, self.val_u, self.val_p, self.val_rr = CatMetric(), CatMetric(), CatMetric(), CatMetric()

    @property
    def tokenizer(self) -> PreTrainedTokenizerBase:
        return self.net.backbone.tokenizer

    def forward(self, batch: CriticBatch) -> tuple[torch.Tensor, torch.Tensor]:
        return self.net(batch.input_ids, batch.attention_mask)

    def losses(self, batch: CriticBatch) -> tuple[LossTerms, torch.Tensor, torch.Tensor]:
        """(loss terms, phi_logit [B], p_logit [B]) for one batch."""
        phi_logit, p_logit = self(batch)
        c = self.cfg
        terms = critic_loss(
            phi_logit, p_logit, batch.u, batch.u_rr, c.lambda_aux, c.lambda_rank, c.margin, c.delta
        )
        return terms, phi_logit, p_logit

    def anchor_loss(self, step: int) -> torch.Tensor:
        """``MSE(sigmoid(φ_logit), anchor.phi)`` (a scalar) over the anchors of optimizer step ``step``."""
        if self.anchor is None:
            raise ValueError("CriticModule.anchor_loss: the module has no anchor set")
        take = self.anchor.take(step)
        pad = self.tokenizer.pad_token_id
        ids, mask = pad_right([self.anchor.input_ids[i] for i in take], pad)  # [A_b, L]
        phi_logit, _ = self.net(ids.to(self.device), mask.to(self.device))  # [A_b]
        return F.mse_loss(torch.sigmoid(phi_logit), self.anchor.phi[take].to(self.device))

    def training_step(self, batch: CriticBatch, batch_idx: int) -> torch.Tensor:
        terms, _, _ = self.losses(batch)
        self._log_terms("train", terms, batch)
        if self.anchor is None:
            return terms.total
        anchored = self.anchor_loss(self.global_step)
        self.log("train/anchor", anchored, batch_size=self.anchor.per_step, on_step=True, on_epoch=False)
        return terms.total + self.anchor.weight * anchored

    def validation_step(self, batch: CriticBatch, batch_idx: int) -> None:
        terms, phi_logit, p_logit = self.losses(batch)
        self._log_terms("val", terms, batch)
        self.val_phi.update(torch.sigmoid(phi_logit).double())
        self.val_u.update(batch.u.double())
        self.val_p.update(torch.sigmoid(p_logit).double())
        self.val_rr.update(batch.u_rr.double())

    def on_validation_epoch_end(self) -> None:
        metrics = (self.val_phi, self.val_u, self.val_p, self.val_rr)
        with warnings.catch_warnings():  # a rank without validation batches still joins the gather
            warnings.filterwarnings("ignore", message=".*was called before the ``update`` method")
            phi, u, p, rr = (
                torch.as_tensor(m.compute(), dtype=torch.float64).cpu().reshape(-1).numpy() for m in metrics
            )
        for metric in metrics:
            metric.reset()
        if u.size == 0:  # no validation batch this epoch
            return
        self.log("val/spearman", spearman(phi, u).value)
        self.log("val/auroc", binary_auc(p[rr > 0.5], p[rr <= 0.5]).value)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        params = [p for p in self.parameters() if p.requires_grad]
        return torch.optim.AdamW(params, lr=self.cfg.lr, weight_decay=self.cfg.weight_decay)

    def to_frozen(self) -> FrozenCritic:
        """An independent frozen copy (deep copy of the net): further training does not change it."""
        return FrozenCritic(self.cfg, copy.deepcopy(self.net))

    def _log_terms(self, stage: str, terms: LossTerms, batch: CriticBatch) -> None:
        # Train: per step; val: epoch mean weighted by batch size. One of the two only, so the logged names stay
        # exactly ``train/loss``, ``val/loss`` (Lightning adds ``_step`` / ``_epoch`` suffixes when both are on).
        n = int(batch.u.numel())
        per_step = stage == "train"
        for name in ("loss", "mse", "bce", "rank"):
            value = terms.total if name == "loss" else getattr(terms, name)
            self.log(
                f"{stage}/{name}",
                value,
                batch_size=n,
                on_step=per_step,
                on_epoch=not per_step,
                prog_bar=name == "loss",
            )


class FrozenCritic:
    """Eval-mode scoring of rendered operations: ``score(texts) -> (phi [N], p [N])`` as float32 arrays in [0, 1].

    Takes ownership of ``net``: puts it in eval mode and turns off its gradients; its weights never change
    afterwards (a refresh or a rollback builds a new ``FrozenCritic``). Texts are encoded exactly as in training
    (same truncation, right padding), ``cfg.score_batch_size`` at a time. With ``cfg.score_cache`` each distinct
    text is scored once and kept (``cache_size`` texts at most; emptied when full) and texts are batched by
    length, which cuts padding; otherwise in input order. ``n_truncated`` counts scored texts cut to
    ``max_length``, ``encoded_tokens`` the (padded) tokens run through the network.
    """

    cache_size = 200_000

    def __init__(self, cfg: CriticConfig, net: CriticNet):
        self.cfg = cfg
        self.net = net.eval()
        for p in self.net.parameters():
            p.requires_grad_(False)
        self.n_truncated = 0
        self.encoded_tokens = 0
        self._cache: dict[str, tuple[float, float]] = {}

    @property
    def tokenizer(self) -> PreTrainedTokenizerBase:
        return self.net.backbone.tokenizer

    @property
    def device(self) -> torch.device:
        return next(self.net.parameters()).device

    def to(self, device: str | torch.device) -> FrozenCritic:
        self.net.to(device)
        return self

    @torch.no_grad()
    def score(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        if not self.cfg.score_cache:
            phi, p = self._forward(list(texts))
            return phi, p
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if len(self._cache) + len(missing) > self.cache_size:
            self._cache.clear()
            missing = list(dict.fromkeys(texts))
        if missing:
            phi, p = self._forward(missing, by_length=True)
            self._cache.update(zip(missing, zip(phi.tolist(), p.tolist(), strict=True), strict=True))
        rows = np.asarray([self._cache[t] for t in texts], dtype=np.float32).reshape(len(texts), 2)
        return rows[:, 0].copy(), rows[:, 1].copy()

    def _forward(self, texts: list[str], by_length: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """φ and p of ``texts`` [N] in input order; ``by_length`` batches texts of similar token length."""
        enc = encode_texts(self.tokenizer, texts, self.cfg.max_length, self.cfg.truncation_side)
        self.n_truncated += enc.n_truncated
        order = sorted(range(len(texts)), key=lambda i: len(enc.ids[i])) if by_length else range(len(texts))
        order = list(order)
        phi = np.zeros(len(texts), dtype=np.float32)
        p = np.zeros(len(texts), dtype=np.float32)
        step = self.cfg.score_batch_size
        for start in range(0, len(order), step):
            rows = order[start : start + step]
            input_ids, mask = pad_right([enc.ids[i] for i in rows], self.tokenizer.pad_token_id)
            self.encoded_tokens += int(input_ids.numel())
            phi_logit, p_logit = self.net(input_ids.to(self.device), mask.to(self.device))
            phi[rows] = torch.sigmoid(phi_logit).float().cpu().numpy()
            p[rows] = torch.sigmoid(p_logit).float().cpu().numpy()
        return phi, p


def save_critic(critic: CriticModule | FrozenCritic, directory: str | Path) -> Path:
    """Write ``adapter/`` (peft), ``heads.safetensors``, ``tokenizer/`` and ``critic.json`` into ``directory``."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    net = critic.net
    net.backbone.model.save_pretrained(str(out / "adapter"))
    save_file(
        {k: v.detach().cpu().contiguous() for k, v in net.heads_state_dict().items()},
        str(out / "heads.safetensors"),
    )
    net.backbone.tokenizer.save_pretrained(str(out / "tokenizer"))
    meta = {
        "format": FORMAT,
        "config": to_dict(critic.cfg),
        "hidden_size": net.backbone.hidden_size,
        "base_checksum": net.base_checksum(),
    }
    (out / "critic.json").write_text(json.dumps(meta, indent=2) + "\n")
    return out


def load_critic(
    directory: str | Path,
    base_model: PreTrainedModel | None = None,
    tokenizer: PreTrainedTokenizerBase | None = None,
) -> FrozenCritic:
    """Rebuild a saved critic as a :class:`FrozenCritic` on the CPU (move it with ``.to``).

    A checksum of the base weights is stored at saving, so loading onto a different base model is an error
    rather than silently wrong scores.

    The base model is loaded from the saved ``backbone.model`` unless ``base_model`` is given (a fresh model,
    without LoRA layers, with the same weights as at training time); the tokenizer is the saved one unless
    ``tokenizer`` is given.
    """
    src = Path(directory)
    meta_path = src / "critic.json"
    if not meta_path.is_file():
        raise FileNotFoundError(f"{meta_path}: not a saved critic (critic.json is missing)")
    meta = json.loads(meta_path.read_text())
    for key in ("format", "config", "hidden_size", "base_checksum"):
        if key not in meta:
            raise ValueError(f"{meta_path}: field {key!r} is missing")
    if meta["format"] != FORMAT:
        raise ValueError(f"{meta_path}: field 'format' is {meta['format']!r}, expected {FORMAT!r}")
    cfg = build(CriticConfig, meta["config"], where=str(meta_path))
    if base_model is not None and not isinstance(base_model, PreTrainedModel):
        raise TypeError(
            f"load_critic: base_model must be a PreTrainedModel with trained weights, got {type(base_model)}"
        )
    tok = tokenizer if tokenizer is not None else AutoTokenizer.from_pretrained(str(src / "tokenizer"))
    base, tok = load_base(cfg.backbone, base_model, tok)
    peft_model = PeftModel.from_pretrained(base, str(src / "adapter"), is_trainable=False)
    net = CriticNet(Backbone(peft_model, tok, cfg.backbone.resolved_pooling))
    if net.backbone.hidden_size != meta["hidden_size"]:
        raise ValueError(
            f"{meta_path}: field 'hidden_size' is {meta['hidden_size']} but the base model has {net.backbone.hidden_size}"
        )
    checksum = net.base_checksum()
    saved = float(meta["base_checksum"])
    if not math.isclose(checksum, saved, rel_tol=_CHECKSUM_RTOL, abs_tol=_CHECKSUM_RTOL):
        raise ValueError(
            f"{meta_path}: field 'base_checksum' is {saved!r} but the base model's weights sum to {checksum!r}: "
            "this is not the base model the critic was trained on"
        )
    net.load_heads(load_file(str(src / "heads.safetensors")))
    return FrozenCritic(cfg, net)
