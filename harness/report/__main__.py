"""``python -m harness.report [DIR ...] [--out OUT] [--readme README.md] [--all-runs] [--no-figures] [--link-figures]``

Reads every results.csv (and archived run, results.jsonl.gz) under the folders (default: the latest sweep,
results/bench/latest) and writes report.html, report.md, summary.csv and figures into ``<first DIR>/report``
(or ``--out``). ``--readme`` also rewrites the text between ``<!-- results:start -->`` and
``<!-- results:end -->`` in that file with the headline table.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from harness.report.build import build_report

#: the folder ``make bench`` writes (the Makefile's BENCH_DIR); never the reference runs
DEFAULT_DIR = "results/bench/latest"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.report", description=__doc__.split("\n\n")[1])
    parser.add_argument("dirs", nargs="*", default=[DEFAULT_DIR],
                        help=f"folders or result files to read (default: {DEFAULT_DIR})")
    parser.add_argument("--out", help="output folder (default: <first DIR>/report)")
    parser.add_argument("--readme", help="also rewrite the results section of this README")
    parser.add_argument("--all-runs", action="store_true",
                        help="pool every run of a configuration and backend (default: the latest run only)")
    parser.add_argument("--no-figures", action="store_true", help="tables only (faster)")
    parser.add_argument("--link-figures", action="store_true",
                        help="report.html links figures/*.png instead of embedding them (the default for "
                             "archived runs)")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    missing = [d for d in args.dirs if not Path(d).exists()]
    if missing:
        print(f"harness.report: no such folder or file: {', '.join(missing)}"
              + (" (run `make bench`, or name a folder)" if args.dirs == [DEFAULT_DIR] else ""), file=sys.stderr)
        return 2
    try:
        files = build_report(args.dirs, out=args.out, all_runs=args.all_runs, figures=not args.no_figures,
                             readme=args.readme, embed_figures=False if args.link_figures else None)
    except ValueError as exc:  # e.g. README without markers
        print(f"harness.report: {exc}", file=sys.stderr)
        return 2
    print(f"report: {files.html}\n        {files.markdown}\n        {files.summary}\n        "
          f"{len(files.figures)} figure files in {files.out / 'figures'}  ({time.perf_counter() - t0:.1f} s)")
    if args.readme:
        print(f"README results section rewritten: {args.readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
