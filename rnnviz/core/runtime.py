"""Where and how fast torch runs: device choice and CPU thread settings."""

from __future__ import annotations

import os

import torch


def pick_device() -> torch.device:
    """CUDA when torch sees a GPU, else the CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


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


def configure_cpu() -> int:
    """Match torch's intra-op threads to the physical cores and flush denormals; returns the thread count.

    RNNVIZ_THREADS overrides the count, for machines shared with other heavy jobs.
    """
    threads = int(os.environ.get("RNNVIZ_THREADS", 0)) or physical_cores()
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    torch.set_flush_denormal(True)
    return threads


def process_memory_bytes() -> int | None:
    """Resident memory of this process in bytes (Linux: /proc/self/statm), or None where unknown."""
    try:
        with open("/proc/self/statm") as f:
            resident_pages = int(f.read().split()[1])
        return resident_pages * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return None
