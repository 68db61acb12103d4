"""The frozen critic's score cache: the same scores as scoring every text, each distinct text scored once,
and a refreshed critic never answering from the old critic's cache."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from helpers.tiny_models import tiny_frozen_critic

from memprm.models.critic import FrozenCritic
from memprm.models.critic_data import CriticExample
from memprm.models.critic_retrain import CriticHandle, CriticRefreshConfig, refresh_critic

TEXTS = [
    "turn: Ana moved to Lisbon in May | op: write profile home Ana lives in Lisbon",
    "turn: hi | op: noop",
    "turn: Ana works at the museum, she said, and likes it a lot | op: write job museum",
    "turn: hi | op: noop",
    "turn: bye | op: write chat bye",
]


@pytest.fixture(scope="module")
def critic() -> FrozenCritic:
    return tiny_frozen_critic(score_batch_size=2)


def _uncached(critic: FrozenCritic) -> FrozenCritic:
    return FrozenCritic(replace(critic.cfg, score_cache=False), critic.net)


def test_cached_scores_equal_scoring_every_text_and_keep_input_order(critic):
    plain = _uncached(critic)
    phi, p = critic.score(TEXTS)
    ref_phi, ref_p = plain.score(TEXTS)
    assert phi.shape == p.shape == (5,) and phi.dtype == np.float32
    assert np.allclose(phi, ref_phi, atol=1e-6) and np.allclose(p, ref_p, atol=1e-6)  # padding differs only
    assert phi[1] == phi[3]  # a duplicate is the same cached score
    again = critic.score(list(reversed(TEXTS)))[0]
    assert np.array_equal(again, phi[::-1])


def test_each_distinct_text_is_scored_once(critic):
    fresh = FrozenCritic(critic.cfg, critic.net)
    fresh.score(TEXTS)
    spent = fresh.encoded_tokens
    fresh.score(TEXTS + TEXTS[:2])
    assert spent > 0 and fresh.encoded_tokens == spent
    plain = _uncached(critic)
    plain.score(TEXTS)
    assert plain.encoded_tokens > spent  # the reference path scores the duplicate, in input order


def test_a_refreshed_critic_never_answers_from_the_old_cache(critic):
    handle = CriticHandle(critic)
    before = handle.score(TEXTS)  # fills the old critic's cache
    replay = [
        CriticExample(f"{t} #{i}", float(i % 2), i % 2, "d1", "online", f"op{i}")
        for i, t in enumerate(TEXTS * 2)
    ]
    handle.critic = refresh_critic(
        critic, replay, [], np.zeros(0), CriticRefreshConfig(lr=1e-2, lambda_anchor=0)
    )
    after = handle.score(TEXTS)
    assert np.allclose(after, _uncached(handle.critic).score(TEXTS)[0], atol=1e-6)
    assert not np.allclose(after, before)
