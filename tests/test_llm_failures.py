"""A failure is never an answer: fault modes on the loopback server, the audit's failure and citation rules,
bounded waiting, the failure-share stop, the run folder's counters, logging and progress bars."""

from __future__ import annotations

import json
import logging
import threading
import time

import pytest
from helpers.chat_server import ChatServer, after, always, exam_responder, hang, ok, status
from helpers.fault_scenarios import FACTS, MODES, Mode, make_bank, positive_credit, run_mode, toxic

from memprm.data.records import Question
from memprm.env.audit import AuditCounts, audit_exam, exclude_questions
from memprm.env.exam import ExamResult, ItemResult, Quiz, QuizItem, ReaderCache, concurrency, run_exam
from memprm.env.probe_gates import gate_probes
from memprm.llm import failures
from memprm.llm.client import LLMClient
from memprm.llm.endpoint import Failure, LLMAuthError, LLMConfig, LLMRoles
from memprm.llm.failures import (
    FailureGuard,
    FailureShare,
    LLMFailureRateError,
    batch_failure_share,
    stage_counters,
    stop_if_too_many,
)
from memprm.llm.judge import F1Judge
from memprm.llm.reader import LLMReader
from memprm.llm.roles import ABSTAIN_ANSWER, ReaderAnswer, Verdict
from memprm.llm.stats import RoleStats, stats_for
from memprm.logs import configure_logging, progress, set_progress_bars
from memprm.memory import HashingEmbedder, MemoryBank, Retriever, RetrieverConfig
from memprm.memory.retriever import Retrieval
from memprm.rollout.runner import failure_stats

MODE = {m.name: m for m in MODES}
HELLO = [{"role": "user", "content": "hello"}]


def cfg_for(url: str, **kw) -> LLMConfig:
    base = dict(
        base_url=url, model="m", model_version="v1", api_key_env=None, timeout_s=1.0, max_retries=2,
        backoff_base_s=0.001, backoff_max_s=0.01, question_timeout_s=5.0, max_concurrency=4,
    )  # fmt: skip
    base.update(kw)
    return LLMConfig(**base)


# ----------------------------------------------------------------------------- fault modes, exam + audit
@pytest.fixture(scope="module")
def ok_run():
    return run_mode(MODE["ok"], max_concurrency=1)


def test_fault_free_run_is_the_reference(ok_run):
    c = ok_run.audit.counts
    # q1 and q2 right, q3 read from the POISON entry (wrong); alpha flips q1, removing the poison cures q3
    assert [r.correct for r in ok_run.exam.results] == [True, True, False]
    assert (c.answered, c.deletion_tests, c.flips, c.cures, c.failed_deletion_tests) == (3, 3, 1, 1, 0)
    _, ids = make_bank()
    assert positive_credit(list(ok_run.audit.records))[ids["alpha"]] == pytest.approx(1.0)
    assert toxic(list(ok_run.audit.records)) == {ids["poison"]}


@pytest.mark.parametrize("name", [m.name for m in MODES if m.name not in ("ok", "401 always")])
def test_no_fault_mode_gives_credit_the_fault_free_run_does_not(name, ok_run):
    run = run_mode(MODE[name])
    pos, ref = positive_credit(list(run.audit.records)), positive_credit(list(ok_run.audit.records))
    assert all(pos[e] <= ref.get(e, 0.0) + 1e-12 for e in pos), (pos, ref)
    assert toxic(list(run.audit.records)) <= toxic(list(ok_run.audit.records))
    c = run.audit.counts
    assert c.answered + c.failed_answers + c.failed_verdicts == c.questions == 3
    failed_calls = run.reader["failures"] + run.judge["failures"]
    assert failed_calls >= c.failed_answers + c.failed_verdicts  # every failed item is a counted failed call
    scored = {r.item.question.id for r in run.exam.results if not r.failed}
    assert {r.question_id for r in run.audit.records} <= scored  # failed items have no record


