"""Real-world job files (../shared/corpus, read in place, never copied): every safe one is
accepted and runs scaled down, each refused one names what is unsafe, and
docs/job-file-policy.md lists every file with its verdict. fio's value syntax is checked
against what fio reports it did."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from fiolake.errors import PolicyError
from fiolake.runner import attempt
from fiolake.runner import execute as ex
from fiolake.runner.policy import check as policy
from fiolake.runner.policy.options import block_sizes, fio_size

CORPUS = Path(__file__).resolve().parent.parents[3] / "shared" / "corpus"
DOC = Path(__file__).resolve().parent.parents[2] / "docs" / "job-file-policy.md"
# fio 3.33 itself refuses these (newer syntax); the policy accepts them.
NEEDS_NEWER_FIO = {"fio-examples/sequence-distribution.fio"}
# Parsed by fio but not run here: dozens of stonewalled sections (too long), or
# io_submit_mode=offload with libaio at iodepth 32, which hangs fio 3.33 on this kernel
# (fio: "job ... appears to be stuck"); the runner's watchdog ends such a run as failed.
PARSE_ONLY = {
    "ls1intum-job-files/blocks.ini",
    "ls1intum-job-files/blocks_rand.ini",
    "fio-examples/fixed-rate-submission.fio",
    "fio-examples/poisson-rate-submission.fio",
}

pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason="no ../shared/corpus")


def corpus_files() -> list[str]:
    return sorted(
        str(p.relative_to(CORPUS))
        for p in CORPUS.rglob("*")
        if p.is_file() and p.name not in ("README.md", "LICENSE")
    )


def verdict(name: str) -> str:
    """'accepted', or 'refused: ' and the options (or lines) the policy names."""
    try:
        policy.check_job_file((CORPUS / name).read_text(errors="replace"))
    except PolicyError as exc:
        named = []
        for problem in exc.violations:
            m = re.match(r"\[[^\]]*\] ([^:=]+)|line \d+: (.*?)(?: \(|$)", problem)
            what = (m[1] or m[2]).strip() if m else problem
            if what not in named:
                named.append(what)
        return "refused: " + ", ".join(f"`{w}`" for w in named)
    return "accepted"


def verdict_markdown() -> str:
    rows = ["| corpus file | verdict |", "|---|---|"]
    for name in corpus_files():
        note = " (fio 3.33 refuses it: newer syntax)" if name in NEEDS_NEWER_FIO else ""
        rows.append(f"| `{name}` | {verdict(name)}{note} |")
    return "\n".join(rows) + "\n"


def test_docs_list_every_corpus_file_with_its_verdict():
    assert verdict_markdown() in DOC.read_text(), "regenerate the corpus table in the doc"


def test_the_files_the_issue_names_are_accepted():
    for name in ("ls1intum-job-files/default.ini", "fio-examples/fixed-rate-submission.fio",
                 "fio-examples/poisson-rate-submission.fio", "fio-examples/null.fio",
                 "fio-examples/sequence-distribution.fio"):  # fmt: skip
        assert verdict(name) == "accepted", name


def scaled_run(name: str, tmp: Path) -> ex.RunOutcome:
    target = tmp / name.replace("/", "_")
    target.mkdir()
    text = (CORPUS / name).read_text(errors="replace")
    request = ex.RunRequest(text, Path(name).stem, "b", target, "j", "c", runtime_s=1,
                            size_bytes=1 << 20)  # fmt: skip
    prepared = attempt.prepare(request).measured
    if name in PARSE_ONLY:
        return None
    return ex.execute(prepared)


@pytest.mark.slow
def test_every_accepted_file_runs_scaled_down(tmp_path: Path):
    accepted = [n for n in corpus_files() if verdict(n) == "accepted"]
    assert len(accepted) >= 20
    runnable = [n for n in accepted if n not in NEEDS_NEWER_FIO]
    with ThreadPoolExecutor(max_workers=3) as pool:
        outcomes = dict(
            zip(runnable, pool.map(lambda n: scaled_run(n, tmp_path), runnable), strict=True)
        )
    for name, outcome in outcomes.items():
        if outcome is not None:
            assert outcome.status == "ok", (name, outcome.error)
            assert outcome.tables["results"].num_rows > 0, name
    with pytest.raises(PolicyError, match="random_sequence_stride"):
        scaled_run("fio-examples/sequence-distribution.fio", tmp_path)


JOB = """
[r]
ioengine=psync
rw=read
size=4k-2M
bs=4k-1M
[w]
ioengine=psync
rw=write
size=1M,3M
bs=8k-64k
"""


def test_range_looking_values_mean_what_fio_does(tmp_path: Path):
    """size=A-B lays out B; bs=A-B is bs=A,B (reads A, writes B) — and the caps see that."""
    outcome = ex.execute(attempt.prepare(ex.RunRequest(JOB, "p", "b", tmp_path, "j", "c")).measured)
    assert outcome.status == "ok", outcome.error
    rows = {r["job_name"]: r for r in outcome.tables["results"].to_pylist()}
    assert rows["r"]["io_bytes"] == fio_size("4k-2M") == 2 << 20
    assert rows["r"]["io_bytes"] // rows["r"]["total_ios"] == block_sizes("bs", "4k-1M")[0]
    assert rows["w"]["io_bytes"] == fio_size("1M,3M") == 3 << 20
    assert rows["w"]["io_bytes"] // rows["w"]["total_ios"] == block_sizes("bs", "8k-64k")[1]
    caps = policy.Caps(max_size_bytes=2 << 20)
    with pytest.raises(PolicyError) as refused:
        policy.check_job_file(JOB, caps)
    assert refused.value.violations == [
        "[w] size=1M,3M: above the cap of 2.0 MiB (raise it with --max-size)"
    ]
