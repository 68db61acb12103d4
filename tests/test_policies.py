"""Memory-manager policies: the scoring policy (encoder over candidates) and the causal-LM policy, and SFT.

Tiny models with random weights throughout (a 2-layer BERT on MiniLM's tokenizer, a 2-layer Qwen3 on
tokenizers built here); one test loads the real offline MiniLM.
"""

from __future__ import annotations

import math
import string

import pytest
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import AutoTokenizer, BertConfig, PreTrainedTokenizerFast, Qwen3Config

from memprm.config import ConfigError, build
from memprm.credit.tiers import Neighbour
from memprm.data.records import Turn
from memprm.env.gates import Action, Observation
from memprm.env.ops_format import format_operation, gate_prompt
from memprm.env.policy import GateSample
from memprm.memory.embedder import resolve_model_path
from memprm.models.causal_policy import CausalPolicy
from memprm.models.policies import build_policy
from memprm.models.policy_config import LoraSettings, PolicyConfig
from memprm.models.scoring_policy import ScoringPolicy, gate_candidates
from memprm.models.sft import SFTBatches, balance_weights, sft_loss
from memprm.stages.sft_stage import train_sft

pytestmark = pytest.mark.usefixtures("one_thread")

ACTIONS = (
    Action.noop(),
    Action("write", "Alice adopted a puppy named Rex", "pet"),
    Action("merge", "Alice has a cat and now a puppy", entry_id="e1"),
)


def _obs(
    n_neighbours: int = 2, layer: str = "event", text: str = "I adopted a puppy named Rex last week"
) -> Observation:
    neighbours = tuple(
        Neighbour(f"e{i + 1}", layer, f"(2023-05-0{i + 1}) fact number {i + 1} about Alice")
        for i in range(n_neighbours)
    )
    return Observation(
        "d1", 2, Turn("D2:3", "Alice", text, 2), "2023-05-08T10:00:00", layer,
        ("Bob: hi there", "Alice: hello Bob"), neighbours,
    )  # fmt: skip


# ----------------------------------------------------------------------------------------------------
# tiny models and tokenizers


@pytest.fixture(scope="module")
def minilm_tokenizer():
    return AutoTokenizer.from_pretrained(resolve_model_path("minilm"))


def _scoring(tokenizer, seed: int = 0, **cfg) -> ScoringPolicy:
    """A 2-layer BERT on MiniLM's tokenizer, with a random (seeded) head so candidates differ. The pair scorer
    (the reference path; tests here build samples from prompt and candidate texts alone): the two-tower
    default is tested in test_two_tower.py."""
    cfg.setdefault("lora", LoraSettings(rank=8))  # LoRA on: these tests train the encoder too
    cfg.setdefault("scorer", "pair")
    bert = BertConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=2, max_position_embeddings=512,
    )  # fmt: skip
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        policy = build_policy(PolicyConfig(**cfg), model=bert, tokenizer=tokenizer)
        torch.nn.init.normal_(policy.head.weight, std=2.0)
    return policy


@pytest.fixture(scope="module")
def char_tokenizer() -> PreTrainedTokenizerFast:
    """One token per character, no merges: every token sequence is its text's own encoding."""
    vocab = {"<unk>": 0, "<pad>": 1, "<eos>": 2}
    for ch in string.printable[:95] + "\n":
        vocab.setdefault(ch, len(vocab))
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    tok.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>", eos_token="<eos>"
    )


