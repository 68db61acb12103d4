"""``python -m memprm COMMAND``: the command-line entry point.

Every command takes ``--config FILE`` (a YAML file mirrored by :class:`memprm.config.MemprmConfig`) and dotted
overrides (``key.sub=value``) before or after it (:func:`parse_args`). ``fit`` stopped by Ctrl-C or SIGTERM
prints one line and exits with 130 or 143; the same command again resumes it.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence

from memprm.config import ConfigError, MemprmConfig, load_config
from memprm.data.records import DataFormatError
from memprm.llm.endpoint import LLMConfigError, LLMStop
from memprm.logs import configure_logging
from memprm.memory.embedder import EmbedderUnavailable


def _cmd_data(args: argparse.Namespace) -> int:
    from memprm.data.source import load_source

    cfg: MemprmConfig = load_config(args.config, args.overrides)
    splits = load_source(cfg.data, args.source)
    print(splits.report.format())
    print(f"\nsplits of {splits.source}:")
    print(f"  {'split':<16} {'dialogues':>9} {'sessions':>8} {'turns':>7} {'questions':>9}  by category")
    for name, dialogues in splits.splits.items():
        qs = [q for d in dialogues for q in d.questions]
        cats = Counter(q.category for q in qs)
        cat_text = ", ".join(f"{k} {v}" for k, v in sorted(cats.items()))
        sessions = sum(len(d.sessions) for d in dialogues)
        turns = sum(d.n_turns for d in dialogues)
        print(f"  {name:<16} {len(dialogues):>9} {sessions:>8} {turns:>7} {len(qs):>9}  {cat_text}")
    return 0


def _cmd_fit(args: argparse.Namespace) -> int:
    from memprm.callbacks.signal_stop import FitInterrupted
    from memprm.fit import fit

    try:
        fit(load_config(args.config, args.overrides))
    except FitInterrupted as exc:  # Ctrl-C / SIGTERM: a checkpoint was written, the same command resumes
        print(f"stopped: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0


def _cmd_inspect(args: argparse.Namespace) -> int:
    from memprm.inspect import InspectError, write_page

    try:
        path = write_page(args.run, args.out, args.dialogue)
    except InspectError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB); open it in a browser (no server needed)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m memprm",
        description="Hindsight Memory-PRM: memory management trained with GRPO on auditable hindsight credit.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    data = sub.add_parser("data", help="load a data source and print its load report and split sizes")
    data.add_argument("source", choices=["synthetic", "locomo", "longmemeval"])
    data.set_defaults(func=_cmd_data)
    fit = sub.add_parser("fit", help="run the training pipeline (default: the embedded synthetic default)")
    fit.set_defaults(func=_cmd_fit)
    inspect = sub.add_parser("inspect", help="write a run's audit trail as one self-contained HTML page")
    inspect.add_argument("run", help="a run folder of `fit` (with test_audit.jsonl)")
    inspect.add_argument("--dialogue", default=None, help="detail only this test dialogue")
    inspect.add_argument("--out", default=None, help="output file (default: RUN/inspect.html)")
    inspect.set_defaults(func=_cmd_inspect)
    for p in (data, fit):
        p.add_argument("--config", default=None, help="YAML config file (see configs/)")
        p.add_argument("overrides", nargs="*", help="dotted overrides, e.g. data.categories=[1,2,3,4,5]")
    return parser


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line as parsed by :func:`build_parser`, except that dotted overrides may also follow
    ``--config`` when some precede it (``fit a=1 --config F b=2``): all are kept in the order given, so a
    later one wins over an earlier one, and every one over the config file."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    options = [a for a in extra if a.startswith("-")]
    if options or (extra and not hasattr(args, "overrides")):
        parser.error(f"unrecognized arguments: {' '.join(options or extra)}")
    if extra:
        args.overrides = [*args.overrides, *extra]
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    configure_logging()
    try:
        return args.func(args)
    except (ConfigError, FileNotFoundError, DataFormatError, LLMConfigError, EmbedderUnavailable) as exc:
        print(f"error: {exc}", file=sys.stderr)  # bad input or setup: one line, no traceback
        return 2
    except LLMStop as exc:  # 401/403, or too many failed LLM calls in a batch: one line, no traceback
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
