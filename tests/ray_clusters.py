"""Ray clusters for the tests, one at a time per test process: a local one (started once per test session) and
a two-node one on 127.0.0.1 (ray.cluster_utils.Cluster, one CPU per node). Switching shuts the other down.

Loopback only; the dashboard stays off and the object store small, so that a cluster starts in seconds."""

from __future__ import annotations

import atexit
import ipaddress
import os
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="Ray is in requirements-ray.txt (make install-dev installs it)")

OBJECT_STORE = 150_000_000
# A removed node counts as dead after about 2 s instead of Ray's default (much longer).
FAST_NODE_DEATH = {"health_check_initial_delay_ms": 0, "health_check_period_ms": 500,
                   "health_check_timeout_ms": 500, "health_check_failure_threshold": 4}
_held: dict = {"kind": None, "cluster": None}


def _shutdown() -> None:
    from rnnviz.serving.ray_backend import forget_connection

    if ray.is_initialized():
        ray.shutdown()
    if _held["cluster"] is not None:
        _held["cluster"].shutdown()
    _held.update(kind=None, cluster=None)
    forget_connection()


def local_cluster() -> None:
    """The local two-CPU cluster of this test session (started when first needed)."""
    if _held["kind"] == "local" and ray.is_initialized():
        return
    _shutdown()
    ray.init(address="local", num_cpus=2, include_dashboard=False, object_store_memory=OBJECT_STORE,
             namespace="rnnviz", log_to_driver=False)
    _held["kind"] = "local"


def two_nodes():
    """A head and a worker node on 127.0.0.1, one CPU each; returns the Cluster (tests add and remove nodes)."""
    from ray.cluster_utils import Cluster

    _shutdown()
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "include_dashboard": False, "object_store_memory": 80_000_000,
        "_system_config": FAST_NODE_DEATH})
    cluster.add_node(num_cpus=1, object_store_memory=80_000_000)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, namespace="rnnviz", log_to_driver=False)
    _held.update(kind="two", cluster=cluster)
    return cluster


def shutdown_all() -> None:
    _shutdown()


atexit.register(shutdown_all)  # a cluster still up when the test session ends (the local one) goes with it


# --- where Ray listens ------------------------------------------------------------------------------------------


def _descendants(root: int) -> set[int]:
    """``root`` and every process below it, from /proc."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
    found, grew = {root}, True
    while grew:
        below = {pid for pid, parent in parents.items() if parent in found and pid not in found}
        found |= below
        grew = bool(below)
    return found


def _hex_address(field: str) -> str:
    """An address of /proc/net/tcp{,6} ("0100007F:1F90") as text ("127.0.0.1")."""
    raw = bytes.fromhex(field.split(":")[0])
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))  # each 32-bit word is host-endian
    return str(ipaddress.ip_address(words))


def listening_sockets(root: int) -> list[tuple[str, int, str]]:
    """(address, port, process name) of every TCP socket in the LISTEN state held by ``root`` or a process below
    it (a local Ray's GCS, raylets, workers and agents are all started below the process that started Ray)."""
    inodes: dict[str, str] = {}
    for pid in _descendants(root):
        try:
            name = Path(f"/proc/{pid}/comm").read_text().strip()
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes[target[len("socket:["):-1]] = name
        except OSError:
            continue
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                found.append((_hex_address(fields[1]), int(fields[1].split(":")[1], 16), inodes[fields[9]]))
    return found


def beyond_loopback(root: int) -> list[tuple[str, int, str]]:
    """The listening sockets below ``root`` that another machine could reach."""
    def loopback(address: str) -> bool:
        ip = ipaddress.ip_address(address)
        return ip.is_loopback or (ip.version == 6 and ip.ipv4_mapped is not None and ip.ipv4_mapped.is_loopback)

    return [entry for entry in listening_sockets(root) if not loopback(entry[0])]
