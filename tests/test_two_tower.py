"""The two-tower scorer of the scoring policy: its features, its caches and its distribution.

A 2-layer random BERT on MiniLM's tokenizer (nothing downloaded); the frozen-encoder default (LoRA rank 0,
vectors cached) and LoRA (vectors with gradients) both.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from helpers.tiny_models import tiny_scoring_policy

from memprm.credit.tiers import Neighbour
from memprm.data.records import Turn
from memprm.env.candidates import CANDIDATE_KINDS, gate_candidates, gate_query, gate_view
from memprm.env.gates import Action, Observation
from memprm.llm.notes import Note
from memprm.models.policy_config import LoraSettings
from memprm.models.two_tower import RANKS, TextVectors, feature_dim, view_features

pytestmark = pytest.mark.usefixtures("one_thread")

FROZEN = LoraSettings(rank=0)


def _obs(
    layer="profile", notes=1, neighbours=2, turn="I started a new job as a nurse last week", ctx=("Bo: hi",)
):
    ns = tuple(
        Neighbour(f"e{i}", layer, f"Ana's job: doctor (as of {i + 1} Mar 2023) v{i}", "Ana/job" if i == 0 else "")
        for i in range(neighbours)
    )
    nt = tuple(Note(layer, "Ana/job", f"Ana's job: nurse (as of 8 May 2023) #{i}") for i in range(notes))
    return Observation("d1", 2, Turn("D2:3", "Ana", turn, 2), "2023-05-08", layer, ctx, ns, nt)


GATES = [
    _obs(),
    _obs("event", 2, 3),
    _obs(notes=0, neighbours=0),
    _obs(turn="We moved to Lisbon in May, finally"),
]


def test_views_mirror_the_candidates_and_the_query_is_layer_free():
    obs = _obs("profile", notes=2, neighbours=3)
    cands = gate_candidates(obs, merge_candidates=2)
    view = gate_view(obs, cands)
    assert [c.kind for c in view.candidates] == [
        "noop",
        "write_turn",
        "write_note",
        "write_note",
        "merge",
        "merge",
    ]
    assert [c.rank for c in view.candidates] == [0, 0, 0, 1, 0, 1]
    assert (
        view.candidates[4].content == obs.notes[0].text
        and view.candidates[4].target == obs.neighbours[0].text
    )
    assert view.candidates[1].content == obs.turn.render and view.candidates[0].content == ""
    assert gate_query(_obs("event")) == gate_query(_obs("profile")) and "profile" not in view.query


def test_a_merge_of_the_turn_is_its_own_kind_and_feature():
    """With no note, Merge carries the turn itself (kind ``merge_turn``): the heuristic teacher never takes it,
    and a scorer must be able to tell it from merging a note, as ``write_turn`` from ``write_note``."""
    obs = _obs("event", notes=0, neighbours=2)
    view = gate_view(obs, gate_candidates(obs, merge_candidates=2))
    assert [c.kind for c in view.candidates] == ["noop", "write_turn", "merge_turn", "merge_turn"]
    assert [(c.rank, c.content, c.target) for c in view.candidates[2:]] == [
        (j, obs.turn.render, obs.neighbours[j].text) for j in (0, 1)
    ]
    policy = tiny_scoring_policy(lora=FROZEN).eval()
    feats = view_features([view, gate_view(_obs("event"), gate_candidates(_obs("event"), 1))], policy.vectors, cached=True)
    n_kl = len(CANDIDATE_KINDS) * 2
    # kind × layer one-hot, event = layer 0: merge_turn/event = 4 * 2, merge/event = 3 * 2
    assert [int(torch.argmax(feats[i, :n_kl])) for i in range(len(feats))] == [0, 2, 8, 8, 0, 2, 4, 6]


def test_log_probs_of_all_candidates_sum_to_one_and_match_the_sample():
    for lora in (FROZEN, LoraSettings(rank=4)):
        policy = tiny_scoring_policy(head_std=0.5, lora=lora).eval()
        for obs in GATES:
            action, sample = policy.act(obs, generator=torch.Generator().manual_seed(0))
            alts = [replace(sample, choice=j) for j in range(len(sample.candidates))]
            logp, entropy = policy.log_probs(alts)
            assert torch.isclose(logp.exp().sum(), torch.tensor(1.0), atol=1e-5)
            assert abs(float(logp[sample.choice].detach()) - sample.logprob) < 1e-5
            assert bool((entropy >= 0).all()) and len(sample.candidates) == len(sample.view.candidates)


def test_an_untrained_head_is_uniform_and_greedy_ties_go_to_noop():
    policy = tiny_scoring_policy(head_std=0.0, lora=FROZEN)
    torch.nn.init.zeros_(policy.head.weight)
    action, sample = policy.act(GATES[1], greedy=True)
    assert action == Action.noop() and abs(sample.logprob + torch.log(torch.tensor(7.0))) < 1e-5


def test_cached_vectors_are_bit_identical_to_recomputed_ones():
    policy = tiny_scoring_policy(head_std=0.5, lora=FROZEN).eval()
    for obs in reversed(GATES):  # fill the cache gate by gate, in another order and other batches
        policy.act(obs, greedy=True)
    views = [gate_view(o, gate_candidates(o, 3)) for o in GATES]
    cached = view_features(views, policy.vectors, cached=True)  # [T, F]
    with torch.no_grad():
        fresh = view_features(views, policy.vectors, cached=False)
    assert cached.shape == (sum(len(v.candidates) for v in views), feature_dim(32))
    assert torch.equal(cached, fresh)
    texts = ["a b c", "Ana's job: nurse", "x y", "a b c d e f g"]
    with torch.no_grad():
        together = policy.vectors.encode(texts)
        alone = torch.cat([policy.vectors.encode([t]) for t in texts])
    assert torch.equal(together, alone)  # a vector never depends on what it was batched with


def test_cache_hits_run_no_encoder_tokens_and_lora_never_caches():
    policy = tiny_scoring_policy(lora=FROZEN).eval()
    policy.act(GATES[0])
    spent = policy.counts.encoded_tokens
    assert spent > 0
    policy.act(GATES[0])
    policy.log_probs([policy.act(GATES[0])[1]])
    assert policy.counts.encoded_tokens == spent  # every text of the gate is cached
    lora = tiny_scoring_policy(lora=LoraSettings(rank=4)).eval()
    _, sample = lora.act(GATES[0])
    before = lora.counts.encoded_tokens
    logp, _ = lora.log_probs([sample])
    logp.sum().backward()
    assert lora.counts.encoded_tokens > before and not lora.vectors._vectors
    grads = [p.grad for n, p in lora.named_parameters() if "lora_" in n]
    assert grads and all(g is not None for g in grads) and sum(float(g.abs().sum()) for g in grads) > 0


def test_features_by_hand_for_one_gate():
    policy = tiny_scoring_policy(lora=FROZEN).eval()
    obs = _obs("profile", notes=1, neighbours=1)
    view = gate_view(obs, gate_candidates(obs, 3))  # noop, write turn, write note, merge
    feats = view_features([view], policy.vectors, cached=True)  # [4, F]
    n_kl, h = len(CANDIDATE_KINDS) * 2, 32
    vec = {
        t: policy.vectors.lookup([t], cached=True)[0]
        for t in (view.query, obs.notes[0].text, obs.neighbours[0].text)
    }
    note, target, query = vec[obs.notes[0].text], vec[obs.neighbours[0].text], vec[view.query]
    assert [int(torch.argmax(feats[i, :n_kl])) for i in range(4)] == [
        1,
        3,
        5,
        7,
    ]  # kind × layer (profile = 1)
    assert torch.equal(feats[:, n_kl : n_kl + RANKS].argmax(dim=1), torch.zeros(4, dtype=torch.long))
    cos = n_kl + RANKS
    assert torch.allclose(feats[3, cos + 1], note @ target) and torch.allclose(feats[2, cos], note @ query)
    assert float(feats[2, cos + 1]) == 0.0  # a Write has no target
    assert torch.count_nonzero(feats[0, cos:]) == 0  # Noop writes nothing: every content feature is zero
    assert feats[:, cos + 2].tolist() == [0.0, 0.0, 0.0, 1.0]  # the Merge's note has its target's key
    assert torch.allclose(feats[3, cos + 3 : cos + 3 + h], note * h**0.5)
    assert torch.allclose(feats[3, cos + 3 + 2 * h :], note * target * h)


def test_same_key_marks_only_a_note_merged_into_an_entry_of_its_key():
    obs = _obs("profile", notes=1, neighbours=2)  # e0 keyed Ana/job (the note's key), e1 unkeyed
    views = [c.view for c in gate_candidates(obs, 3)]
    assert [(v.kind, v.same_key) for v in views] == [
        ("noop", False), ("write_turn", False), ("write_note", False), ("merge", True), ("merge", False)
    ]
    turn_only = _obs("profile", notes=0, neighbours=1)  # merging the raw turn: no note, no key
    assert [v.same_key for v in (c.view for c in gate_candidates(turn_only, 3))] == [False] * 3


def test_truncation_is_counted_per_distinct_text_when_a_sample_is_made():
    policy = tiny_scoring_policy(lora=FROZEN, max_length=12)
    long = "word " * 30
    obs = _obs(notes=0, neighbours=0, turn=long, ctx=())
    policy.act(obs)
    assert policy.counts.truncated == 2  # the query (holding the turn) and the turn's Write content
    vectors = TextVectors(policy.encoder, policy.tokenizer, 12, policy.counts)
    assert vectors.count_truncated(["short", long, ""]) == 1


def test_two_tower_needs_views_and_rejects_unknown_layers():
    policy = tiny_scoring_policy(lora=FROZEN)
    _, sample = policy.act(GATES[0])
    with pytest.raises(ValueError, match="has no view"):
        policy.log_probs([replace(sample, view=None)])
    with pytest.raises(ValueError, match="unknown layer 'verbatim'"):
        policy.log_probs([replace(sample, view=replace(sample.view, layer="verbatim"))])


def test_teacher_actions_map_onto_their_two_tower_candidates():
    policy = tiny_scoring_policy(lora=FROZEN)
    obs = _obs("profile", notes=2, neighbours=2)
    note = obs.notes[1]
    assert policy.sample_for(obs, Action("write", note.text, note.key)).choice == 3
    merge = Action("merge", obs.notes[0].text, entry_id="e1")
    sample = policy.sample_for(obs, merge)
    assert (
        sample.view.candidates[sample.choice].kind == "merge"
        and sample.view.candidates[sample.choice].rank == 1
    )
