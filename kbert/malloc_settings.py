"""glibc malloc settings that keep large freed buffers for reuse instead of handing them back.

By default glibc serves allocations above a threshold (128 KB, raised dynamically up to 32 MB)
with fresh `mmap` pages and returns them to the system on `free`, and trims the heap's free top.
A BERT forward pass allocates and frees activations of several MB per layer, so every step can
fault in thousands of fresh pages, which the kernel zeroes. Whether a process falls into that
state depends on what ran before: after TensorFlow was imported, torch's feed-forward product of
all-MiniLM-L6-v2's shape (2,048 x 384 x 1,536) took about 6,000 page faults per step in some
processes and none in others. Measured on this project's 2-core CPU with and without these
settings (KBERT_MALLOC_DEFAULTS=1), alternating: `BertSentenceEncoder.encode` of 3,000 STS-B
sentences on torch 5.75-5.81 s against 5.86-6.25 s; bfloat16 products of bert_mini's shape after
the pretraining pipeline ran (`tools/bf16_after_pipeline.py`) 0.13-0.20 s against 0.61-0.73 s.
Fixed thresholds keep such buffers in the heap, where the next step reuses them; jemalloc and
tcmalloc, which Intel and PyTorch recommend for CPU inference, do the same. The cost: up to
`TRIM_THRESHOLD` of freed memory stays with the process.
"""

import ctypes
import os
import sys

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters
MMAP_THRESHOLD = 256 << 20  # bytes: smaller allocations come from the heap, not fresh mmap pages
TRIM_THRESHOLD = 1 << 30  # bytes of free heap top kept before trimming
GLIBC_VARIABLES = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")
OPT_OUT = "KBERT_MALLOC_DEFAULTS"  # set to 1 to leave glibc's defaults alone


def keep_freed_buffers():
    """Sets glibc's mmap and trim thresholds (`mallopt`) so large freed buffers are reused.

    Does nothing, and returns False, off Linux, without glibc, when the user chose
    thresholds through glibc's own environment variables (`MALLOC_MMAP_THRESHOLD_`,
    `MALLOC_TRIM_THRESHOLD_`), or with `KBERT_MALLOC_DEFAULTS=1`. `import kbert` calls it once.

    Example:
    >>> keep_freed_buffers() in (True, False)
    True
    """
    chosen = any(name in os.environ for name in GLIBC_VARIABLES) or os.environ.get(OPT_OUT) == "1"
    if not sys.platform.startswith("linux") or chosen:
        return False
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):  # another C library (musl)
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