@pytest.mark.parametrize("name", ["500 always", "hang (5 s > 0.3 s timeout)", "bad JSON reply", "400 always"])
def test_a_dead_reader_scores_nothing_and_is_counted_by_kind(name):
    run = run_mode(MODE[name])
    assert run.audit.records == () and run.exam.all_failed and run.exam.accuracy == 0.0
    assert run.audit.counts.failed_answers == 3 and run.audit.failed_probe_anchors == frozenset()
    kind = {"500 always": "transport", "hang (5 s > 0.3 s timeout)": "transport", "bad JSON reply": "format",
            "400 always": "request"}[name]  # fmt: skip
    assert run.reader["failures"] == run.reader[f"failures_{kind}"] == 3
    assert run.judge["questions"] == 0  # a failed answer is not judged


def test_500_after_the_first_pass_gives_no_flip_and_no_cure(ok_run):
    # one question at a time: the first pass is 3 reader + 3 judge requests, every later one is a 500
    run = run_mode(Mode("500 after 6", after(6, status(500))), max_concurrency=1)
    c = run.audit.counts
    assert (c.answered, c.deletion_tests, c.failed_deletion_tests, c.flips, c.cures) == (3, 3, 3, 0, 0)
    assert all(r.flips is None and r.cures is None for r in run.audit.records)
    _, ids = make_bank()
    assert positive_credit(list(run.audit.records))[ids["alpha"]] == pytest.approx(0.6)  # retrieved + cited
    assert run.reader["failures_transport"] == 3


def test_a_question_failed_in_one_rollout_is_dropped_from_the_whole_group(ok_run):
    exam, audit = ok_run.exam, ok_run.audit
    assert exclude_questions(audit, exam, set()) is audit
    same = exclude_questions(audit, exam, {"q3"})  # q3 (the wrong one) failed in another rollout
    assert {r.question_id for r in same.records} == {"q1", "q2"} and same.correct == {"q1": True, "q2": True}
    assert same.accuracy == 1.0 and same.counts == audit.counts
    assert exclude_questions(audit, exam, {"q1"}).accuracy == 0.5


def test_forged_ids_are_dropped_and_counted(ok_run):
    run = run_mode(MODE["forged citation ids"])
    assert run.audit.counts.dropped_citations == 3
    assert run.audit.records == ok_run.audit.records


def test_missing_cited_field_is_counted_and_cites_nothing():
    run = run_mode(MODE["no cited field"])
    assert run.audit.counts.missing_citations == 3 and run.audit.counts.deletion_tests == 0
    assert not any(r.cited for r in run.audit.records)
    assert failure_stats(run.audit.counts, 0)["reader/missing_citations"] == 3.0


def test_cite_everything_cannot_raise_credit_above_what_the_deletion_test_supports(ok_run):
    run = run_mode(MODE["cite everything"])  # 5 entries retrieved per question, all cited
    c = run.audit.counts
    assert c.citation_cap_hits == 3 and c.cited_share == pytest.approx(1.0)
    assert c.deletion_tests == 9  # the first 3 (the cap) of each answer's citations, not all 5
    flipped = {r.entry_id for r in run.audit.records if r.flips}
    for e, u in positive_credit(list(run.audit.records)).items():
        assert u == pytest.approx(0.3 + 0.7 * (e in flipped))  # retrieved, plus cited+flip only if it flips
    ref = positive_credit(list(ok_run.audit.records))
    assert all(u <= ref[e] + 1e-12 for e, u in positive_credit(list(run.audit.records)).items())
    # with a cap that does not bind, the same reader lifts entries the deletion test does not support
    loose = run_mode(MODE["cite everything"], max_citations=10)
    lifted = {e for e, u in positive_credit(list(loose.audit.records)).items() if u > ref.get(e, 0.0) + 1e-12}
    assert lifted and loose.audit.counts.citation_cap_hits == 0 and loose.audit.counts.deletion_tests == 15


def _retriever(width: int) -> Retriever:
    return Retriever(
        HashingEmbedder(dim=8192),
        RetrieverConfig(widths={"event": width, "profile": 1, "verbatim": 1}, paths=("event",)),
    )


