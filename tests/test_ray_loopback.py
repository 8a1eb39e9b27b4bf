"""Local Ray clusters stay on loopback: the tests' own and the one `ray_map` starts without an address listen on
127.0.0.1 only and advertise it; given an address, `ray_map` joins that cluster instead of starting one."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="the distributed extra is not installed")

LOOPBACK = {"127.0.0.1", "::ffff:127.0.0.1"}
PROC_NET = [Path("/proc/net/tcp"), Path("/proc/net/tcp6")]
LISTEN = "0A"


def listening_addresses(port: int) -> set[str]:
    """The local addresses on which some socket of this machine listens on `port`, read from the kernel's table."""
    addresses = set()
    for table in PROC_NET:
        for line in table.read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.split(":")
            if state == LISTEN and int(hex_port, 16) == port:
                addresses.add(_ip(address))
    return addresses


def _ip(hex_address: str) -> str:
    """An address of /proc/net/tcp{,6}: 32-bit words in host (little-endian) order."""
    words = [bytes.fromhex(hex_address[i:i + 8])[::-1] for i in range(0, len(hex_address), 8)]
    raw = b"".join(words)
    if len(raw) == 4:
        return ".".join(str(byte) for byte in raw)
    if raw[:12] == b"\0" * 10 + b"\xff\xff":
        return "::ffff:" + ".".join(str(byte) for byte in raw[12:])
    return raw.hex()


def in_a_new_driver(code: str, environ: dict[str, str]) -> list[str]:
    """Run `code` in a fresh Python process, where ray is not imported yet, and return the words of its last line."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environ, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.splitlines()[-1].split()


# The task returns the IP of the node it ran on; a lambda, so that ray is imported by ray_map only.
RUN_ONE_TASK = ("from prefcraft.executors import ray_map\n"
                "[(_, ip)] = ray_map(lambda _: __import__('ray').util.get_node_ip_address(), [None], address={!r})\n"
                "print(ip, __import__('ray').get_runtime_context().gcs_address)")


@pytest.mark.skipif(not all(table.exists() for table in PROC_NET), reason="reads Linux's table of sockets")
def test_the_test_cluster_listens_on_loopback_only(two_ray_workers):
    gcs_host, gcs_port = ray.get_runtime_context().gcs_address.rsplit(":", 1)
    [node] = ray.nodes()
    assert gcs_host == node["NodeManagerAddress"] == ray.util.get_node_ip_address() == "127.0.0.1"
    for port in (int(gcs_port), node["NodeManagerPort"], node["ObjectManagerPort"]):
        assert listening_addresses(port) and listening_addresses(port) <= LOOPBACK, port


def test_ray_map_without_an_address_starts_a_cluster_on_loopback():
    unset = {key: value for key, value in os.environ.items() if key != "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"}
    worker_ip, gcs_address = in_a_new_driver(RUN_ONE_TASK.format(None), unset)
    assert worker_ip == "127.0.0.1"
    assert gcs_address.startswith("127.0.0.1:")


def test_ray_map_with_an_address_joins_that_cluster(two_ray_workers):
    address = ray.get_runtime_context().gcs_address
    worker_ip, joined = in_a_new_driver(RUN_ONE_TASK.format(address), dict(os.environ))
    assert joined == address
    assert worker_ip == "127.0.0.1"
