"""Teachers: memory managers whose trajectories train the critic and initialize the policy (SFT).

``HeuristicTeacher`` (offline; the paper's "heuristic teacher" row) applies a documented rule set per gate:

1. *Skip chit-chat.* A turn is fact-stating when it is not a question, has at least ``min_words`` words, and
   carries a content cue: a first-person statement (I / my / we / our) together with a capitalized word
   past the first, a number, a time expression or a fact verb (adopted, moved, started, …).
2. *Route by layer.* The profile gate acts on attribute statements ("I work as", "I live in", "my favourite",
   "I'm a", "my sister", …); the event gate on the other fact-stating turns (things that happened).
3. *Merge or write.* If the most similar neighbour shown at the gate has embedding cosine ≥
   ``merge_threshold`` with the turn, merge the turn into it (a new version); otherwise write the turn as a
   new entry keyed by its attribute cue (profile) or first fact verb (event).

``LLMTeacher`` asks an OpenAI-compatible model at every gate with the manager prompt and the strict JSON
operation format (:mod:`memprm.env.ops_format`); invalid output becomes a Noop and is counted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memprm.env.gates import Action, Observation
from memprm.env.ops_format import gate_prompt, validate_operation
from memprm.memory.embedder import Embedder

_WORD = re.compile(r"[A-Za-z0-9']+")
_FIRST_PERSON = re.compile(r"\b(i|i'm|i've|my|we|we're|our|me)\b")
_TIME = re.compile(
    r"\b(yesterday|today|tonight|ago|last (week|weekend|month|year|monday|tuesday|wednesday|thursday|friday|"
    r"saturday|sunday)|this (morning|week|weekend)|recently|since)\b"
)
_FACT_VERBS = (
    "adopted bought moved started joined visited ran won finished graduated married quit began travelled "
    "traveled went got learned learnt took made painted baked signed launched opened volunteered attended "
    "completed met hiked played named called work works working live lives living have has"
).split()
_PROFILE_CUES = {
    "job": r"\b(i work|i'm working|working as|my job|i am an?|i'm an?|my career|my new job|i became)\b",
    "home": r"\b(i live|i'm living|i moved|we moved|my home|my hometown|my city)\b",
    "favourite": r"\b(my favou?rite|i love|i really like|i prefer)\b",
    "family": r"\b(my (wife|husband|partner|son|daughter|sister|brother|mom|mother|dad|father|kids|children))\b",
    "pet": r"\b(my (dog|cat|pet|puppy|kitten)|our (dog|cat|pet))\b",
    "hobby": r"\b(my hobby|i play|i've been playing|i practice|i practise)\b",
}
_PROFILE = {k: re.compile(v) for k, v in _PROFILE_CUES.items()}


@dataclass(frozen=True)
class TeacherConfig:
    #: ``heuristic`` (offline rule set) or ``llm`` (an OpenAI-compatible endpoint).
    kind: str = "heuristic"
    #: heuristic: merge into the nearest shown neighbour at or above this cosine with the turn.
    merge_threshold: float = 0.6
    #: heuristic: fact-stating turns have at least this many words.
    min_words: int = 6

    def __post_init__(self) -> None:
        if self.kind not in ("heuristic", "llm"):
            raise ValueError(f"teacher.kind must be 'heuristic' or 'llm', got {self.kind!r}")
        if not -1.0 <= self.merge_threshold <= 1.0 or self.min_words < 1:
            raise ValueError("teacher.merge_threshold must be in [-1, 1] and teacher.min_words >= 1")


def fact_stating(text: str, min_words: int) -> bool:
    words = _WORD.findall(text)
    low = text.lower()
    if len(words) < min_words or text.rstrip().endswith("?") or not _FIRST_PERSON.search(low):
        return False
    has_cap = any(w[0].isupper() and w != "I" and not w.startswith("I'") for w in words[1:])
    has_num = any(any(c.isdigit() for c in w) for w in words)
    lowered = {w.lower() for w in words}
    return has_cap or has_num or bool(_TIME.search(low)) or any(v in lowered for v in _FACT_VERBS)


def profile_key(text: str) -> str | None:
    low = text.lower()
    for key, rx in _PROFILE.items():
        if rx.search(low):
            return key
    return None


class HeuristicTeacher:
    def __init__(self, embedder: Embedder, cfg: TeacherConfig | None = None):
        self.embedder, self.cfg = embedder, cfg or TeacherConfig()

    def __call__(self, obs: Observation) -> Action:
        text = obs.turn.text
        if not fact_stating(text, self.cfg.min_words):
            return Action.noop()
        key = profile_key(text)
        if (obs.layer == "profile") != (key is not None):
            return Action.noop()
        if obs.neighbours:
            vecs = self.embedder.embed([obs.turn.render, obs.neighbours[0].text])  # [2, dim]
            if float(vecs[0] @ vecs[1]) >= self.cfg.merge_threshold:
                return Action("merge", obs.turn.render, entry_id=obs.neighbours[0].entry_id)
        if key is None:
            verbs = [w.lower() for w in _WORD.findall(text) if w.lower() in _FACT_VERBS]
            key = verbs[0] if verbs else ""
        return Action("write", obs.turn.render, key)


class LLMTeacher:
    """The manager prompt at every gate; invalid or failed output → Noop, counted in ``invalid``."""

    def __init__(self, client):
        self.client = client
        self.invalid = 0

    def __call__(self, obs: Observation) -> Action:
        def validate(obj: dict) -> Action:
            action = validate_operation(obj, obs)
            if action is None:
                raise ValueError('expected {"op": "write"|"merge"|"noop", ...} valid for this gate')
            return action

        result = self.client.complete_json([{"role": "user", "content": gate_prompt(obs)}], validate)
        if isinstance(result, Action):
            return result
        self.invalid += 1
        return Action.noop()