def test_401_and_403_stop_at_once_with_one_line():
    for code in (401, 403):
        with ChatServer(fault=always(status(code, message="invalid key"))) as srv:
            client = LLMClient(cfg_for(srv.base_url), "judge", stats=RoleStats("judge"))
            with pytest.raises(LLMAuthError, match=f"HTTP {code}") as info:
                client.complete(HELLO)
            assert "\n" not in str(info.value) and srv.base_url in str(info.value)
            assert len(srv.chat_requests) == 1


def test_400_fails_only_its_request():
    with ChatServer() as srv:
        srv.script(status(400, message="maximum context length exceeded"))
        client = LLMClient(cfg_for(srv.base_url), "reader", stats=RoleStats("reader"))
        out = client.complete(HELLO)
        assert isinstance(out, Failure) and out.kind == "request" and "HTTP 400" in out.reason
        assert client.complete(HELLO).text == "hello"  # the next question is answered
        s = client.stats
        assert (s["questions"], s["failures"], s["failures_request"], s["retries"]) == (2, 1, 1, 0)
        assert srv.base_url in s.last_error and "HTTP 400" in s.last_error


# ----------------------------------------------------------------------------- bounded waiting, concurrency
def test_a_hung_endpoint_costs_at_most_the_question_budget():
    with ChatServer(fault=always(hang(10.0))) as srv:
        cfg = cfg_for(srv.base_url, timeout_s=0.4, max_retries=5, question_timeout_s=1.0)
        client = LLMClient(cfg, "reader", stats=RoleStats("reader"))
        t0 = time.monotonic()
        out = client.complete_json(HELLO, dict)
        took = time.monotonic() - t0
    assert isinstance(out, Failure) and out.kind == "transport" and "question_timeout_s" in out.reason
    assert 0.9 <= took < 1.5  # 0.4 + 0.4 + the 0.2 left, not 6 × 0.4
    assert client.stats["http_requests"] == 3


def test_defaults_bound_a_dead_endpoint_to_a_minute_per_question():
    d = LLMConfig("http://x/v1", "m", "v")
    assert d.question_timeout_s == 60.0 and d.timeout_s <= d.question_timeout_s
    assert (
        d.max_retries + 1
    ) * d.timeout_s > d.question_timeout_s  # the budget, not the count, is what binds


def test_exam_sends_questions_concurrently_with_results_keyed_by_question():
    bank, _ = make_bank()
    quiz = Quiz(
        tuple(QuizItem(Question(f"q{i}", t, a, "single-hop", ("D1:1",)), 1.0, "official")
              for i, (t, (_, a)) in enumerate(FACTS.items()))
    )  # fmt: skip
    out = {}
    for conc in (1, 3):
        with ChatServer(responder=exam_responder(FACTS), latency_s=0.2) as srv:
            reader = LLMReader(
                LLMClient(cfg_for(srv.base_url, max_concurrency=conc), "r", stats=RoleStats("r"))
            )
            exam = run_exam(bank, quiz, reader, F1Judge(), _retriever(5))
            out[conc] = ([(r.item.question.id, r.answer, r.verdict) for r in exam.results], srv.max_in_flight)
    assert out[1][0] == out[3][0] and out[1][1] == 1 and 1 <= out[3][1] <= 3


def test_offline_roles_keep_the_sequential_path_in_the_callers_thread():
    seen = []

    class Reader:
        def answer(self, question, retrieval):
            seen.append(threading.get_ident())
            return ReaderAnswer(question.answer, ())

    assert concurrency(Reader()) == 1 and concurrency(F1Judge()) == 1
    cache = ReaderCache(Reader(), F1Judge())
    qs = [Question(f"q{i}", f"text {i}", "a", "single-hop") for i in range(5)]
    cache.answer_many([(q, Retrieval(q.text, ())) for q in qs])
    assert seen == [threading.get_ident()] * 5 and cache.reader_calls == 5 and cache.judge_calls == 5


