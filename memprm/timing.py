"""Wall time split by key: what the rollout tables and ``timings.json`` are made of."""

from __future__ import annotations

import time


class Stopwatch:
    """Accumulated seconds per key (``with sw("policy"): ...``)."""

    def __init__(self):
        self.seconds: dict[str, float] = {}

    def __call__(self, key: str):
        sw = self

        class _Span:
            def __enter__(self):
                self.t0 = time.perf_counter()

            def __exit__(self, *exc):
                sw.seconds[key] = sw.seconds.get(key, 0.0) + time.perf_counter() - self.t0

        return _Span()
