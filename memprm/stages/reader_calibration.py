"""The extractive reader's abstention threshold, chosen on the dev calibration half before any exam."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from memprm.atomic import atomic_write_text
from memprm.env.calibration import Calibration, calibrate_abstention
from memprm.env.managers import noop_manager
from memprm.env.stack import Stack
from memprm.stages.markers import Markers, StageKey

log = logging.getLogger("memprm.stages")


def calibrate_reader(cfg, stack: Stack, splits, run_dir: Path | None = None, key: StageKey | None = None):
    """Choose the extractive reader's abstention threshold on the dev calibration half with the teacher's
    banks, or the verbatim-only banks (``reader.calibrate_with``; :mod:`memprm.env.calibration`) and set it on ``stack``'s reader; written to ``reader_calibration.json``.
    With ``key`` and a ``run_dir`` whose calibration marker holds its hash, the saved choice is applied
    instead. ``cfg``: a :class:`memprm.config.MemprmConfig`. Returns the :class:`Calibration`, or None when
    the reader is not calibrated (an LLM reader, or ``reader.calibrate_abstention`` off)."""
    if cfg.reader.kind != "extractive" or not cfg.reader.calibrate_abstention:
        return None
    path = None if run_dir is None else run_dir / "reader_calibration.json"
    markers = None if run_dir is None or key is None else Markers(run_dir)
    if markers is not None and markers.done(key, "reader calibration") and path.is_file():
        cal = Calibration(**json.loads(path.read_text()))
        stack.env.reader.overlap_weight, stack.env.reader.abstain_threshold = (
            cal.overlap_weight,
            cal.threshold,
        )
    else:
        manager = stack.teacher if cfg.reader.calibrate_with == "teacher" else noop_manager
        cal = calibrate_abstention(stack.env, splits["dev_calibration"], manager)
        if path is not None:
            atomic_write_text(path, json.dumps(cal.as_dict(), indent=2))
        if markers is not None:
            markers.write(key)
    log.info(
        "reader abstention threshold %.3f, overlap weight %s (dev calibration on %s banks: %d questions, %d unanswerable; "
        "accuracy %.3f vs %.3f never abstaining)",
        cal.threshold,
        cal.overlap_weight,
        cfg.reader.calibrate_with,
        cal.n_questions,
        cal.n_unanswerable,
        cal.accuracy,
        cal.accuracy_never,
    )
    return cal
