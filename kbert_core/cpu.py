"""What the CPU offers, read once and named in output: its model, its cores, and whether it has
bfloat16 units (AVX-512 BF16, AMX), on which bfloat16 compute is fast; elsewhere it is emulated
and slower than float32. Linux's /proc/cpuinfo; elsewhere nothing is found (and said so)."""

import functools
import os
import pathlib

BFLOAT16_FLAGS = ("avx512_bf16", "amx_bf16")


@functools.cache
def cpu_info():
    """(model name, set of feature flags) of this machine's CPU; ("unknown CPU", set()) where
    /proc/cpuinfo cannot be read."""
    try:
        text = pathlib.Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown CPU", set()
    fields = [line.split(":", 1) for line in text.splitlines() if ":" in line]
    name = next((value.strip() for key, value in fields if key.strip() == "model name"), "unknown CPU")
    flags = {flag for key, value in fields if key.strip() == "flags" for flag in value.split()}
    return name, flags


def bfloat16_units(flags=None):
    """The bfloat16 instruction sets among `flags` (default: this CPU's), e.g. ["avx512_bf16"].

    Example:
    >>> bfloat16_units({"avx2", "avx512_bf16", "fma"}), bfloat16_units({"avx2"})
    (['avx512_bf16'], [])
    """
    return [flag for flag in BFLOAT16_FLAGS if flag in (cpu_info()[1] if flags is None else flags)]


def describe_cpu():
    """This machine, as a run records it: {"cpu": model name, "cores": usable cores, "bfloat16_units": [...]}."""
    name, _ = cpu_info()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"cpu": name, "cores": cores, "bfloat16_units": bfloat16_units()}


def cpu_summary(description=None):
    """`describe_cpu()` in words, for --help and the runs' messages.

    Example:
    >>> cpu_summary({"cpu": "AMD EPYC", "cores": 2, "bfloat16_units": []})
    'AMD EPYC, 2 cores, no bfloat16 units (bfloat16 is emulated, slower than float32)'
    >>> cpu_summary({"cpu": "Xeon", "cores": 8, "bfloat16_units": ["avx512_bf16", "amx_bf16"]})
    'Xeon, 8 cores, bfloat16 units: avx512_bf16, amx_bf16'
    """
    found = description or describe_cpu()
    units = (f"bfloat16 units: {', '.join(found['bfloat16_units'])}" if found["bfloat16_units"]
             else "no bfloat16 units (bfloat16 is emulated, slower than float32)")
    return f"{found['cpu']}, {found['cores']} cores, {units}"
