import subprocess
import sys

import keras
import pytest

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt: Linux only"),
    pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent: run once"),
]

# Page faults of a second 64 MB buffer, filled after a first one was freed: glibc serves
# 64 MB (above its largest dynamic threshold, 32 MB) with fresh mmap pages by default, so
# all 16,384 pages fault again; once freed buffers are kept, none do.
SECOND_BUFFER_FAULTS = """
import ctypes, resource, sys
if sys.argv[1] == "kbert":
    import kbert
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
def faults():
    buffer = libc.malloc(64 << 20)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    ctypes.memset(buffer, 1, 64 << 20)
    count = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    libc.free(ctypes.c_void_p(buffer))
    return count
faults()
print(faults())
"""


def second_buffer_faults(mode, **env):
    result = subprocess.run([sys.executable, "-c", SECOND_BUFFER_FAULTS, mode], capture_output=True, text=True,
                            check=True, env={"PATH": "/usr/bin:/bin", "KERAS_BACKEND": "tensorflow", **env})
    return int(result.stdout.split()[-1])


def test_import_kbert_keeps_freed_buffers_for_reuse():
    assert second_buffer_faults("plain") > 10_000  # glibc's default: fresh pages every time
    assert second_buffer_faults("kbert") < 100


def test_glibc_variables_set_by_the_user_win():
    assert second_buffer_faults("kbert", MALLOC_MMAP_THRESHOLD_="131072") > 10_000
    assert second_buffer_faults("kbert", KBERT_MALLOC_DEFAULTS="1") > 10_000
