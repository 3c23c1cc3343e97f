"""The HTML pages: self-contained, escaped, and right in headless Chromium."""

from __future__ import annotations

import json
import re

import pytest

from reports.cli import main as reports_main
from reports.files import dumps
from reports.html import render_report
from tests.report_helpers import samples
from tests.report_helpers.browser import dump_dom
from tests.report_helpers.dom import parse

SCRIPT = "<script>document.title='pwned'</script>"
# Breaks out of an attribute if quotes are not escaped.
ATTRIBUTE = "\"'><img src=x onerror=\"document.title='pwned2'\">"


def _hostile_report() -> dict:
    report = samples.report(
        message=f"x.clone() differs: {SCRIPT}",
        example=f"Draw 1 (source): <float64 0-d on cpu: {SCRIPT}>",
        repro=f"import torch\nprint('{SCRIPT}')\n",
    )
    report["invariants"]["detach.shares_storage"]["devices"]["cpu"]["reasons"] = [ATTRIBUTE]
    report["invariants"]["clone.new_storage"]["statement"] = ATTRIBUTE
    return report


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    path = tmp_path_factory.mktemp("html") / "report.html"
    path.write_text(render_report(_hostile_report()), encoding="utf-8")
    return path


def test_page_is_self_contained(page):
    html = page.read_text()
    assert not re.search(r"<(link|iframe|object|embed)\b", html)
    assert not re.search(r"""\b(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "@import" not in html and "url(" not in html
    csp = parse(html).find("meta", http_equiv="Content-Security-Policy").attrs["content"]
    assert "default-src 'none'" in csp and "script-src 'sha256-" in csp


def test_everything_from_the_report_is_escaped(page):
    html = page.read_text()
    assert SCRIPT not in html and "&lt;script&gt;document.title=" in html
    assert "<img" not in html
    assert len(re.findall(r"<script\b", html)) == 1


def test_page_in_headless_chromium(page):
    dom = parse(dump_dom(page))
    # The page's own script ran (it marks <html>), the injected ones did not.
    assert "js" in dom.find("html").classes
    assert dom.find("title").text.startswith("torch-conformance: torch 2.13.0+cpu")
    assert len(dom.find_all("script")) == 1 and not dom.find_all("img")

    expected = {
        ("clone.new_storage", "cpu"): "held",
        ("clone.same_values", "cpu"): "violated",
        ("detach.shares_storage", "cpu"): "skipped",
        ("copy.values_copied", "cpu"): "xfailed",
        ("grad.retain_grad", "cpu"): "not run",
        ("clone.new_storage", "cuda"): "skipped",
    }
    matrix = dom.find("table", id="matrix")
    for (invariant, device), status in expected.items():
        row = matrix.find("tr", data_invariant=invariant)
        cell = row.find("td", data_device=device)
        assert cell.attrs["data-status"] == status
        assert "st-" + status.replace(" ", "-") in cell.classes
    held = matrix.find("tr", data_invariant="clone.new_storage").find("td", data_device="cpu")
    assert "f32\u00a03 · i64\u00a02" in held.text and "5 ex" in held.text
    skipped = matrix.find("tr", data_invariant="detach.shares_storage")
    assert ATTRIBUTE in skipped.find("td", data_device="cpu").attrs["title"]
    assert "absent: " + samples.CUDA_REASON in matrix.find("th", data_device="cuda").text

    assert dom.find(id="summary").text.startswith(f"{len(samples.CATALOGUE)} invariants: 1 held")
    violation = dom.find("details", id="inv-clone.same_values")
    assert "open" in violation.attrs
    assert SCRIPT in violation.find("pre", **{"class": "message"}).text
    repro = violation.find("pre", **{"class": "repro"})
    assert SCRIPT in repro.text
    button = violation.find("button", **{"class": "copy"})
    assert button.attrs["data-target"] == repro.attrs["id"]
    quote = violation.find("blockquote").text
    assert "Returns a copy of input." in quote and "torch/_torch_docs.py" in quote


def _write(tmp_path, name: str, **build) -> str:
    report = samples.report()
    report["build"].update(build)
    path = tmp_path / name
    path.write_text(dumps(report))
    return str(path)


def test_merge_puts_builds_side_by_side(tmp_path, capsys):
    first = _write(tmp_path, "cpu.json")
    second = _write(tmp_path, "cuda.json", torch="2.13.0+cu126", build="CUDA 12.6")
    output = tmp_path / "matrix.html"
    assert reports_main(["merge", first, second, "-o", str(output)]) == 0
    assert str(output) in capsys.readouterr().out
    dom = parse(output.read_text())
    headings = [th.find("b").text for th in dom.find_all("th", **{"class": "build-col"})]
    assert headings == ["torch 2.13.0+cpu CPU", "torch 2.13.0+cu126 CUDA 12.6"]
    row = dom.find("tr", data_invariant="clone.same_values")
    assert [td.attrs["data-status"] for td in row.find_all("td")] == ["violated", "violated"]
    rows = [tr for tr in dom.find_all("tr") if "data-invariant" in tr.attrs]
    assert len(rows) == len(samples.CATALOGUE)


def test_merge_labels_equal_builds_by_file_and_expands_globs(tmp_path):
    _write(tmp_path, "py310.json")
    _write(tmp_path, "py311.json")
    output = tmp_path / "matrix.html"
    assert reports_main(["merge", str(tmp_path / "py*.json"), "-o", str(output)]) == 0
    dom = parse(output.read_text())
    headings = [th.find("b").text for th in dom.find_all("th", **{"class": "build-col"})]
    assert headings == ["py310.json", "py311.json"]


def test_merge_puts_releases_in_order_as_columns(tmp_path):
    _write(tmp_path, "torch2.13.json")
    _write(tmp_path, "torch2.9.json", torch="2.9.1+cu128", build="CUDA 12.8")
    _write(tmp_path, "torch2.0.json", torch="2.0.1+cu117", build="CUDA 11.7")
    output = tmp_path / "matrix.html"
    assert reports_main(["merge", str(tmp_path / "torch*.json"), "-o", str(output)]) == 0
    dom = parse(output.read_text())
    headings = [th.find("b").text for th in dom.find_all("th", **{"class": "build-col"})]
    assert headings == [
        "torch 2.0.1+cu117 CUDA 11.7",
        "torch 2.9.1+cu128 CUDA 12.8",
        "torch 2.13.0+cpu CPU",
    ]


@pytest.mark.parametrize(
    "content, needle",
    [(None, "no such file"), ("{", "not JSON"), (json.dumps({"a": 1}), "not a torch-conformance")],
)
def test_merge_of_a_bad_file_is_one_line_and_nonzero(tmp_path, capsys, content, needle):
    good = _write(tmp_path, "good.json")
    bad = tmp_path / "bad.json"
    if content is not None:
        bad.write_text(content)
    assert reports_main(["merge", good, str(bad), "-o", str(tmp_path / "m.html")]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0] and "bad.json" in err[0]
    assert not (tmp_path / "m.html").exists()