# ----------------------------------------------------------------------------- the rules, on test doubles
def _item(qid: str, weight: float, correct: bool, failed_answer=False, failed_verdict=False) -> ItemResult:
    q = Question(qid, "?", "a", "single-hop")
    return ItemResult(
        QuizItem(q, weight, "official"),
        Retrieval("?", ()),
        ReaderAnswer("a", (), failed=failed_answer),
        Verdict(correct, 1.0 * correct, failed=failed_verdict),
    )


def test_accuracy_is_over_the_items_that_did_not_fail():
    exam = ExamResult((_item("a", 2.0, True), _item("b", 1.0, False), _item("c", 1.0, True, failed_answer=True),
                       _item("d", 3.0, True, failed_verdict=True)))  # fmt: skip
    assert exam.accuracy == pytest.approx(2 / 3) and exam.n_failed == 2 and not exam.all_failed
    assert [r.correct for r in exam.results] == [True, False, False, False]
    assert ExamResult((_item("c", 1.0, True, failed_answer=True),)).all_failed


class _Flaky:
    """Answers right citing the first retrieved entry; fails when the input lacks entry ``needed``."""

    def __init__(self, needed: str):
        self.needed = needed

    def answer(self, question, retrieval):
        if self.needed not in retrieval.entry_ids:
            return ReaderAnswer("", (), failed=True)
        return ReaderAnswer(question.answer, retrieval.entry_ids[:1])


def test_failed_deletion_re_answer_is_no_flip():
    bank = MemoryBank()
    e = bank.write("event", "biscuit dog story alpha").entry_id
    bank.write("event", "biscuit dog story other")
    quiz = Quiz((QuizItem(Question("q", "biscuit dog story alpha", "Biscuit", "single-hop"), 1.0, "probe"),))
    reader, judge, ret = _Flaky(e), F1Judge(), _retriever(2)
    cache = ReaderCache(reader, judge)
    exam = run_exam(bank, quiz, reader, judge, ret, cache)
    assert exam.results[0].correct and exam.results[0].answer.cited == (e,)
    audit = audit_exam(bank, exam, reader, judge, ret, cache)
    rec = next(r for r in audit.records if r.entry_id == e)
    assert rec.cited and rec.flips is None  # tested, the re-answer failed: untested, no flip
    assert audit.counts.failed_deletion_tests == 1 and audit.counts.flips == 0


def test_a_failed_probe_answer_is_no_failed_probe_anchor():
    bank = MemoryBank()
    bank.write("event", "biscuit dog story alpha")
    probe = Question("p", "biscuit dog story", "a", "probe", ("D1:1",))
    exam = ExamResult((ItemResult(QuizItem(probe, 1.0, "probe"), Retrieval("?", ()),
                                  ReaderAnswer("", (), failed=True), Verdict(False, 0.0)),))  # fmt: skip
    audit = audit_exam(bank, exam, _Flaky("x"), F1Judge(), _retriever(1))
    assert audit.failed_probe_anchors == frozenset() and audit.counts.failed_answers == 1
    assert audit.records == () and audit.correct == {}


def test_probe_gates_drop_a_probe_whose_gate_answer_failed():
    ref = MemoryBank()
    anchor = ref.write_verbatim("Ana: I adopted a dog named Biscuit", turn_id="D1:1")
    ref.write_verbatim("Bo: my sister lives in Lisbon", turn_id="D1:2")

    class ClosedBookFails:  # right with memory, a failed call closed-book (would "pass" gate 2 as a wrong)
        def answer(self, question, retrieval):
            if not retrieval.hits:
                return ReaderAnswer("", (), failed=True)
            return ReaderAnswer("Biscuit" if anchor.entry_id in retrieval.entry_ids else ABSTAIN_ANSWER, ())

    probes = [Question("p1", "Ana adopted a dog named what?", "Biscuit", "probe", ("D1:1",)),
              Question("p2", "Unknown anchor?", "x", "probe", ("D9:9",))]  # fmt: skip
    verbatim = Retriever(
        HashingEmbedder(dim=8192),
        RetrieverConfig(widths={"event": 1, "profile": 1, "verbatim": 1}, paths=("verbatim",)),
    )
    rep = gate_probes(probes, ref, ReaderCache(ClosedBookFails(), F1Judge()), verbatim)
    assert rep.kept == () and rep.failed == 1 and rep.unknown_anchor == 1
    assert (rep.gate1, rep.gate2, rep.gate3) == (0, 0, 0)
    assert rep.rates()["failed_share"] == 0.5 and rep.rates()["gate2_pass"] == 0.0


