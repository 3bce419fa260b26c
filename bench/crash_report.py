"""The crash matrix's results: a line per case as it ends, the Markdown table, its red cells,
and the table written into a document (``--write docs/RELIABILITY.md``)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from bench.crash_run import Result, Scenario

DATABASES = {"sqlite": "SQLite", "postgres": "PostgreSQL"}
CHECKS = (
    *("lost/stuck", "remedy once", "skills", "telegram", "pages", "mails", "posts"),
    *("log lines", "audit"),
)


def cell(result: Result, check: str) -> str:
    if check not in result.checks:
        return "-"
    ok, _ = result.checks[check]
    return "-" if ok is None else ("✅" if ok else "❌")


def matrix(results: list[Result]) -> str:
    head = "| scenario | kill point | killed | " + " | ".join(CHECKS) + " |"
    lines = [head, "|" + "---|" * (len(CHECKS) + 3)]
    for r in results:
        killed = "✅" if r.crashed else "❌ " + r.error
        cells = " | ".join(cell(r, c) for c in CHECKS)
        lines.append(f"| {r.scenario} | `{r.point}` | {killed} | {cells} |")
    return "\n".join(lines)


def failures(results: list[Result]) -> list[str]:
    out = []
    for r in results:
        for name, (ok, why) in r.checks.items():
            if ok is False:
                out.append(f"- {r.scenario} at `{r.point}`: **{name}**: {why}")
        if r.error and r.crashed:
            out.append(f"- {r.scenario} at `{r.point}`: {r.error}")
    return out


def report_case(result: Result, seconds: float) -> None:
    mark = "green" if result.green else "RED"
    print(
        f"{result.scenario:14} {result.point:28} {mark:5} {seconds:5.1f}s "
        + "; ".join(f"{k}: {v[1]}" for k, v in result.checks.items() if v[0] is False)
        + (f" [{result.error}]" if result.error else ""),
        flush=True,
    )


def write_doc(
    path: Path,
    database: str,
    table: str,
    results: list[Result],
    argv: list[str],
    listed: Iterable[Scenario],
) -> None:
    """Write the matrix between its database's markers in ``path`` (appended if absent),
    describing the ``listed`` scenarios."""
    points = sorted({r.point.split(":")[0] for r in results})
    described = "\n".join(f"- **{s.name}**: {s.what}" for s in listed)
    fails = failures(results)
    command = "python -m bench.crash " + " ".join(argv)
    text = path.read_text() if path.exists() else ""
    marker = f"<!-- crash matrix: {database} -->"
    body = (
        f"{marker}\nProduced by `{command.strip()}` ({DATABASES[database]}), "
        f"{len(results)} cases, {len(points)} distinct kill points, "
        f"{sum(r.green for r in results)} green.\n\n"
        f"Scenarios:\n\n{described}\n\n{table}\n\n"
        + ("Red cells:\n\n" + "\n".join(fails) + "\n" if fails else "No red cell.\n")
        + f"{marker}\n"
    )
    if marker in text:
        start = text.index(marker)
        end = text.index(marker, start + 1) + len(marker) + 1
        text = text[:start] + body + text[end:]
    else:
        text = text + ("\n" if text else "") + body
    path.write_text(text)
