"""The measurements behind the code: ``benchmarks/results/findings_*.json`` read, checked and shown
on each paper's page (and the toolkit's) in its closing sections."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from jgtest.report.reproductions.common import Results, code, section

#: The pages a finding can belong to: the papers' and the toolkit's (their ``Page.slug``).
PAPERS = ("reline", "wuji", "ppgta", "explicit-plans", "toolkit")
#: The kinds of finding; ``tried_and_not_kept`` ones join their page's "Tried and not kept" section.
KINDS = ("calibration", "measurement", "tried_and_not_kept")
#: The keys every finding must give, as non-empty strings.
REQUIRED = ("paper", "module", "topic", "kind", "text")
#: The keys a finding may give as a string or null (absent: null).
OPTIONAL = ("command", "results_file")
#: The glob of the findings files in a results directory.
PATTERN = "findings_*.json"


@dataclass(frozen=True)
class Finding:
    """One measured figure: the page and module it belongs to, its topic, kind and text, the command
    and results file that measure it (``None`` where not recorded), and the findings file it is
    in."""

    paper: str
    module: str
    topic: str
    kind: str
    text: str
    command: str | None
    results_file: str | None
    file: str
    index: int


def _finding(path: str, index: int, entry: object) -> Finding:
    """One entry of a findings file, checked: a ValueError names the file and the entry."""
    topic = entry.get("topic") if isinstance(entry, dict) else None
    where = f"{path}: finding {index}" + (f" ({topic!r})" if isinstance(topic, str) else "")
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: not a JSON object")
    for key in REQUIRED:
        if key not in entry:
            raise ValueError(f"{where}: missing required key {key!r}")
        if not isinstance(entry[key], str) or not entry[key].strip():
            raise ValueError(f"{where}: {key!r} must be a non-empty string")
    for key in OPTIONAL:
        if entry.get(key) is not None and not isinstance(entry[key], str):
            raise ValueError(f"{where}: {key!r} must be a string or null")
    unknown = sorted(set(entry) - set(REQUIRED) - set(OPTIONAL))
    if unknown:
        raise ValueError(
            f"{where}: unknown key{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}"
        )
    if entry["paper"] not in PAPERS:
        raise ValueError(f"{where}: unknown paper {entry['paper']!r} (one of {', '.join(PAPERS)})")
    if entry["kind"] not in KINDS:
        raise ValueError(f"{where}: unknown kind {entry['kind']!r} (one of {', '.join(KINDS)})")
    optional = {key: entry.get(key) or None for key in OPTIONAL}
    return Finding(**{key: entry[key] for key in REQUIRED}, **optional, file=path, index=index)


def load_findings(results: Results) -> list[Finding]:
    """Every finding of the results directory's findings files, checked, by paper, module, then file
    and place in it; none when there is no findings file."""
    findings = []
    for name in results.names(PATTERN):
        path = str(results.directory / name)
        try:
            data = results[name]
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}: not valid JSON ({error})") from None
        if not isinstance(data, dict) or not isinstance(data.get("findings"), list):
            raise ValueError(f"{path}: a findings file is an object with a 'findings' list")
        findings += [_finding(path, i, entry) for i, entry in enumerate(data["findings"])]
    return sorted(findings, key=lambda f: (f.paper, f.module, f.file, f.index))


def _words(text: str) -> str:
    """Text on one line (a list item cannot hold a line break)."""
    return " ".join(text.split())


def _source(finding: Finding) -> str:
    """The command that measures a finding and its results file, or that none was recorded."""
    command = finding.command and _words(finding.command)
    if command:
        quoted = command.startswith("`") and command.endswith("`")
        parts = [f"Measured by {command if quoted else code(command)}"]
    else:
        parts = ["Command not recorded"]
    if finding.results_file:
        name = finding.results_file
        name = name if "/" in name else f"benchmarks/results/{name}"
        parts.append(f"results in {code(name)}")
    return "; ".join(parts) + "."


def finding_item(finding: Finding, with_module: bool = False) -> str:
    """A finding as a list item: its topic (and module), its text and its source."""
    module = f" ({code(finding.module)})" if with_module else ""
    kind = " (calibration)" if finding.kind == "calibration" else ""
    return f"- **{_words(finding.topic)}**{module}{kind}: {_words(finding.text)} {_source(finding)}"


def tried_items(findings: Sequence[Finding]) -> list[str]:
    """The findings tried and not kept, as list items naming their module."""
    return [finding_item(f, with_module=True) for f in findings if f.kind == "tried_and_not_kept"]


def measurements_section(findings: Sequence[Finding]) -> str:
    """The closing section: the findings (other than those tried and not kept) under their module's
    heading; empty when there are none."""
    measured = [f for f in findings if f.kind != "tried_and_not_kept"]
    if not measured:
        return ""
    modules = sorted({f.module for f in measured})
    intro = (
        "Figures measured while the code behind this page was built, kept in "
        "`benchmarks/results/findings_*.json` rather than in the modules' "
        "docstrings: for each module, "
        "what was measured and the command that measures it, where one was recorded."
    )
    groups = [
        f"### {code(module)}\n\n"
        + "\n".join(finding_item(f) for f in measured if f.module == module)
        for module in modules
    ]
    return section("Measurements behind the code", intro, *groups)