def test_failure_stats_sum_audits_of_a_group():
    a = AuditCounts(questions=3, failed_answers=1, answered=2, cited_share_sum=1.0, missing_citations=1)
    b = AuditCounts(
        questions=2, failed_deletion_tests=2, answered=2, cited_share_sum=0.5, citation_cap_hits=1
    )
    a.add(b)
    s = failure_stats(a, failed_probes=4)
    assert s["audit/failed_answers"] == 1 and s["audit/failed_deletion_tests"] == 2
    assert s["audit/citation_cap_hits"] == 1 and s["reader/missing_citations"] == 1
    assert s["audit/cited_share"] == pytest.approx(1.5 / 4) and s["probe/failed"] == 4


# ----------------------------------------------------------------------------- the failure-share stop
def test_failure_share_stop_is_strictly_above_the_limit():
    assert stop_if_too_many(FailureShare(10, 2), "b", 0.2).share == 0.2  # 20% is not above 20%
    with pytest.raises(LLMFailureRateError, match=r"3 of 10 LLM questions failed in batch 7 \(30% > "):
        stop_if_too_many(FailureShare(10, 3), "batch 7", 0.2)
    assert stop_if_too_many(FailureShare(0, 0), "b", 0.0).share == 0.0  # nothing asked: never stops
    assert batch_failure_share([{"llm/questions": 4.0, "llm/failures": 1.0}, {"llm/questions": 6.0}, {}]) == (
        FailureShare(10, 1)
    )


def test_failure_guard_names_the_endpoint_and_the_last_error():
    with ChatServer(fault=after(2, status(503, message="overloaded"))) as srv:
        url = srv.base_url
        client = LLMClient(cfg_for(url, max_retries=0), "guard-test-reader")
        guard = FailureGuard(max_share=0.2)
        for _ in range(2):
            client.complete(HELLO)
        assert guard.check("batch 0") == FailureShare(2, 0)
        for _ in range(2):
            client.complete(HELLO)
        with pytest.raises(LLMFailureRateError) as info:
            guard.check("batch 1")
    msg = str(info.value)
    assert "\n" not in msg and "2 of 2 LLM questions failed in batch 1" in msg
    assert f"guard-test-reader at {url}: transport: HTTP 503" in msg
    assert guard.last_change["guard-test-reader"]["failures_transport"] == 2


def test_grpo_callback_stops_before_training_on_a_failed_batch():
    from types import SimpleNamespace

    from memprm.callbacks.llm_failures import LLMFailureStop
    from memprm.rollout.batches import GroupBatch

    def group(q: float, f: float) -> GroupBatch:
        return GroupBatch("d1", 2, (), 0, 0, {"llm/questions": q, "llm/failures": f})

    stop, trainer = LLMFailureStop(0.2), SimpleNamespace(global_step=5)
    stop.on_train_batch_start(trainer, None, [group(10, 1), group(10, 3)], 0)  # 4 of 20 = 20%
    with pytest.raises(LLMFailureRateError, match=r"GRPO batch 1 \(step 5; d1 window 2, d1 window 2\)"):
        stop.on_train_batch_start(trainer, None, [group(10, 1), group(10, 4)], 1)
    stop.on_train_batch_start(trainer, None, [group(0, 0)], 2)  # offline: no LLM question, never stops


def test_max_failure_share_is_validated():
    assert LLMRoles().max_failure_share == 0.2
    with pytest.raises(ValueError, match="llm.max_failure_share"):
        LLMRoles(max_failure_share=1.5)


