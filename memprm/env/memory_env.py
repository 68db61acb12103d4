"""MemoryEnv: walks a dialogue window by window, opening gates, applying actions, examining and auditing.

One episode = one session window. For a group of rollouts the caller forks the dialogue's mainline bank once
per rollout, plays :meth:`MemoryEnv.play_window` on each fork with its policy, prepares the window's quiz once
(:meth:`prepare_quiz`: probes, the three probe gates on the shared verbatim reference bank, evidence unlocking)
and examines every rollout's bank with the same quiz and one shared :class:`ReaderCache`
(:meth:`examine`). The mainline then advances with one rollout's bank, chosen at random (not the best).

Invalid actions (merge into an unknown entry or another layer, empty content) are applied as Noops and
counted, never dropped: the step still exists with its op id.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from memprm.credit.tiers import Neighbour, TeacherDecision
from memprm.credit.types import Step
from memprm.data.records import Dialogue, Session
from memprm.env.audit import AuditResult, audit_exam, episode_entries
from memprm.env.exam import ExamResult, Quiz, ReaderCache, assemble_quiz, run_exam
from memprm.env.gates import Action, EnvConfig, Observation, apply_action, is_gateable
from memprm.env.probe_gates import GateReport, gate_probes
from memprm.env.render_ops import render_gate
from memprm.llm.notes import CachedNotes, NoteWriter, notes_for
from memprm.llm.roles import Judge, ProbeGenerator, Reader
from memprm.llm.rule_notes import RuleNoteWriter
from memprm.memory.bank import BankError, Entry, MemoryBank
from memprm.memory.retriever import Retriever

Manager = Callable[[Observation], Action]  # a memory manager: what to do at one gate


@dataclass(frozen=True)
class WindowPlay:
    """What happened at the gates of one window on one bank."""

    decisions: tuple[TeacherDecision, ...]  # decision-time record of every gate, in order
    steps: tuple[Step, ...]
    #: the critic's input for each step: the applied operation rendered with the bank as it was then.
    critic_inputs: tuple[str, ...]
    invalid_actions: int


@dataclass(frozen=True)
class PreparedQuiz:
    quiz: Quiz
    gates: GateReport
    n_probes_generated: int


def render_chain(entry: Entry) -> str:
    """An entry as a manager sees it at a gate: versions oldest first, with their dates."""
    parts = [f"({(v.timestamp or 'undated')[:10]}) {v.content}" for v in entry.versions]
    return " | ".join(parts)


def session_timestamp(session: Session) -> str | None:
    return session.datetime.isoformat() if session.datetime else None


class MemoryEnv:
    def __init__(
        self,
        cfg: EnvConfig,
        retriever: Retriever,
        reader: Reader,
        judge: Judge,
        probes: ProbeGenerator,
        notes: NoteWriter | None = None,
    ):
        self.cfg, self.retriever, self.reader, self.judge, self.probes = cfg, retriever, reader, judge, probes
        #: the note writer whose notes every observation carries (default: the offline rule writer).
        self.notes = notes if notes is not None else CachedNotes(RuleNoteWriter())

    # ------------------------------------------------------------------------------------------ gates
    def observe(
        self, dialogue: Dialogue, session: Session, pos: int, layer: str, bank: MemoryBank
    ) -> Observation:
        turn = session.turns[pos]
        context = tuple(t.render for t in session.turns[max(0, pos - self.cfg.context_turns) : pos])
        hits = (
            self.retriever.retrieve(bank, turn.render, {layer: self.cfg.neighbours}).hits
            if self.cfg.neighbours
            else ()
        )
        neighbours = tuple(Neighbour(h.entry.id, h.layer, render_chain(h.entry), h.entry.key) for h in hits)
        ts = session_timestamp(session)
        notes = notes_for(self.notes, turn, ts, layer)
        return Observation(dialogue.id, session.index, turn, ts, layer, context, neighbours, notes)

    def play_window(self, dialogue: Dialogue, window: int, bank: MemoryBank, manager: Manager) -> WindowPlay:
        """Play the gates of session ``window`` (1-based index into ``dialogue.sessions``) on ``bank``."""
        session = _session(dialogue, window)
        informative = _informative_turns(dialogue)
        decisions, steps, inputs, invalid = [], [], [], 0
        for pos, turn in enumerate(session.turns):
            if is_gateable(turn, self.cfg.gate_min_words):
                for layer in self.cfg.layers:
                    obs = self.observe(dialogue, session, pos, layer, bank)
                    action = manager(obs)
                    rendered = render_gate(obs, action, bank)
                    try:
                        rec = apply_action(bank, obs, action)
                    except BankError:
                        invalid += 1
                        action = Action.noop()
                        rendered = render_gate(obs, action, bank)
                        rec = bank.noop(layer, turn_id=turn.id)
                    inputs.append(rendered)
                    decisions.append(
                        TeacherDecision(
                            op_id=rec.op_id,
                            kind=rec.kind,
                            layer=layer,
                            turn_id=turn.id,
                            turn_text=turn.render,
                            context_turns=obs.context,
                            content=rec.content,
                            key=action.key if rec.kind == "write" else "",
                            target_entry_id=rec.entry_id,
                            neighbours=obs.neighbours,
                            turn_is_informative=turn.id in informative,
                        )
                    )
                    steps.append(Step(rec.op_id, rec.kind, layer, turn.id))
            bank.write_verbatim(turn.render, turn_id=turn.id, timestamp=session_timestamp(session))
        return WindowPlay(tuple(decisions), tuple(steps), tuple(inputs), invalid)

    # ------------------------------------------------------------------------------------------ exams
    def prepare_quiz(
        self,
        dialogue: Dialogue,
        window: int,
        reference: MemoryBank,
        cache: ReaderCache,
        cumulative: bool = False,
        through: int | None = None,
    ) -> PreparedQuiz:
        """The window's quiz. ``reference``: the verbatim layer through the end of this window.

        ``cumulative``: the official questions are every question unlocked *so far* (by this window or an
        earlier one), re-asked of the bank as it is now, instead of only those this window unlocks; at the
        dialogue's last window that is every question of the dialogue, the test protocol's exam. The probes
        stay the window's own. ``through`` (cumulative only): unlock through that later session instead
        (``rollout.horizon``; ``reference`` then runs through it)."""
        session = _session(dialogue, window)
        generated = self.probes.generate(dialogue, session.turns)
        report = gate_probes(generated, reference, cache, self.retriever)
        last = session.index if through is None else _session(dialogue, through).index
        if through is not None and (not cumulative or last < session.index):
            raise ValueError(f"prepare_quiz: through={through} needs cumulative=True and a session >= {window}")
        before = [t.id for s in dialogue.sessions if s.index < session.index for t in s.turns]
        if cumulative:
            before, now = [], [t.id for s in dialogue.sessions if s.index <= last for t in s.turns]
        else:
            now = [t.id for t in session.turns]
        quiz = assemble_quiz(
            dialogue, report.kept, before, now, self.cfg.final_session_weight
        )
        return PreparedQuiz(quiz, report, len(generated))

    def examine(
        self,
        bank: MemoryBank,
        quiz: Quiz,
        cache: ReaderCache,
        play: WindowPlay | None = None,
        deletion_tests: bool = True,
    ) -> tuple[ExamResult, AuditResult]:
        """Exam + audit of ``bank``. With ``play`` (online), deletion tests are limited to the entries the
        episode's operations touched (:func:`memprm.env.audit.episode_entries`); ``deletion_tests=False``
        runs none (records keep ``flips`` / ``cures`` untested: the ``gold`` credit arm needs no audit)."""
        exam = run_exam(bank, quiz, self.reader, self.judge, self.retriever, cache)
        only = episode_entries(bank, [s.op_id for s in play.steps]) if play is not None else None
        if not deletion_tests:
            only = frozenset()
        return exam, audit_exam(bank, exam, self.reader, self.judge, self.retriever, cache, only_entries=only)


def advance_reference(reference: MemoryBank, dialogue: Dialogue, window: int) -> None:
    """Append session ``window``'s turns to the verbatim reference bank."""
    session = _session(dialogue, window)
    for turn in session.turns:
        reference.write_verbatim(turn.render, turn_id=turn.id, timestamp=session_timestamp(session))


def _session(dialogue: Dialogue, window: int) -> Session:
    for s in dialogue.sessions:
        if s.index == window:
            return s
    raise ValueError(
        f"dialogue {dialogue.id} has no session {window}; sessions: {[s.index for s in dialogue.sessions]}"
    )


def _informative_turns(dialogue: Dialogue) -> frozenset[str]:
    """Turns that carry a fact annotation or are evidence of a question (labels only, never features)."""
    facts = {t.id for t in dialogue.turns() if t.facts}
    return frozenset(facts | {e for q in dialogue.questions for e in q.evidence})
