"""What an A/A test (one target measured twice) may show by chance.

One target twice is the null hypothesis, so Welch's p is uniform: at alpha 0.05 a `better`
or `worse` verdict comes by chance about once in twenty sweeps, and a test demanding
"never" fails that often. What an A/A test must catch is a gross systematic difference
(another backend's runs pooled, a unit mixed up, the wrong baseline): that drives p
towards 0, where chance goes below A_A_FLOOR once in 1 / A_A_FLOOR sweeps per row."""

A_A_FLOOR = 0.005


def beyond_chance(rows: list[dict[str, object]]) -> list[dict[str, object]]:
    """The rows whose `better`/`worse` verdict chance would give less than A_A_FLOOR of
    the time: an A/A test expects none."""
    return [
        r
        for r in rows
        if r["verdict"] in ("better", "worse")
        and not (isinstance(r["p_adjusted"], float) and r["p_adjusted"] >= A_A_FLOOR)
    ]