def test_stage_counters_are_written_also_when_the_stage_stops(tmp_path):
    role = "stage-counter-test"
    with ChatServer(fault=always(status(500))) as srv:
        url = srv.base_url
        client = LLMClient(cfg_for(url, max_retries=0), role)
        with stage_counters(tmp_path, "one"):
            client.complete(HELLO)
            failures.LEDGER.add(deletion_tests_failed=2)
        with pytest.raises(RuntimeError), stage_counters(tmp_path, "two"):
            client.complete(HELLO)
            raise RuntimeError("stop")
    data = json.loads((tmp_path / "llm_counters.json").read_text())
    assert set(data) == {"one", "two"}
    assert (
        data["one"]["llm"][role]["failures_transport"] == 1
        and data["one"]["outcomes"]["deletion_tests_failed"] == 2
    )
    assert (
        data["two"]["llm"][role]["questions"] == 1 and data["two"]["outcomes"]["deletion_tests_failed"] == 0
    )
    assert url in data["two"]["last_error"]
    assert stats_for(role)["failures"] == 2


# ----------------------------------------------------------------------------- logging and progress bars
def test_memprm_info_reaches_the_console_once(capsys):
    logger = logging.getLogger("memprm")
    level = logger.level
    try:
        configure_logging()
        configure_logging()  # idempotent
        handlers = [h for h in logger.handlers if h.get_name() == "memprm-console"]
        logging.getLogger("memprm.fit").info("teacher trajectories reused")
        logging.getLogger("memprm.fit").debug("not shown")
        err = capsys.readouterr().err
        assert len(handlers) == 1 and err.count("INFO memprm.fit: teacher trajectories reused") == 1
        assert "not shown" not in err
    finally:
        for h in [h for h in logger.handlers if h.get_name() == "memprm-console"]:
            logger.removeHandler(h)
        logger.setLevel(level)


def test_progress_bars_follow_the_switch():
    try:
        set_progress_bars(False)
        assert progress(range(3), desc="x").disable
        set_progress_bars(True)
        assert (
            not progress(range(3), desc="x").disable and progress(range(3), desc="x", enabled=False).disable
        )
    finally:
        set_progress_bars(True)


def test_every_loop_of_the_package_uses_the_switch():
    import pathlib

    import memprm

    root = pathlib.Path(memprm.__file__).parent
    direct = [p.relative_to(root).as_posix() for p in root.rglob("*.py")
              if "import tqdm" in p.read_text() or "from tqdm" in p.read_text()]  # fmt: skip
    assert direct == ["logs.py"]


def test_server_script_comes_before_the_fault_schedule():
    with ChatServer(fault=always(status(500))) as srv:
        srv.script(ok("scripted"))
        assert LLMClient(cfg_for(srv.base_url), "x", stats=RoleStats("x")).complete(HELLO).text == "scripted"


# ----------------------------------------------------------------------------- a whole run
def test_fit_against_a_dead_endpoint_stops_with_one_line_and_writes_its_counters(tmp_path, capsys):
    from memprm.cli import main

    tiny = [
        "data.synthetic.n_dialogues=3", "data.synthetic.n_train=1", "data.synthetic.n_dev=1",
        "data.synthetic.sessions_per_dialogue=2", "data.synthetic.turns_per_session=8",
        "embedder.kind=hashing", "embedder.dim=128", "fit.stages=[critic]", f"output_dir={tmp_path}",
        "fit.run_name=dead", "reader.kind=llm",
    ]  # fmt: skip
    with ChatServer(fault=always(status(500, message="upstream down"))) as srv:
        url = srv.base_url
        endpoint = [f"llm.reader.{k}={v}" for k, v in dict(
            base_url=url, model="m", model_version="v1", api_key_env="null", timeout_s=10, max_retries=0,
        ).items()]  # fmt: skip
        code = main(["fit", *tiny, *endpoint])
        n_requests = len(srv.chat_requests)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1
    assert err[-1].startswith("error: ") and "llm.max_failure_share" in err[-1]
    assert (
        f"dialogue syn-000, window 1 (100% > llm.max_failure_share = 0.2); last error: reader at {url}: "
        "transport: HTTP 500" in err[-1]
    )
    counters = json.loads((tmp_path / "dead" / "llm_counters.json").read_text())["critic"]
    reader = counters["llm"]["reader"]
    # every question of the first teacher window failed, then the stop (a request that timed out before the
    # server took it is not in its log)
    assert reader["failures"] == reader["questions"] >= n_requests > 0
    assert counters["outcomes"]["quiz_answers_failed"] + counters["outcomes"]["gate_probes_failed"] > 0


