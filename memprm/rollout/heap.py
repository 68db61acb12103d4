"""Hand freed heap memory back to the operating system between rollout batches.

An episode's exam and audit allocate and free many mid-sized buffers (retrieval candidate lists, reader
contexts, tokenizer outputs, small tensors). glibc's ``free`` returns memory to the OS only from the top of
the heap, so the freed holes stay in the process: on a tiny synthetic config the resident size grew 37 MiB per
GRPO batch without a trim and 1.6 MiB with one (``python tools/bench_heap.py``), which over a few hundred
batches is many GiB of memory that no object holds. ``malloc_trim(0)`` releases those free pages.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os


@functools.cache
def _trim():
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    fn = getattr(ctypes.CDLL(name), "malloc_trim", None)  # glibc only (not musl, macOS or Windows)
    if fn is not None:
        fn.argtypes, fn.restype = [ctypes.c_size_t], ctypes.c_int
    return fn


def release_freed_memory() -> bool:
    """Return the heap's free pages to the OS (glibc ``malloc_trim(0)``). False where the C library has no
    ``malloc_trim``: the call is then a no-op and memory behaves as the platform's allocator decides."""
    fn = _trim()
    if fn is None:
        return False
    fn(0)
    return True


def resident_mib() -> float:
    """This process's resident set size in MiB (Linux ``/proc/self/statm``)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
