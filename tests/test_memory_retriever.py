"""Retrieval equals a brute-force numpy top-k; forks and counterfactual views are served correctly."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memprm.memory import HashingEmbedder, MemoryBank, Retriever, RetrieverConfig
from memprm.memory.embedder import EmbedderConfig, build_embedder


class TableEmbedder:
    """Embeds the texts "v<i>" as row i of a fixed matrix: lets tests control every vector."""

    def __init__(self, vecs: np.ndarray):
        self.vecs = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
        self.dim = vecs.shape[1]

    def embed(self, texts):
        return np.stack([self.vecs[int(t[1:])] for t in texts]).astype(np.float32)


def brute_force(bank, vecs, q, layer, width, hidden=frozenset()):
    best = {}
    for e in bank.entries(layer):
        if e.id in hidden:
            continue
        scores = [
            float(vecs[int(v.content[1:])].astype(np.float64) @ q.astype(np.float64)) for v in e.versions
        ]
        best[e.id] = (max(scores), e.seq)
    return [eid for eid, _ in sorted(best.items(), key=lambda kv: (-kv[1][0], kv[1][1]))[:width]]


def random_bank(rng, n_ops, n_vecs):
    bank, t = MemoryBank(), 0
    for _ in range(n_ops):
        layer = ("event", "profile")[rng.integers(2)]
        entries = bank.entries(layer)
        if entries and rng.random() < 0.4:
            bank.merge(entries[rng.integers(len(entries))].id, f"v{t % n_vecs}")
        else:
            bank.write(layer, f"v{t % n_vecs}")
        t += 1
    return bank


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n_ops=st.integers(1, 120), dup=st.booleans(), width=st.integers(1, 6))
def test_retrieval_equals_brute_force(seed, n_ops, dup, width):
    rng = np.random.default_rng(seed)
    n_vecs = 7 if dup else 200  # dup: many identical vectors → exact ties, broken by entry order
    vecs = rng.normal(size=(n_vecs, 16)).astype(np.float32)
    emb = TableEmbedder(vecs)
    bank = random_bank(rng, n_ops, n_vecs)
    r = Retriever(
        emb,
        RetrieverConfig(widths={"event": width, "profile": width, "verbatim": 1}, paths=("event", "profile")),
    )
    q = emb.vecs[rng.integers(n_vecs)] + 0.1 * rng.normal(size=16).astype(np.float32)
    got = r.retrieve_vector(bank, q)
    for layer in ("event", "profile"):
        assert [h.entry.id for h in got.by_layer(layer)] == brute_force(bank, emb.vecs, q, layer, width)
    # a counterfactual view without some entries equals brute force on the remaining ones
    ids = [e.id for e in bank]
    hidden = frozenset(rng.choice(ids, size=min(len(ids), 3), replace=False).tolist())
    got_cf = r.retrieve_vector(bank.without(hidden), q)
    for layer in ("event", "profile"):
        assert [h.entry.id for h in got_cf.by_layer(layer)] == brute_force(
            bank, emb.vecs, q, layer, width, hidden
        )
    # hiding every unmasked hit forces the cached candidate list to be searched deeper
    top = frozenset(got.entry_ids)
    got_top = r.retrieve_vector(bank.without(top), q)
    for layer in ("event", "profile"):
        assert [h.entry.id for h in got_top.by_layer(layer)] == brute_force(
            bank, emb.vecs, q, layer, width, top
        )


def test_cached_candidates_follow_new_versions_and_forks():
    rng = np.random.default_rng(3)
    vecs = rng.normal(size=(50, 16)).astype(np.float32)
    emb = TableEmbedder(vecs)
    bank = MemoryBank()
    ids = [bank.write("event", f"v{i}").entry_id for i in range(20)]
    r = Retriever(emb, RetrieverConfig(widths={"event": 2}, paths=("event",)))
    q = emb.vecs[40]
    first = r.retrieve_vector(bank, q).entry_ids
    r.retrieve_vector(bank.without([first[0]]), q)  # fills the candidate cache
    child = bank.fork()
    bank.merge(ids[5], "v40")  # the query's own vector: ids[5] must now rank first
    assert r.retrieve_vector(bank, q).entry_ids[0] == ids[5]
    assert r.retrieve_vector(bank.without([ids[5]]), q).entry_ids == first
    assert r.retrieve_vector(child, q).entry_ids == first  # the fork never saw the merge


def test_whole_chain_returned_and_score_is_max_over_versions():
    emb = HashingEmbedder(dim=128)
    bank = MemoryBank()
    e = bank.write("profile", "Ana lives in Porto").entry_id
    bank.merge(e, "Ana moved to Lisbon last spring")
    bank.write("profile", "Ana likes green tea")
    r = Retriever(emb)
    hit = r.retrieve(bank, "moved to Lisbon").by_layer("profile")[0]
    assert hit.entry.id == e and hit.best_version == 1 and len(hit.entry.versions) == 2
    q = emb.embed(["moved to Lisbon"])[0]
    v = emb.embed([x.content for x in hit.entry.versions])
    assert hit.score == pytest.approx(float((v @ q).max()), abs=1e-6)


def test_forks_see_only_their_own_versions_and_share_the_index():
    emb = HashingEmbedder(dim=128)
    r = Retriever(emb)
    parent = MemoryBank()
    parent.write("event", "Ana ran the Porto marathon")
    r.retrieve(parent, "marathon")  # index the parent
    a, b = parent.fork(), parent.fork()
    a.write("event", "Ana ran the Lisbon marathon in May")
    b.write("event", "Bruno baked bread")
    parent.write("event", "parent only: a marathon note")
    n_before = emb.n_encoded
    ids_a = set(r.retrieve(a, "marathon").entry_ids)
    ids_b = set(r.retrieve(b, "marathon").entry_ids)
    ids_p = set(r.retrieve(parent, "marathon").entry_ids)
    assert ids_a == {"e00000", "e00001"} and ids_b == {"e00000", "e00001"}
    assert "Ana ran the Lisbon marathon in May" in [
        h.entry.latest.content for h in r.retrieve(a, "marathon").hits
    ]
    assert "Bruno baked bread" in [h.entry.latest.content for h in r.retrieve(b, "bread").hits]
    assert len(ids_p) == 2
    # only the three new versions and the new query "bread" were embedded: the shared part was not re-indexed
    assert emb.n_encoded - n_before == 3 + 1
    assert a.index_state.layers["event"].sealed[0] is b.index_state.layers["event"].sealed[0]


def test_compaction_keeps_results():
    emb = HashingEmbedder(dim=64)
    r = Retriever(emb, RetrieverConfig(max_segments=2))
    bank = MemoryBank()
    for i in range(6):
        bank.write("event", f"fact number {i} about topic {i % 3}")
        r.retrieve(bank, "topic")
        bank = bank.fork()
    before = r.retrieve(bank, "fact number 4").entry_ids
    assert len(bank.index_state.layers["event"].sealed) <= 2
    assert before[0] == "e00004"


def test_paths_and_widths_and_empty_layers():
    emb = HashingEmbedder(dim=64)
    bank = MemoryBank()
    for i in range(5):
        bank.write_verbatim(f"turn {i} text", turn_id=f"D1:{i + 1}")
    only_verbatim = Retriever(emb, RetrieverConfig(paths=("verbatim",), widths={"verbatim": 2}))
    res = only_verbatim.retrieve(bank, "turn 3")
    assert len(res.hits) == 2 and all(h.layer == "verbatim" for h in res.hits)
    assert Retriever(emb).retrieve(MemoryBank(), "anything").hits == ()
    with pytest.raises(ValueError, match="unknown layer"):
        RetrieverConfig(paths=("semantic",))
    with pytest.raises(ValueError, match="widths"):
        RetrieverConfig(widths={"event": 0, "profile": 3, "verbatim": 3})


def test_embedder_cache_and_minilm_offline():
    emb = build_embedder(EmbedderConfig(kind="sentence", model="minilm"), shared=False)
    v = emb.embed(["Ana adopted a dog", "Ana adopted a dog", "The weather is nice"])
    assert v.shape == (3, 384) and emb.n_encoded == 2
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert float(v[0] @ v[1]) == pytest.approx(1.0, abs=1e-6)
    emb.embed(["The weather is nice"])
    assert emb.n_encoded == 2
    sim = emb.embed(["Ana got a puppy"])[0]
    assert float(sim @ v[0]) > float(sim @ v[2])


def test_gpu_retriever_needs_faiss_gpu():
    import faiss

    cfg = RetrieverConfig(device="cuda")  # a config can name the GPU anywhere; building it needs faiss-gpu
    if not hasattr(faiss, "StandardGpuResources"):
        with pytest.raises(RuntimeError, match=r"memprm\[gpu\]"):
            Retriever(HashingEmbedder(dim=16), cfg)
