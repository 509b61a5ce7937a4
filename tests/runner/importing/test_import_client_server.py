"""fio's client/server output imports as one run per client (issue 43 part 4): two
`fio --server` on one host, told apart by their ports, are two runs; "All clients" is none."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from fiolake.cli import cli
from fiolake.stack.process import free_ports, wait_for

JOB = "[cs]\nioengine=null\nrw=randread\nbs=4k\nsize=16m\n"


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[list[int]]:
    """Two `fio --server` on 127.0.0.1, each on its own free port, stopped afterwards."""
    ports = free_ports(2)
    procs: list[subprocess.Popen] = []
    try:
        for port in ports:
            log = open(tmp_path / f"server-{port}.log", "w")  # noqa: SIM115 - closed once fio has it
            procs.append(
                subprocess.Popen(
                    ["fio", f"--server=ip:127.0.0.1,{port}"],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    cwd=tmp_path,
                )
            )
            log.close()
        for port, proc in zip(ports, procs, strict=True):
            wait_for(lambda p=port: _listening(p), timeout_s=20, what="fio --server", pid=proc.pid)
        yield ports
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def test_two_servers_on_one_host_are_two_runs(tmp_path: Path, servers: list[int]) -> None:
    job = tmp_path / "cs.fio"
    job.write_text(JOB)
    clients = [a for port in servers for a in (f"--client=127.0.0.1,{port}", str(job))]
    out = subprocess.run(
        ["fio", *clients, "--output-format=json"], capture_output=True, text=True, check=True
    ).stdout
    doc = tmp_path / "client-server.json"
    doc.write_text(out)
    lake = tmp_path / "lake"
    result = CliRunner().invoke(
        cli, ["import", str(doc), "--backend", "cs", "--lake", str(lake), "--format", "csv"]
    )
    assert result.exit_code == 0, result.output
    runs = [
        r
        for p in (lake / "results" / "runs").glob("*/*.parquet")
        for r in pq.read_table(p).to_pylist()
    ]
    # one per server, the host naming its port (two servers share 127.0.0.1); no "All clients"
    assert sorted(r["host"] for r in runs) == sorted(f"127.0.0.1:{p}" for p in servers)
    results = [
        r
        for p in (lake / "results" / "results").glob("*/*.parquet")
        for r in pq.read_table(p).to_pylist()
    ]
    assert sorted(r["job_name"] for r in results if r["direction"] == "read") == ["cs", "cs"]
    assert len({r["run_id"] for r in results}) == 2