@pytest.fixture(scope="module")
def bpe_tokenizer() -> PreTrainedTokenizerFast:
    """Byte-level BPE trained here, with merges across whole operations (so random token runs are often
    non-canonical, and each teacher operation below is a single token)."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=500,
        special_tokens=["<pad>", "<eos>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator([format_operation(a) for a in ACTIONS] * 50 + [gate_prompt(_obs())] * 3, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>")


def _causal(tokenizer, seed: int = 0, **cfg) -> CausalPolicy:
    qwen = Qwen3Config(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=1, head_dim=16,
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
    )  # fmt: skip
    cfg = {"kind": "causal", "model": "tiny-qwen3", "max_new_tokens": 12, "max_length": 2048, **cfg}
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return build_policy(PolicyConfig(**cfg), model=qwen, tokenizer=tokenizer)


def _all_choice_logps(policy: ScoringPolicy, sample: GateSample) -> torch.Tensor:
    """log p of every candidate of ``sample`` (one sample per choice, batched)."""
    probes = [GateSample(sample.prompt, sample.candidates, j) for j in range(len(sample.candidates))]
    with torch.no_grad():
        return policy.log_probs(probes)[0]


def _snapshot(policy: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in policy.named_parameters()}


def _changed(before: dict[str, torch.Tensor], policy: torch.nn.Module) -> set[str]:
    return {name for name, p in policy.named_parameters() if not torch.equal(before[name], p.detach())}


# ----------------------------------------------------------------------------------------------------
# config


def test_policy_config_builds_from_a_nested_mapping_and_validates():
    cfg = build(
        PolicyConfig,
        {"kind": "causal", "model": "Qwen/Qwen3-8B", "lora": {"rank": 0, "target_modules": ["q_proj"]}},
    )
    assert cfg.lora == LoraSettings(rank=0, target_modules=("q_proj",)) and cfg.target_modules == ("q_proj",)
    assert PolicyConfig().target_modules == ("query", "value")
    assert PolicyConfig(kind="causal", model="x").target_modules == ("q_proj", "v_proj")
    with pytest.raises(ConfigError, match="temperature"):
        build(PolicyConfig, {"temperature": 0})
    with pytest.raises(ConfigError, match="kind"):
        build(PolicyConfig, {"kind": "mlp"})
    with pytest.raises(ValueError, match="causal LM"):
        PolicyConfig(kind="causal")
    with pytest.raises(ValueError, match="rank"):
        LoraSettings(rank=-2)
    assert PolicyConfig().lora_rank == 0 and PolicyConfig(kind="causal", model="x").lora_rank == 16
    assert PolicyConfig(lora=LoraSettings(rank=8)).lora_rank == 8
    with pytest.raises(ValueError, match="merge_candidates"):
        PolicyConfig(merge_candidates=-1)


# ----------------------------------------------------------------------------------------------------
# scoring policy


@pytest.mark.parametrize(("shown", "expected"), [(0, 2), (1, 3), (5, 5)])
def test_candidates_are_noop_write_then_the_first_m_merges(shown, expected):
    obs = _obs(shown)
    cands = gate_candidates(obs, merge_candidates=3)
    assert len(cands) == expected
    assert cands[0].action == Action.noop()
    assert cands[1].action == Action("write", "Alice: I adopted a puppy named Rex last week", "")
    merges = [c.action for c in cands[2:]]
    assert [a.entry_id for a in merges] == [f"e{i + 1}" for i in range(min(shown, 3))]
    assert all(a.kind == "merge" and a.content == obs.turn.render for a in merges)
    assert len({c.text for c in cands}) == expected  # every candidate reads differently
    assert all(n.text in c.text for n, c in zip(obs.neighbours, cands[2:], strict=False))
    assert len(gate_candidates(obs, merge_candidates=0)) == 2


def test_scoring_recomputed_log_probs_equal_the_sampled_ones(minilm_tokenizer):
    policy = _scoring(minilm_tokenizer, temperature=0.7)
    policy.train()  # act must switch dropout off by itself and restore the mode
    gen = torch.Generator().manual_seed(0)
    samples = [policy.act(_obs(k), generator=gen)[1] for k in (0, 1, 5, 2, 5)]
    assert policy.training
    assert [len(s.candidates) for s in samples] == [2, 3, 5, 4, 5]
    policy.eval()
    logp, entropy = policy.log_probs(samples)
    torch.testing.assert_close(logp, torch.tensor([s.logprob for s in samples]), atol=1e-5, rtol=0)
    for s, h in zip(samples, entropy, strict=True):
        dist = _all_choice_logps(policy, s)
        assert float(dist.exp().sum()) == pytest.approx(1.0, abs=1e-5)
        assert float(h.detach()) == pytest.approx(float(-(dist.exp() * dist).sum()), abs=1e-5)
    (logp.sum() + entropy.sum()).backward()  # padded batch: -inf cells must not poison gradients
    grads = [p.grad for p in policy.parameters() if p.requires_grad]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)
    assert policy.head.weight.grad.abs().sum() > 0


def test_scoring_temperature_scales_the_logits(minilm_tokenizer):
    hot, cold = _scoring(minilm_tokenizer, temperature=2.0), _scoring(minilm_tokenizer, temperature=0.5)
    hot.eval(), cold.eval()
    sample = hot.act(_obs(3), greedy=True)[1]
    lp_hot, lp_cold = _all_choice_logps(hot, sample), _all_choice_logps(cold, sample)
    # same weights: logits/2 vs logits/0.5, i.e. cold = log_softmax(4 · hot logits)
    torch.testing.assert_close(lp_cold, torch.log_softmax(4 * lp_hot, dim=0), atol=1e-4, rtol=0)


def test_scoring_greedy_takes_the_argmax(minilm_tokenizer):
    policy = _scoring(minilm_tokenizer, seed=3)
    for k in (0, 1, 5):
        action, sample = policy.act(_obs(k), greedy=True)
        dist = _all_choice_logps(policy.eval(), sample)
        assert sample.choice == int(dist.argmax())
        assert sample.logprob == pytest.approx(float(dist.max()), abs=1e-5)
        assert action == gate_candidates(_obs(k), 3)[sample.choice].action


def test_untrained_head_is_uniform_and_greedy_ties_go_to_noop(minilm_tokenizer):
    bert = BertConfig(vocab_size=minilm_tokenizer.vocab_size, hidden_size=32, intermediate_size=64,
                      num_hidden_layers=2, num_attention_heads=2)  # fmt: skip
    policy = build_policy(PolicyConfig(), model=bert, tokenizer=minilm_tokenizer)
    action, sample = policy.act(_obs(3), greedy=True)
    assert action == Action.noop() and sample.logprob == pytest.approx(math.log(1 / 5), abs=1e-6)


def test_scoring_sampling_is_seeded_and_follows_the_distribution(minilm_tokenizer):
    policy = _scoring(minilm_tokenizer, seed=1, temperature=4.0)  # a flat-ish distribution over 5 candidates
    obs = _obs(5)

    def draws(seed: int, n: int) -> list[int]:
        gen = torch.Generator().manual_seed(seed)
        return [policy.act(obs, generator=gen)[1].choice for _ in range(n)]

    first = draws(7, 200)
    assert first[:40] == draws(7, 40)
    assert first[:40] != draws(8, 40)
    probs = _all_choice_logps(policy.eval(), policy.act(obs)[1]).exp()
    assert float(probs.max()) < 0.5  # not a near-deterministic case
    freq = torch.bincount(torch.tensor(first), minlength=5).float() / 200
    assert float((freq - probs).abs().max()) < 0.1


def test_scoring_sample_for_maps_teacher_actions_and_counts(minilm_tokenizer):
    policy = _scoring(minilm_tokenizer, merge_candidates=3)
    obs = _obs(5)
    turn = obs.turn.render
    assert policy.sample_for(obs, Action.noop()).choice == 0
    assert policy.sample_for(obs, Action("write", turn, "")).choice == 1
    assert policy.counts.write_content_replaced == 0
    assert policy.sample_for(obs, Action("write", "Alice got a puppy (Rex).", "pet")).choice == 1
    assert policy.counts.write_content_replaced == 1
    assert policy.sample_for(obs, Action("merge", "x", entry_id="e1")).choice == 2
    assert policy.sample_for(obs, Action("merge", "x", entry_id="e3")).choice == 4
    assert policy.counts.merge_beyond_m_as_write == 0
    assert policy.sample_for(obs, Action("merge", "x", entry_id="e4")).choice == 1  # beyond m → write
    assert policy.counts.merge_beyond_m_as_write == 1
    teacher = policy.sample_for(obs, Action.noop())
    acted = policy.act(obs)[1]
    assert (teacher.prompt, teacher.candidates) == (acted.prompt, acted.candidates)
    with pytest.raises(ValueError, match="D2:3.*invalid"):
        policy.sample_for(obs, Action("merge", "x", entry_id="e99"))
    with pytest.raises(ValueError, match="invalid"):
        policy.sample_for(obs, Action("write", "  ", ""))


def test_scoring_truncation_is_counted_and_recomputation_still_matches(minilm_tokenizer):
    policy = _scoring(minilm_tokenizer, max_length=24)
    sample = policy.act(_obs(2), generator=torch.Generator().manual_seed(0))[1]
    assert policy.counts.truncated == 4  # every (candidate, gate) pair is longer than 24 tokens
    long = _scoring(minilm_tokenizer, max_length=512)
    long.act(_obs(2))
    assert long.counts.truncated == 0
    logp, _ = policy.eval().log_probs([sample])
    assert float(logp[0]) == pytest.approx(sample.logprob, abs=1e-5)
    with pytest.raises(ValueError, match="max_position_embeddings"):
        _scoring(minilm_tokenizer, max_length=1024)


def test_scoring_log_probs_reject_foreign_samples(minilm_tokenizer):
    policy = _scoring(minilm_tokenizer)
    with pytest.raises(ValueError, match="sample 0"):
        policy.log_probs([GateSample(prompt="p", completion='{"op": "noop"}')])
    with pytest.raises(ValueError, match="no samples"):
        policy.log_probs([])


def test_scoring_sft_moves_probability_to_the_teacher_and_trains_only_lora_and_head(minilm_tokenizer):
    policy = _scoring(minilm_tokenizer, seed=2)
    gates = [
        (_obs(3), Action.noop()),
        (_obs(3, text="My new job at the bakery starts Monday"), Action("merge", "x", entry_id="e2")),
        (_obs(1, layer="profile"), Action("write", "Alice has a dog", "")),
    ]
    samples = [policy.sample_for(obs, a) for obs, a in gates]
    policy.eval()
    with torch.no_grad():
        before_logp = policy.log_probs(samples)[0]
    before = _snapshot(policy)
    losses = train_sft(policy, samples, steps=25, lr=1e-2, batch_size=3, seed=0, progress=False)
    with torch.no_grad():
        after_logp = policy.log_probs(samples)[0]
    assert len(losses) == 25 and losses[-1] < losses[0]
    assert bool((after_logp > before_logp).all())
    assert float(sft_loss(policy, samples)) == pytest.approx(float(-after_logp.mean()), abs=1e-5)
    changed = _changed(before, policy)
    assert changed and all("lora_" in n or n.startswith("head.") for n in changed)
    assert any("lora_" in n for n in changed) and {"head.weight", "head.bias"} <= changed


def test_scoring_rank_zero_trains_the_head_only(minilm_tokenizer):
    policy = _scoring(minilm_tokenizer, lora=LoraSettings(rank=0))
    assert {n for n, p in policy.named_parameters() if p.requires_grad} == {"head.weight", "head.bias"}


def test_train_sft_is_reproducible_and_validates(minilm_tokenizer):
    """Step 0's loss is the untrained policy's SFT loss on the first batch SFTBatches draws; the same seed
    gives the same losses and weights, another seed another batch order and other losses."""

    def run(seed: int):
        policy = _scoring(minilm_tokenizer, seed=5)
        samples = [policy.sample_for(_obs(k), Action.noop()) for k in (0, 1, 2)]
        first = next(iter(SFTBatches(len(samples), batch_size=2, steps=4, seed=seed)))
        with torch.no_grad():
            start = float(sft_loss(policy.eval(), [samples[i] for i in first]))
        losses = train_sft(policy, samples, steps=4, lr=1e-2, batch_size=2, seed=seed, progress=False)
        return losses, start, _snapshot(policy), samples, policy

    losses, start, weights, samples, policy = run(3)
    assert len(losses) == 4 and all(math.isfinite(x) and x > 0 for x in losses)
    assert losses[0] == pytest.approx(start, abs=1e-5)
    assert _changed(_snapshot(_scoring(minilm_tokenizer, seed=5)), policy)  # training moved the weights
    again, _, weights_again, _, _ = run(3)
    assert again == losses and all(torch.equal(weights[k], weights_again[k]) for k in weights)
    assert list(SFTBatches(3, 2, 4, seed=1)) != list(SFTBatches(3, 2, 4, seed=3))
    assert run(1)[0] != losses
    with pytest.raises(ValueError, match="no samples"):
        train_sft(policy, [], steps=1, lr=1e-3, batch_size=1, seed=0)
    with pytest.raises(ValueError, match="steps"):
        train_sft(policy, samples, steps=0, lr=1e-3, batch_size=1, seed=0)


def test_balance_weights_by_hand():
    kinds = ["noop", "noop", "noop", "write"]
    # power 1: raw 1/3, 1/3, 1/3, 1 (sum 2) scaled by 4/2 -> each kind totals 2
    torch.testing.assert_close(balance_weights(kinds, 1.0), torch.tensor([2 / 3, 2 / 3, 2 / 3, 2.0]))
    torch.testing.assert_close(balance_weights(kinds, 0.0), torch.ones(4))
    # power 1/2: raw 3^-1/2 (x3) and 1, sum 3^1/2 + 1
    r = 3**-0.5
    torch.testing.assert_close(balance_weights(kinds, 0.5), torch.tensor([r, r, r, 1.0]) * 4 / (3 * r + 1))
    torch.testing.assert_close(balance_weights(["merge"] * 3, 1.0), torch.ones(3))  # one kind: no change
    with pytest.raises(ValueError, match="power"):
        balance_weights(kinds, 1.5)
    with pytest.raises(ValueError, match="no samples"):
        balance_weights([], 1.0)


def test_weighted_sft_loss_and_the_balanced_optimum(minilm_tokenizer):
    policy = _scoring(minilm_tokenizer, seed=4, lora=LoraSettings(rank=0))
    obs = _obs(0)  # two candidates: Noop, Write
    samples = [policy.sample_for(obs, Action.noop())] * 3 + [policy.sample_for(obs, Action("write", "x", ""))]
    w = torch.tensor([1.0, 1.0, 1.0, 3.0])
    logp = policy.log_probs(samples)[0].detach()
    expected = -(w * logp).sum() / w.sum()
    assert float(sft_loss(policy, samples, w)) == pytest.approx(float(expected), abs=1e-6)
    with pytest.raises(ValueError, match="weights of shape"):
        train_sft(policy, samples, steps=1, lr=1e-2, batch_size=4, seed=0, weights=torch.ones(3))

    # One gate, teacher 3 × Noop : 1 × Write. The plain mean's optimum is π(write) = 1/4, so greedy Noops;
    # balanced (power 1) weights give both kinds the same total weight, optimum π(write) = 1/2.
    def p_write(power):
        pol = _scoring(minilm_tokenizer, seed=4, lora=LoraSettings(rank=0))
        weights = balance_weights(["noop"] * 3 + ["write"], power)
        train_sft(pol, samples, steps=300, lr=5e-2, batch_size=4, seed=0, weights=weights, progress=False)
        with torch.no_grad():
            return float(pol.log_probs(samples[3:])[0].exp())

    assert p_write(0.0) == pytest.approx(0.25, abs=0.02)
    assert p_write(1.0) == pytest.approx(0.5, abs=0.02)


def test_minilm_scoring_policy_recomputes_and_learns():
    policy = build_policy(PolicyConfig())  # the real offline all-MiniLM-L6-v2, LoRA r=8 on query/value
    assert isinstance(policy, ScoringPolicy) and policy.encoder.config.hidden_size == 384
    torch.nn.init.normal_(policy.head.weight, std=0.5)
    gen = torch.Generator().manual_seed(0)
    samples = [policy.act(_obs(k), generator=gen)[1] for k in (0, 3)]
    logp, _ = policy.eval().log_probs(samples)
    torch.testing.assert_close(logp, torch.tensor([s.logprob for s in samples]), atol=1e-5, rtol=0)
    teacher = [policy.sample_for(_obs(3), Action("merge", "x", entry_id="e1"))]
    losses = train_sft(policy, teacher, steps=3, lr=1e-2, batch_size=1, seed=0, progress=False)
    assert losses[-1] < losses[0]


# ----------------------------------------------------------------------------------------------------
# causal policy


def test_causal_recomputed_log_probs_equal_the_sampled_ones(char_tokenizer):
    policy = _causal(char_tokenizer, temperature=0.7)
    gen = torch.Generator().manual_seed(0)
    samples = [policy.act(_obs(k), generator=gen)[1] for k in (0, 2, 3, 1)]
    assert policy.counts.retokenized == 0  # char-level: the KV-cache sampling path is what is compared
    policy.eval()
    logp, entropy = policy.log_probs(samples)
    torch.testing.assert_close(logp, torch.tensor([s.logprob for s in samples]), atol=1e-4, rtol=0)
    assert bool((entropy > 0).all()) and bool((entropy <= math.log(len(char_tokenizer)) + 1e-4).all())
    # the log-probs are those of the temperature-scaled distribution: at T = 1 they differ
    plain = CausalPolicy(
        PolicyConfig(kind="causal", model="tiny", temperature=1.0), policy.model, char_tokenizer
    )
    assert not torch.allclose(plain.log_probs(samples)[0], logp, atol=1e-2)
    logp.sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in policy.parameters() if p.requires_grad)


def test_causal_entropy_is_the_mean_per_token_entropy(char_tokenizer):
    policy = _causal(char_tokenizer).eval()
    obs = _obs(1)
    sample = policy.sample_for(obs, Action.noop())
    _, entropy = policy.log_probs([sample])
    ids = char_tokenizer(sample.prompt + sample.completion)["input_ids"]
    p = len(char_tokenizer(sample.prompt)["input_ids"])
    with torch.no_grad():
        logits = policy.causal_lm(input_ids=torch.tensor([ids])).logits[0, p - 1 : len(ids) - 1]
    logp = torch.log_softmax(logits, dim=-1)
    assert float(entropy[0]) == pytest.approx(float(-(logp.exp() * logp).sum(-1).mean()), abs=1e-4)


def test_causal_greedy_takes_the_argmax_token_by_token(char_tokenizer):
    policy = _causal(char_tokenizer, seed=1)
    _, sample = policy.act(_obs(2), greedy=True)
    prompt = char_tokenizer(sample.prompt)["input_ids"]
    completion = char_tokenizer(sample.completion, add_special_tokens=False)["input_ids"]
    assert len(completion) == 12  # no EOS drawn by the random model within max_new_tokens
    with torch.no_grad():
        logits = policy.causal_lm(input_ids=torch.tensor([prompt + completion])).logits[0]
    assert completion == logits[len(prompt) - 1 : -1].argmax(dim=-1).tolist()


def test_causal_sampling_is_seeded(char_tokenizer):
    policy = _causal(char_tokenizer)

    def run(seed: int) -> GateSample:
        return policy.act(_obs(2), generator=torch.Generator().manual_seed(seed))[1]

    torch.manual_seed(0)
    first = run(3)
    torch.manual_seed(1)  # the global RNG plays no part: only the generator draws
    assert run(3) == first
    completions = {run(seed).completion for seed in (3, 4, 5, 6)}
    assert len(completions) == 4  # each seed draws its own completion
    with torch.no_grad():  # the drawn sample's log-prob is the model's
        assert float(policy.eval().log_probs([first])[0][0]) == pytest.approx(first.logprob, abs=1e-4)


def test_causal_invalid_output_is_a_counted_noop(char_tokenizer):
    policy = _causal(char_tokenizer)
    gen = torch.Generator().manual_seed(0)
    acted = [policy.act(_obs(2), generator=gen) for _ in range(4)]
    assert [a for a, _ in acted] == [Action.noop()] * 4
    assert policy.counts.invalid == 4
    assert policy.counts.unfinished == sum(not s.completion.endswith("<eos>") for _, s in acted)


def test_causal_sample_for_is_the_json_operation_plus_eos(char_tokenizer):
    policy = _causal(char_tokenizer)
    obs = _obs(2)
    sample = policy.sample_for(obs, ACTIONS[2])
    assert sample.prompt == gate_prompt(obs)  # no chat template on this tokenizer
    assert (
        sample.completion
        == '{"op": "merge", "entry_id": "e1", "content": "Alice has a cat and now a puppy"}<eos>'
    )
    assert sample.candidates == () and sample.choice == -1
    with pytest.raises(ValueError, match="invalid"):
        policy.sample_for(obs, Action("merge", "x", entry_id="e9"))
    with pytest.raises(ValueError, match="sample 0"):
        policy.log_probs([GateSample("p", ("a", "b"), 0)])


def test_causal_chat_template_wraps_the_prompt_when_present(char_tokenizer):
    tok = PreTrainedTokenizerFast(tokenizer_object=char_tokenizer.backend_tokenizer, unk_token="<unk>",
                                  pad_token="<pad>", eos_token="<eos>")  # fmt: skip
    tok.chat_template = (
        "{% for m in messages %}[U]{{ m['content'] }}[/U]{% endfor %}"
        "{% if add_generation_prompt %}[A]{% endif %}"
    )
    obs = _obs(1)
    templated = _causal(tok)
    sample = templated.act(obs, generator=torch.Generator().manual_seed(0))[1]
    assert sample.prompt == f"[U]{gate_prompt(obs)}[/U][A]"
    assert float(templated.eval().log_probs([sample])[0][0]) == pytest.approx(sample.logprob, abs=1e-4)
    assert _causal(tok, chat_template=False).render_prompt(obs) == gate_prompt(obs)


def test_causal_prompt_truncation_keeps_the_end_and_is_counted(char_tokenizer):
    policy = _causal(char_tokenizer, max_length=64)
    obs = _obs(2)
    sample = policy.act(obs, generator=torch.Generator().manual_seed(0))[1]
    assert policy.counts.truncated == 1
    assert float(policy.eval().log_probs([sample])[0][0]) == pytest.approx(sample.logprob, abs=1e-4)
    # the logprob is that of the last 64 prompt characters: a policy given only those agrees
    full = _causal(char_tokenizer)
    tail = GateSample(prompt=sample.prompt[-64:], completion=sample.completion)
    assert float(full.eval().log_probs([tail])[0][0]) == pytest.approx(sample.logprob, abs=1e-4)


def test_causal_non_canonical_samples_are_counted_and_rescored(bpe_tokenizer):
    policy = _causal(bpe_tokenizer)
    gen = torch.Generator().manual_seed(0)
    samples = [policy.act(_obs(2), generator=gen)[1] for _ in range(6)]
    assert policy.counts.retokenized > 0
    logp, _ = policy.eval().log_probs(samples)
    torch.testing.assert_close(logp, torch.tensor([s.logprob for s in samples]), atol=1e-4, rtol=0)


def test_causal_sft_moves_probability_to_the_teacher_and_trains_only_lora(bpe_tokenizer):
    policy = _causal(bpe_tokenizer)
    obs = _obs(2)
    samples = [policy.sample_for(obs, a) for a in ACTIONS]
    assert [len(bpe_tokenizer(s.completion, add_special_tokens=False)["input_ids"]) for s in samples] == [
        2,
        2,
        2,
    ]
    policy.eval()
    with torch.no_grad():
        before_logp = policy.log_probs(samples)[0]
    before = _snapshot(policy)
    losses = train_sft(policy, samples[1:2], steps=40, lr=2e-2, batch_size=1, seed=0, progress=False)
    with torch.no_grad():
        after_logp = policy.log_probs(samples)[0]
    assert losses[-1] < losses[0] and after_logp[1] > before_logp[1]
    changed = _changed(before, policy)
    assert changed and all("lora_" in n for n in changed)
    # greedy decoding now writes the teacher's operation, which parses to the teacher's action
    action, sample = policy.act(obs, greedy=True)
    assert action == ACTIONS[1] and sample.completion == samples[1].completion
    assert policy.counts.invalid == 0 and policy.counts.unfinished == 0


def test_causal_rank_zero_trains_every_weight(char_tokenizer):
    policy = _causal(char_tokenizer, lora=LoraSettings(rank=0))
    assert all(p.requires_grad for p in policy.parameters())
    assert not any("lora_" in n for n, _ in policy.named_parameters())
    with_lora = _causal(char_tokenizer)
    trainable = {n for n, p in with_lora.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n and ("q_proj" in n or "v_proj" in n) for n in trainable)


def test_frozen_encoder_caches_features_and_still_learns(minilm_tokenizer):
    policy = _scoring(minilm_tokenizer, lora=LoraSettings(rank=0))
    assert not any(p.requires_grad for p in policy.encoder.parameters())
    obs = _obs()
    gen = torch.Generator().manual_seed(0)
    action, sample = policy.act(obs, generator=gen)
    calls = []
    hook = policy.encoder.register_forward_hook(lambda *a: calls.append(1))
    logp, _ = policy.log_probs([sample])
    assert torch.allclose(logp, torch.tensor([sample.logprob]), atol=1e-5)
    assert calls == []  # re-scoring read the cached features: no encoder forward
    hook.remove()
    teacher = policy.sample_for(obs, Action.noop())
    before = float(policy.log_probs([teacher])[0][0])
    opt = torch.optim.SGD([p for p in policy.parameters() if p.requires_grad], lr=0.5)
    for _ in range(5):
        opt.zero_grad()
        (-policy.log_probs([teacher])[0].mean()).backward()
        opt.step()
    assert float(policy.log_probs([teacher])[0][0]) > before


def test_sampling_temperature_rescales_log_probs_keeps_greedy_and_restores(minilm_tokenizer):
    from memprm.models.policies import sampling_temperature

    policy = _scoring(minilm_tokenizer, seed=2, lora=LoraSettings(rank=0))
    obs = [_obs(2), _obs(1, text="We moved to Lisbon in May"), _obs(0, layer="profile")]
    samples = [policy.act(o, greedy=True)[1] for o in obs]
    with torch.no_grad():
        base, _ = policy.candidate_log_probs(samples)  # [N, C] at t = 1
        with sampling_temperature(policy, 4.0):
            hot, mask = policy.candidate_log_probs(samples)
            assert [policy.act(o, greedy=True)[1].choice for o in obs] == [s.choice for s in samples]
        expected = torch.log_softmax(torch.where(mask, base, torch.full_like(base, -torch.inf)) / 4.0, dim=1)
    torch.testing.assert_close(hot[mask], expected[mask])
    assert policy.cfg.temperature == 1.0
    with pytest.raises(RuntimeError), sampling_temperature(policy, 3.0):  # restored when the block raises
        raise RuntimeError("boom")
    assert policy.cfg.temperature == 1.0
    with sampling_temperature(policy, 0.0):
        assert policy.cfg.temperature == 1.0  # 0 = the policy's own
    with pytest.raises(ValueError, match="temperature"):
        with sampling_temperature(policy, -1.0):
            pass


def test_structural_subset_moves_only_the_text_free_head_weights_and_unhooks(minilm_tokenizer):
    from memprm.models.policies import trainable_subset
    from memprm.models.two_tower import structural_dim

    policy = _scoring(minilm_tokenizer, seed=3, lora=LoraSettings(rank=2), scorer="two_tower")
    obs = [_obs(2), _obs(1, text="We moved to Lisbon in May"), _obs(0, layer="profile")]
    samples = [policy.act(o, generator=torch.Generator().manual_seed(i))[1] for i, o in enumerate(obs)]
    trainable = [n for n, p in policy.named_parameters() if p.requires_grad]
    assert any("lora" in n for n in trainable) and "head.weight" in trainable
    before = {n: p.detach().clone() for n, p in policy.named_parameters()}
    opt = torch.optim.AdamW([p for p in policy.parameters() if p.requires_grad], lr=0.1, weight_decay=0.0)

    def step() -> None:
        opt.zero_grad()
        (-policy.log_probs(samples)[0].sum()).backward()
        opt.step()

    with trainable_subset(policy, "structural"):
        for _ in range(3):
            step()
    after = dict(policy.named_parameters())
    k = structural_dim()
    assert not torch.equal(after["head.weight"][:, :k], before["head.weight"][:, :k])  # the 15 weights moved
    torch.testing.assert_close(after["head.weight"][:, k:], before["head.weight"][:, k:], rtol=0, atol=0)
    for name in trainable:
        if name != "head.weight":  # LoRA and the head's bias: exactly as before
            torch.testing.assert_close(after[name], before[name], rtol=0, atol=0)
    assert [n for n, p in policy.named_parameters() if p.requires_grad] == trainable  # snapshots keep all
    step()  # hooks removed: the text-vector weights and LoRA train again
    assert not torch.equal(after["head.weight"][:, k:], before["head.weight"][:, k:])
    with pytest.raises(RuntimeError), trainable_subset(policy, "structural"):
        raise RuntimeError("boom")
    assert all(not p._backward_hooks for p in policy.parameters())  # removed when the block raises
    with pytest.raises(ValueError, match="one of .'all', 'structural', 'kinds', 'match'., got 'lora'"), trainable_subset(policy, "lora"):
        pass
    pair = _scoring(minilm_tokenizer, scorer="pair")
    with pytest.raises(ValueError, match="policy.scorer=pair"), trainable_subset(pair, "structural"):
        pass


@pytest.mark.parametrize("which", ["kinds", "match"])
def test_kinds_and_match_subsets_move_only_their_head_weights(minilm_tokenizer, which):
    """``kinds``: kind × layer and rank move, the cosines and key match stay; ``match``: the reverse."""
    from memprm.models.policies import trainable_subset
    from memprm.models.two_tower import kind_rank_dim, structural_dim

    policy = _scoring(minilm_tokenizer, seed=3, lora=LoraSettings(rank=2), scorer="two_tower")
    obs = [_obs(2), _obs(1, text="We moved to Lisbon in May"), _obs(0, layer="profile")]
    samples = [policy.act(o, generator=torch.Generator().manual_seed(i))[1] for i, o in enumerate(obs)]
    before = policy.head.weight.detach().clone()
    opt = torch.optim.AdamW([p for p in policy.parameters() if p.requires_grad], lr=0.1, weight_decay=0.0)
    with trainable_subset(policy, which):
        for _ in range(3):
            opt.zero_grad()
            (-policy.log_probs(samples)[0].sum()).backward()
            opt.step()
    k, s = kind_rank_dim(), structural_dim()
    assert s - k == 3  # the two cosines and the key match
    after = policy.head.weight.detach()
    moved, kept = ((slice(0, k), [slice(k, None)]) if which == "kinds" else (slice(k, s), [slice(0, k), slice(s, None)]))
    assert not torch.equal(after[:, moved], before[:, moved])
    for part in kept:  # every other head weight (text-vector weights included) exactly as before
        torch.testing.assert_close(after[:, part], before[:, part], rtol=0, atol=0)
