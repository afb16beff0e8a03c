"""kbert_core.cpu: what the CPU offers, against /proc/cpuinfo read another way (grep's way)."""

import os
import pathlib
import subprocess

import pytest

from kbert_core.cpu import bfloat16_units, cpu_info, cpu_summary, describe_cpu


@pytest.mark.skipif(not pathlib.Path("/proc/cpuinfo").is_file(), reason="reads Linux's /proc/cpuinfo")
def test_the_cpu_as_the_kernel_lists_it():
    flags_line = subprocess.run(["grep", "-m1", "^flags", "/proc/cpuinfo"], capture_output=True, text=True).stdout
    name_line = subprocess.run(["grep", "-m1", "^model name", "/proc/cpuinfo"], capture_output=True, text=True).stdout
    name, flags = cpu_info()
    assert flags == set(flags_line.split(":", 1)[1].split())
    assert name == (name_line.split(":", 1)[1].strip() if name_line else "unknown CPU")
    found = describe_cpu()
    assert found["bfloat16_units"] == [f for f in ("avx512_bf16", "amx_bf16") if f" {f}" in flags_line]
    assert found["cores"] == len(os.sched_getaffinity(0))
    assert cpu_summary().startswith(f"{name}, {found['cores']} cores, ")


def test_bfloat16_units_are_named_or_their_absence_said():
    assert bfloat16_units({"avx2", "fma"}) == []
    assert bfloat16_units({"amx_bf16", "avx512_bf16"}) == ["avx512_bf16", "amx_bf16"]
    assert cpu_summary({"cpu": "c", "cores": 2, "bfloat16_units": []}).endswith(
        "no bfloat16 units (bfloat16 is emulated, slower than float32)")
