"""fio's latency histogram arithmetic: the one home for percentiles from bins.

fio keeps completion latencies in FIO_IO_U_PLAT_NR log-linear buckets (stat.h: 29 groups
of 64). The json+ report lists the non-empty buckets by their value (`plat_idx_to_val`);
the histogram logs (`write_hist_log`, `log_hist_msec`) write every bucket by index,
merged 2**log_hist_coarseness at a time. Both become percentiles by fio's own method.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction

PLAT_BITS = 6
PLAT_VAL = 1 << PLAT_BITS
PLAT_GROUP_NR = 29
PLAT_NR = PLAT_GROUP_NR * PLAT_VAL  # 1856 buckets in fio >= 3.3 (ns resolution)


def plat_idx_to_val(idx: int) -> int:
    """fio's stat.c plat_idx_to_val: the (truncated) midpoint of bucket `idx`, in ns."""
    if idx < (PLAT_VAL << 1):
        return idx
    error_bits = (idx >> PLAT_BITS) - 1
    base = 1 << (error_bits + PLAT_BITS)
    k = idx % PLAT_VAL
    return int(base + (k + 0.5) * (1 << error_bits))  # fio returns unsigned long long


def hist_bins(counts: Sequence[int], coarseness: int = 0) -> dict[int, int]:
    """A histogram-log line's bucket counts → {bucket value ns: count}, non-empty only.

    With coarseness c fio sums 2**c adjacent buckets; the merged bucket is represented by
    the value of its first fine bucket's midpoint, as fio's own stat code would report it.
    """
    stride = 1 << coarseness
    out: dict[int, int] = {}
    for i, count in enumerate(counts):
        if count:
            value = plat_idx_to_val(i * stride)
            out[value] = out.get(value, 0) + int(count)
    return out


def bin_percentiles(
    bins: Mapping[str, int] | Mapping[int, int], percentiles: Iterable[float]
) -> list[int]:
    """fio's own percentile method on bins: the midpoint of the first bucket whose running
    count reaches p/100·N, compared exactly (fio uses long double)."""
    buckets = sorted((int(mid), int(count)) for mid, count in bins.items())
    total = sum(count for _, count in buckets)
    out = []
    for p in percentiles:
        threshold = Fraction(float(p)) / 100 * total
        running = 0
        value = buckets[-1][0] if buckets else 0
        for mid, count in buckets:
            running += count
            if running >= threshold:
                value = mid
                break
        out.append(value)
    return out
