"""Every page of the real app in headless Chromium on a given lake (the demo's): how long
each took to settle, a screenshot of each, and exit 1 if any page showed an exception or
logged a console error. `make demo` runs it on the lake it has just filled.

    .venv/bin/python -m tests.app.demo_pages --lake s3://fiolake [--out build/demo-app]

The lake's credentials come from the environment, as for any fiolake command.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path[0] = str(Path(__file__).resolve().parents[2])

from tests.app import browser  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lake", required=True)
    parser.add_argument("--out", type=Path, default=Path("build/demo-app"))
    args = parser.parse_args()
    failed = []
    with browser.serve_app(args.lake) as url, browser.chromium() as context:
        for path, title in browser.PAGES.items():
            name = path or "Home"
            seen = browser.visit(context, url, path, shot=args.out / f"{name}.png")
            trouble = seen.problems + seen.console_errors
            if title not in seen.text:
                trouble.append(f"title {title!r} not shown")
            verdict = "ok" if not trouble else "FAILED: " + "; ".join(trouble)[:300]
            print(f"  {name:<11} settled in {seen.settle_s:5.2f} s  {verdict}", file=sys.stderr)
            if trouble:
                failed.append(name)
    print(f"  screenshots in {args.out}/", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
