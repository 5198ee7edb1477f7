"""``python -m harness.report [DIR ...] [--out OUT] [--readme README.md] [--all-runs] [--no-figures] [--link-figures] [--answer]``
``python -m harness.report --compare A B [--names A_NAME B_NAME] [--readme FILE] [--out OUT]``
``python -m harness.report --predict RUN_DIR [--machine REFERENCE_RUN]``

Reads every results.csv (and archived run, results.jsonl.gz) under the folders (default: the run just
finished: the newest of results/bench/latest, the latest job in results/runs/ and the latest sweep in
results/sweeps/) and writes report.html, report.md, summary.csv and figures into ``<first DIR>/report`` (or
``--out``). ``--readme`` also rewrites the text between ``<!-- results:start -->`` and ``<!-- results:end -->``
in that file with the answer and the headline tables. ``--predict`` prints, per workload and worker count of the
run's reactor rows, the share of the synchronized ceiling measured and the share predicted for a core per
process from the rows' per-process CPU costs (`harness.report.predict`), against ``--machine``'s measurements
when given. ``--answer`` also prints the report's answer (its "The answer" section) to the terminal.
``--compare A B`` compares two runs instead (B over A per
configuration and backend, with intervals and what changed: `harness.report.diff`), prints it, writes it to
``--out``/compare.md when given, and with ``--readme`` rewrites that file's ``<!-- compare:start -->`` block.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from harness.report.build import build_report

#: the folder ``make bench`` writes (the Makefile's BENCH_DIR); never the reference runs
DEFAULT_DIR = "results/bench/latest"
#: where single jobs (``python -m harness ...``) and sweeps (``-m``) write (conf/config.yaml, hydra.run/sweep)
JOB_DIRS = ("results/runs", "results/sweeps")


def _newest_result(folder: Path) -> float:
    """The modification time of the newest result file under ``folder`` (0 without one)."""
    times = [p.stat().st_mtime for pattern in ("results.csv", "results.jsonl.gz") for p in folder.rglob(pattern)
             if "reference" not in p.relative_to(folder).parts]
    return max(times, default=0.0)


def latest_run(root: Path = Path(".")) -> tuple[Path | None, str]:
    """The run just finished: the newest (by its newest result file) of `DEFAULT_DIR`, the latest job folder
    in results/runs/ and the latest sweep in results/sweeps/; and a sentence saying which and why."""
    candidates = []
    if (root / DEFAULT_DIR).is_dir():
        candidates.append((root / DEFAULT_DIR, "the latest `make bench` run"))
    for parent, what in zip(JOB_DIRS, ("the latest job", "the latest sweep")):
        folders = sorted(p for p in (root / parent).glob("*") if p.is_dir()) if (root / parent).is_dir() else []
        if folders:
            candidates.append((folders[-1], what))
    dated = [(_newest_result(p), p, what) for p, what in candidates]
    dated = [d for d in dated if d[0] > 0]
    if not dated:
        return None, ""
    when, path, what = max(dated, key=lambda d: d[0])
    stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(when))
    return path, f"no folder named: reading {path} ({what}; its newest result file is from {stamp})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.report", description=__doc__.split("\n\n")[1])
    parser.add_argument("dirs", nargs="*", default=[],
                        help="folders or result files to read (default: the run just finished: the newest of "
                             f"{DEFAULT_DIR}, the latest job in results/runs, the latest sweep in results/sweeps)")
    parser.add_argument("--compare", nargs=2, metavar=("A", "B"),
                        help="compare two runs (folders or reference runs): B over A per configuration and backend")
    parser.add_argument("--names", nargs=2, metavar=("A_NAME", "B_NAME"), default=["A", "B"],
                        help="what --compare calls the two runs (default: A B)")
    parser.add_argument("--predict", metavar="RUN_DIR",
                        help="print the reactor's share of the synchronized ceiling measured and predicted for a "
                             "core per process, per workload and worker count (harness.report.predict)")
    parser.add_argument("--machine", nargs="+", metavar="REFERENCE_RUN",
                        help="with --predict: the target machine's reference run, for its ceilings and measured "
                             "shares (e.g. results/reference/h200-16core-2026-12-04-device)")
    parser.add_argument("--out", help="output folder (default: <first DIR>/report)")
    parser.add_argument("--readme", help="also rewrite the results section of this README")
    parser.add_argument("--all-runs", action="store_true",
                        help="pool every run of a configuration and backend (default: the latest run only)")
    parser.add_argument("--no-figures", action="store_true", help="tables only (faster)")
    parser.add_argument("--link-figures", action="store_true",
                        help="report.html links figures/*.png instead of embedding them (the default for "
                             "archived runs)")
    parser.add_argument("--answer", action="store_true",
                        help="also print the report's answer (its \"The answer\" section) to the terminal")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    if args.compare:
        return _compare(args)
    if args.predict:
        return _predict(args)
    if not args.dirs:
        found, why = latest_run()
        if found is None:
            print(f"harness.report: no results under {DEFAULT_DIR}, {', '.join(JOB_DIRS)} (run `make bench` or a "
                  "job, or name a folder)", file=sys.stderr)
            return 2
        print(why)
        args.dirs = [str(found)]
    missing = [d for d in args.dirs if not Path(d).exists()]
    if missing:
        print(f"harness.report: no such folder or file: {', '.join(missing)}", file=sys.stderr)
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
    if args.answer:
        print("\n" + answer_section(files.markdown.read_text()))
    return 0


def answer_section(markdown: str) -> str:
    """The "## The answer" section of a report.md (heading to the next ``## ``), or a line saying it has none."""
    start = markdown.find("\n## The answer")
    if start < 0:
        return "(the report has no answer: no RL workload with a reactor row)"
    end = markdown.find("\n## ", start + 1)
    return markdown[start + 1:end if end >= 0 else None].rstrip()


def _predict(args: argparse.Namespace) -> int:
    from harness.report.predict import format_lines, predict_run

    missing = [d for d in [args.predict, *(args.machine or [])] if not Path(d).exists()]
    if missing:
        print(f"harness.report: no such folder or file: {', '.join(missing)}", file=sys.stderr)
        return 2
    table = predict_run([args.predict], args.machine)
    if table.empty:
        print(f"harness.report: no reactor rows to predict from under {args.predict} (the processes executor, or "
              "the threads executor on a free-threaded interpreter)", file=sys.stderr)
        return 2
    print(format_lines(table))
    return 0


def _compare(args: argparse.Namespace) -> int:
    from harness.report.diff import compare_runs, to_markdown, update_block

    missing = [d for d in args.compare if not Path(d).exists()]
    if missing:
        print(f"harness.report: no such folder or file: {', '.join(missing)}", file=sys.stderr)
        return 2
    comparison = compare_runs(*args.compare, all_runs=args.all_runs)
    text = to_markdown(comparison, *args.names)
    print(text)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "compare.md").write_text(text + "\n")
        print(f"comparison: {out / 'compare.md'}")
    if args.readme:
        try:
            update_block(Path(args.readme), text)
        except ValueError as exc:
            print(f"harness.report: {exc}", file=sys.stderr)
            return 2
        print(f"comparison block rewritten: {args.readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
