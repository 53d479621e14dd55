"""calibcourse.tools.audit: a typed number is flagged, a glued or marked one is not; shown code
lines over 79 characters are flagged, hidden ones are not; a quotation needs a known citation."""
import pytest

from calibcourse.tools import audit

KEYS = {"guo2017calibration"}


def kinds(text):
    return [(f.kind, f.text) for f in audit.audit_text(text, "p.md", keys=KEYS)]


def test_a_typed_number_is_flagged_with_its_line():
    found = audit.audit_text("# 2. Causes\n\nThe ECE falls from 4.3 % to 1.2 %.\n", "p.md", keys=KEYS)
    assert [(f.line, f.kind, f.text) for f in found] == [(3, "number", "4.3"), (3, "number", "1.2")]
    assert str(found[0]) == "p.md:3: typed number, neither glued nor marked: 4.3"


@pytest.mark.parametrize("text", [
    "The ECE falls from {glue:text}`ece_before:.1f` % to {glue:text}`ece_after:.1f` %.",
    "We use {fixed}`15` equal-width bins and {fixed}`3` seeds.",
    "Guo et al. report {quote}`16.53 % <guo2017calibration>` for ResNet-110 on CIFAR-100.",
    "<!-- fixed -->\nA constant predictor says 0.8 and is right on 70 % of the inputs.",
    "<!-- quote: guo2017calibration -->\n| model | ECE |\n|---|---|\n| ResNet-110 | 16.53 |",
    "Chapters 3 to 5 and Figure 2 of Guo et al. (2017); chapter 4, Lab 3, exercise 10.",
    "CIFAR-100, ResNet-110, LeNet-5, MNIST-1D, an L2 error, an MLP 2x512.",
    "$\\mathrm{ECE} = \\sum_{m=1}^{15} 0.5$ and `metrics.ece(p, y, n_bins=15)`.",
    "(ch1-bias)=\n## Binned estimators\n\n1. first\n2. second",
    "Both are 0 for a perfectly calibrated model, and at most 1; a 95 % interval.",
    "```{code-cell} ipython3\n:tags: [remove-cell]\n\nglue('x', 3.0)  # " + "x" * 80 + "\n```",
])
def test_glued_marked_and_non_numbers_pass(text):
    assert kinds(text) == []


def test_a_block_mark_covers_one_block_only():
    text = "<!-- fixed -->\nWe use 15 bins.\n\nThe ECE is 4.3 %."
    assert kinds(text) == [("number", "4.3")]


def test_a_quotation_needs_a_known_citation():
    assert [k for k, _ in kinds("{quote}`16.53 % <nobody2030>`")] == ["quote"]
    assert [k for k, _ in kinds("{quote}`16.53 %`")] == ["quote"]
    assert [k for k, _ in kinds("<!-- quote: nobody2030 -->\n| 16.53 |")] == ["quote"]


def test_numbers_in_directive_bodies_and_captions_are_prose():
    text = ("```{exercise} Warm-up\n:label: ex-1\n\nA classifier is right on 70 % of inputs.\n```\n\n"
            "```{code-cell} ipython3\n---\nmystnb:\n  figure:\n    caption: >-\n      The ECE is 6.4 %.\n"
            "    name: fig-x\n  image:\n    alt: >-\n      A bar of 6.4 percent.\n---\nfig = 1\n```")
    assert kinds(text) == [("number", "70"), ("number", "6.4")]


def test_long_shown_code_lines_are_flagged_hidden_ones_not():
    long = "x = " + "1 + " * 20 + "1"
    assert len(long) > audit.MAX_CODE_LINE
    shown = f"```{{code-cell}} ipython3\n{long}\n```"
    hidden = f"```{{code-cell}} ipython3\n:tags: [remove-input]\n\n{long}\n```"
    fenced = f"```python\n{long}\n```"
    assert [k for k, _ in kinds(shown)] == ["code"]
    assert kinds(hidden) == []
    assert [k for k, _ in kinds(fenced)] == ["code"]
    assert kinds(f"```{{code-cell}} ipython3\n{'y = 1' + ' ' * 74}\n```") == []   # 79 is allowed


def test_bib_keys_read_the_books_bibliography():
    keys = audit.bib_keys()
    assert {"guo2017calibration", "torchuncertainty_ts"} <= keys


def test_main_fails_on_a_typed_number_and_passes_a_clean_page(tmp_path, capsys):
    bad, good = tmp_path / "bad.md", tmp_path / "good.md"
    bad.write_text("The ECE is 4.3 %.\n", encoding="utf-8")
    good.write_text("The ECE is {glue:text}`ece:.1f` %.\n", encoding="utf-8")
    assert audit.main([str(bad)]) == 1
    assert "bad.md:1: typed number" in capsys.readouterr().out
    assert audit.main([str(good)]) == 0


def test_the_audited_pages_of_the_book_pass():
    """Every chapter, report and lab: every number glued or marked, code within 79 characters."""
    pages = audit.pages()
    names = {p.name for p in pages}
    assert {"01_theory.md", "02_causes.md", "03_binary.md", "04_multiclass.md",
            "appendix_coverage.md"} <= names
    found = [str(f) for p in pages for f in audit.audit_file(p)]
    assert found == []


def test_a_quiz_question_s_number_is_numbering_but_its_data_are_numbers():
    from calibcourse.tools.audit import audit_text

    assert audit_text("**Question 3.** Which estimate is biased?") == []
    assert [f.text for f in audit_text("**Question 4.** A model is measured on 200 samples.")] == ["200"]


def test_a_lab_s_part_labels_references_and_points_are_numbering():
    from calibcourse.tools.audit import audit_text

    text = ("**2. ECE** from your bin statistics; see part 6 and questions 5 and 6.\n\n"
            "**Question 5** (written, 4 points). Why?\n\n**Rubric (4 points).** A table of 15 rows.\n")
    assert [f.text for f in audit_text(text)] == ["15"]
