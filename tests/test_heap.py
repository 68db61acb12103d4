"""release_freed_memory gives freed heap pages back (glibc); the rollout loader calls it per batch."""

import platform

import numpy as np
import pytest

from memprm.rollout.heap import release_freed_memory, resident_mib


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc only")
def test_freed_fragmented_heap_is_returned_to_the_os():
    # 48 KiB buffers come from the heap (below glibc's mmap threshold); one kept in 50 pins the heap's top,
    # so free() alone cannot shrink it: ~190 MiB stays resident until the trim
    bufs = [np.ones(6000) for _ in range(4000)]
    keep = bufs[::50]
    del bufs
    before = resident_mib()
    assert release_freed_memory()
    after = resident_mib()
    assert before - after > 100, (before, after)
    assert len(keep) == 80
