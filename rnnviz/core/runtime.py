"""Where and how fast torch runs: device choice and CPU thread settings."""

from __future__ import annotations

import functools
import os

import torch


def pick_device() -> torch.device:
    """CUDA when torch sees a GPU, else the CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def has_native_bf16(device: torch.device | str = "cpu") -> bool:
    """Whether ``device`` computes in bfloat16 natively: a CUDA GPU that supports it, or a CPU with AVX-512 BF16
    or AMX-BF16 dot products. Elsewhere bfloat16 is emulated and slower than float32; where it is native, training
    under bf16 autocast is faster than float32 (round "bf16" of bench/shakespeare_sweep.py)."""
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    return device.type == "cpu" and bool(_cpu_flags() & {"avx512_bf16", "amx_bf16"})


@functools.cache
def _cpu_flags() -> frozenset[str]:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.partition(":")[2].split())
    except OSError:
        pass
    return frozenset()


@functools.cache
def physical_cores() -> int:
    """Physical cores available to this process (hyperthreads do not speed up matmuls)."""
    try:
        cores = set()
        allowed = os.sched_getaffinity(0)
        cpu = None
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "processor":
                    cpu, phys = int(value), None
                elif key == "physical id":
                    phys = value.strip()
                elif key == "core id" and cpu in allowed:
                    cores.add((phys, value.strip()))
        if cores:
            return len(cores)
    except (OSError, ValueError, AttributeError):
        pass
    return max(1, os.cpu_count() or 1)


def cpu_threads() -> int:
    """Threads one training may use: the physical cores, or $RNNVIZ_THREADS (machines shared with heavy jobs)."""
    return int(os.environ.get("RNNVIZ_THREADS", 0)) or physical_cores()


def configure_cpu() -> int:
    """Match torch's intra-op threads to the physical cores (shared among the trainings running, see share_cores)
    and flush denormals; returns the thread count.

    RNNVIZ_THREADS overrides the count, for machines shared with other heavy jobs.
    """
    threads = max(1, cpu_threads() // max(1, _trainings_running))
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    torch.set_flush_denormal(True)
    return threads


_trainings_running = 0  # trainings this process runs at once, as its TrainingSlots last counted them


def share_cores(trainings: int) -> int:
    """Split torch's threads among ``trainings`` that train at once in this process; returns the threads each gets.

    On 2 cores one training runs fastest on 2 threads, but two at once run fastest on 1 thread each: on 2 threads
    their OpenMP workers wait for a core the other training holds (python -m bench omp_wait).
    torch.set_num_threads is process-wide, so the count is kept here
    and configure_cpu (which every page run calls) keeps the share instead of undoing it. The server's
    TrainingSlots call this whenever the number of trainings changes.
    """
    global _trainings_running
    _trainings_running = max(0, trainings)
    threads = max(1, cpu_threads() // max(1, trainings))
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    return threads


def process_memory_bytes() -> int | None:
    """Resident memory of this process in bytes (Linux: /proc/self/statm), or None where unknown."""
    try:
        with open("/proc/self/statm") as f:
            resident_pages = int(f.read().split()[1])
        return resident_pages * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return None
