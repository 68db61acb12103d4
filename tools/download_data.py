"""Download LoCoMo and LongMemEval from their official public sources into a data root.

    python tools/download_data.py --root ./data            # then: export MEMPRM_DATA=./data

Layout written (the same as the loaders' defaults in ``memprm/data/source.py``):
    locomo/locomo10.json                                    snap-research/locomo, CC BY-NC 4.0
    longmemeval/longmemeval_oracle.json                     xiaowu0162/longmemeval-cleaned, MIT
    longmemeval/longmemeval_s_cleaned.json                  (with --with-s; about 265 MB)
    longmemeval/splits/membuilder_longmemeval_splits.json   Zh1yuShen/MemBuilder, MIT

LoCoMo is checked against the sha256 of the snapshot memprm was developed on; a mismatch is reported, not
fatal (upstream may have changed the file). Needs a network; never run by the tests.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
import urllib.request
from pathlib import Path

LOCOMO_SHA256 = "79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4"
FILES = {
    "locomo/locomo10.json": (
        "https://raw.githubusercontent.com/snap-research/locomo/main/data/locomo10.json",
        LOCOMO_SHA256,
    ),
    "longmemeval/longmemeval_oracle.json": (
        "https://huggingface.co/datasets/xiaowu0162/longmemeval-cleaned/resolve/main/longmemeval_oracle.json",
        None,
    ),
    "longmemeval/splits/membuilder_longmemeval_splits.json": (
        "https://raw.githubusercontent.com/Zh1yuShen/MemBuilder/main/data/longmemeval/splits/longmemeval_splits.json",
        None,
    ),
}
S_FILE = (
    "longmemeval/longmemeval_s_cleaned.json",
    "https://huggingface.co/datasets/xiaowu0162/longmemeval-cleaned/resolve/main/longmemeval_s_cleaned.json",
)


def fetch(url: str, dest: Path) -> str:
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(dest.suffix + ".part")
    h = hashlib.sha256()
    with urllib.request.urlopen(url, timeout=60) as resp, open(tmp, "wb") as out:
        total = int(resp.headers.get("Content-Length") or 0)
        done = 0
        while chunk := resp.read(1 << 20):
            out.write(chunk)
            h.update(chunk)
            done += len(chunk)
            if total:
                print(f"\r  {dest.name}: {done / total:6.1%} of {total / 1e6:.1f} MB", end="", flush=True)
    print()
    shutil.move(tmp, dest)
    return h.hexdigest()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", required=True, type=Path)
    ap.add_argument("--with-s", action="store_true", help="also fetch LongMemEval_S (about 265 MB)")
    ap.add_argument("--force", action="store_true", help="re-download files that exist")
    args = ap.parse_args()
    files = dict(FILES)
    if args.with_s:
        files[S_FILE[0]] = (S_FILE[1], None)
    for rel, (url, sha) in files.items():
        dest = args.root / rel
        if dest.exists() and not args.force:
            print(f"exists: {dest}")
            continue
        print(f"fetching {url}")
        digest = fetch(url, dest)
        if sha and digest != sha:
            print(f"  warning: sha256 {digest} differs from the snapshot memprm was built on ({sha})")
    print(f"done; export MEMPRM_DATA={args.root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