def test_default_trainer_logs_every_step_of_a_manually_optimized_module(tmp_path):
    import torch
    from lightning.pytorch import LightningModule
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from torch.utils.data import DataLoader

    from memprm.stages.trainer import TrainerConfig, build_trainer

    class Tiny(LightningModule):  # manual optimization, one log per step, like GRPOPolicyModule
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(1))
            self.automatic_optimization = False

        def training_step(self, batch, batch_idx):
            opt = self.optimizers()
            loss = (self.w - float(batch_idx)) ** 2
            opt.zero_grad()
            self.manual_backward(loss.sum())
            opt.step()
            self.log("task/accuracy", float(batch_idx), on_step=True, on_epoch=False, batch_size=1)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    trainer = build_trainer(TrainerConfig(progress_bar=False), tmp_path, "grpo", max_steps=6, max_epochs=1)
    trainer.fit(Tiny(), DataLoader(list(range(6)), batch_size=None))
    acc = EventAccumulator(str(tmp_path / "grpo"))
    acc.Reload()
    assert [e.value for e in acc.Scalars("task/accuracy")] == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]  # a curve of 6


def test_a_group_with_a_dead_reader_carries_its_failures_gets_no_credit_and_stops_grpo():
    from types import SimpleNamespace

    import numpy as np

    from memprm.callbacks.llm_failures import LLMFailureStop
    from memprm.config import load_config
    from memprm.credit import CreditConfig
    from memprm.data.synthetic import SyntheticConfig, generate_synthetic
    from memprm.env.policy import GateSample
    from memprm.env.stack import build_stack
    from memprm.rollout.runner import GroupRunner, RolloutConfig

    data = generate_synthetic(
        SyntheticConfig(n_dialogues=3, n_train=2, n_dev=1, sessions_per_dialogue=2, turns_per_session=6)
    )
    stack = build_stack(load_config(None, ["embedder.kind=hashing", "embedder.dim=256"]))

    class TeacherActs:  # the heuristic teacher as the acting policy (writes entries; no model to run)
        def act(self, obs, greedy=False, generator=None):
            return stack.teacher(obs), GateSample(prompt="")

    with ChatServer(fault=always(status(500))) as srv:
        stack.env.reader = LLMReader(LLMClient(cfg_for(srv.base_url, max_retries=0), "group-test-reader"))
        runner = GroupRunner(stack.env, CreditConfig(), RolloutConfig(group_size=2))
        batch, _ = runner.run_group(
            data["train"][0], 1, MemoryBank(), MemoryBank(), TeacherActs(), np.random.default_rng(0)
        )
    s = batch.stats
    assert s["llm/failures"] == s["llm/questions"] == s["llm/group-test-reader/failures_transport"] > 0
    assert s["llm/failure_share"] == 1.0 and s["probe/failed"] > 0 and s["probe/failed_share"] == 1.0
    assert s["audit/group_dropped_questions"] == batch.quiz_size
    for r in batch.rollouts:  # nothing was measured, so nothing is credited or penalized
        assert r.task == 0.0 and not r.credit.any() and not r.miss.any() and r.stats["deletion_tests"] == 0
    with pytest.raises(LLMFailureRateError, match=r"GRPO batch 0 .* last error: group-test-reader at "):
        LLMFailureStop(0.2).on_train_batch_start(SimpleNamespace(global_step=0), None, [batch], 0)
