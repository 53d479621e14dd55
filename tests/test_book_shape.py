"""The book's two parts: Part I, the course (six chapters that teach), and Part II, the study (a
reproduction report per source). The table of contents, each chapter's length, its sentences as
they render (no run names, template names, profiles or the page's own variables), each report's
sections, and the statements that a number decides."""
import re
from pathlib import Path

import nbformat
import numpy as np
import pytest
import yaml

from calibcourse.tools import build
from calibcourse.tools.prose import MAX_CHAPTER_WORDS, plumbing, prose_words

ROOT = Path(__file__).resolve().parents[1]

PART_ONE = ["01_theory", "02_causes", "03_binary", "04_multiclass", "05_meta_regularization", "06_practice"]
PART_TWO = ["study_guo2017", "study_temperature", "study_metareg", "study_shift", "what_held", "appendix_coverage"]
REPORT_HEADINGS = ["What the paper claims", "Set-up and departures", "Registered claims and verdicts", "Results",
                   "Diagnosis", "What would decide the undecided"]



def _toc():
    return yaml.safe_load((ROOT / "_toc.yml").read_text())


def _names(part):
    return [Path(c["file"]).name for c in part["chapters"]]


# --------------------------------------------------------------------------- the table of contents
def test_the_toc_has_the_course_then_the_study_then_labs_guides_about():
    parts = _toc()["parts"]
    captions = [p["caption"] for p in parts]
    assert captions[:2] == ["Part I: the course", "Part II: the study"], captions
    assert captions[2:] == ["Labs", "Guides", "About"], captions
    assert _names(parts[0]) == PART_ONE
    study = _names(parts[1])
    assert study == PART_TWO
    # every page of Part I is a numbered chapter, and no page of Part II is
    assert all(re.match(r"^0[1-6]_", n) for n in _names(parts[0]))
    assert not any(re.match(r"^\d\d_", n) for n in study)


def test_the_landing_page_and_the_schedule_say_who_each_part_is_for():
    from calibcourse.study.course import schedule

    intro = " ".join((ROOT / "book" / "intro.md").read_text().split())
    assert "**Part I, the course**, is for a student" in intro
    assert "**Part II, the study**, is for an instructor, a referee or a researcher" in intro
    assert [w.chapter for w in schedule.WEEKS] == PART_ONE           # a week reads one chapter of Part I
    assert all(not w.also for w in schedule.WEEKS)                   # and nothing else: chapter 5 is one week
    evidence = {name for w in schedule.WEEKS for name, _ in w.evidence}
    assert evidence == {n for n in PART_TWO if n.startswith("study_")}
    page = schedule.schedule_page()
    assert "Part II, the study, is optional reading" in page and "It is not in the times above" in page


# --------------------------------------------------------------------------- Part I: length
@pytest.mark.parametrize("name", PART_ONE)
def test_a_chapter_is_at_most_a_weeks_prose(name):
    words = prose_words(ROOT / "notebooks" / f"{name}.md")
    assert words <= MAX_CHAPTER_WORDS, f"{name}: {words} words of prose (at most {MAX_CHAPTER_WORDS})"


# --------------------------------------------------------------------------- Part I: sentences as rendered
def _template_names():
    """Every "model, data" and "data, model" pair the runs' configs name, in every profile."""
    from calibcourse.study.runs.experiments import data_label, experiments, model_label

    names = set()
    for profile in ("ci", "default", "full"):
        for run in experiments(profile):
            model, data = model_label(run, profile), data_label(run, profile)
            names |= {f"{model}, {data}", f"{data}, {model}"}
    return sorted(names)


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """Part I's pages executed in the ci profile (as CI can, before any book is built), each once."""
    out_dir = tmp_path_factory.mktemp("part-one")
    pages = {p.source.stem: p for p in build.notebook_pages(ROOT)}
    done = {}

    def get(name):
        if name not in done:
            page = pages[name]
            page = build.Page(page.toc_entry, page.source, out_dir / f"{name}.ipynb")
            build.execute_page(page, {"profile": "ci", "edition": "student"}, ROOT, out_dir / "failed")
            done[name] = nbformat.read(page.output, as_version=4)
        return done[name]

    return get


def test_the_plumbing_check_catches_what_it_is_for():
    """The three sentences the review found (the ledger never introduced, a template name pasted in,
    a code variable as a subject) and the other kinds, each caught; a clean sentence is not."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("from calibcourse.study.runs.experiments import runs\nfound = {}\n"
                                  "decisive = 'x'"),
        nbformat.v4.new_code_cell("", outputs=[nbformat.v4.new_output(
            "display_data", data={"application/papermill.record/text/plain": "'1-D CNN, MNIST-1D'"},
            metadata={"scrapbook": {"name": "decisive"}})]),
        nbformat.v4.new_markdown_cell("The ledger tests both directions on the replicate test sets."),
        nbformat.v4.new_markdown_cell("We fit the four methods on the validation split of {glue:text}`decisive`."),
        nbformat.v4.new_markdown_cell("`found` holds chapter 2's networks, one run each."),
        nbformat.v4.new_markdown_cell("Read `runs(\"ch2/nll_overfit\", profile)`; reference 002's summary."),
    ]
    rules = [f.split(":")[0] for f in plumbing(nb, labels=["1-D CNN, MNIST-1D"])]
    assert rules.count("internal id") == 2 and "template name" in rules and "run name" in rules
    assert "profile" in rules and rules.count("code identifier") == 2   # `found`, and `runs(...)`, a study import
    clean = nbformat.v4.new_notebook()
    clean.cells = [nbformat.v4.new_code_cell("found = {}"), nbformat.v4.new_markdown_cell(
        "Fit `cal.TemperatureScaling()` with `strategy=\"quantile\"` on the one-dimensional network's "
        "validation split; {ref}`the claim <claim-x>` held.")]
    assert plumbing(clean, labels=["1-D CNN, MNIST-1D"]) == []


@pytest.mark.parametrize("name", PART_ONE)
def test_a_chapters_rendered_prose_has_no_plumbing(name, executed):
    findings = plumbing(executed(name), labels=_template_names())
    assert findings == [], f"{name}:\n  " + "\n  ".join(findings)


#: a claim's interval or verdict pasted into a sentence: {glue:text}`<id>-interval` (-verdict; a page
#: that quotes a report's claims glues <id>-text and <id>-v)
_QUOTED_RESULT = re.compile(r"\{glue:text\}`(ch\d-[\w-]+?)-(?:interval|verdict|text|v)(?::[^`]*)?`")


def _claims_of_a_chapter(text):
    """The claims a chapter's source declares (``ledger.claim("id", ...)``) and the ones whose
    results its sentences quote, retired ones left out (a retired claim is no result)."""
    from calibcourse.study.analysis.ledger.reads import RETIRED

    declared = set(re.findall(r'ledger\.claim\(\s*(?:id=)?f?"([\w-]+)"', text))
    return (declared | set(_QUOTED_RESULT.findall(text))) - RETIRED


def _publishes(text, chapter):
    """Whether a page publishes the claims it declares for What held and the reports: the chapter
    itself, or (for a chapter that only quotes them) a report of Part II that declares them."""
    if "ledger.publish()" in text:
        return True
    if f"Ledger(chapter={chapter}, glue=False)" not in text:
        return False
    reports = [(ROOT / "notebooks" / f"{n}.md").read_text() for n in PART_TWO if n.startswith("study_")]
    return any(f"Ledger(chapter={chapter})" in r and ("ledger.table()" in r or "ledger.publish()" in r)
               for r in reports)


def test_the_claims_check_catches_an_unlinked_or_unpublished_result():
    page = ('ledger.claim("ch9-a", claim="x")\nledger.publish()\n'
            "The gap is {glue:text}`ch9-a-interval` ({ref}`the claim <claim-ch9-a>`); "
            "and {glue:text}`ch9-b-v` ({glue:text}`ch9-b-text:s`).")
    assert _claims_of_a_chapter(page) == {"ch9-a", "ch9-b"}
    assert set(re.findall(r"<claim-([\w-]+)>", page)) == {"ch9-a"}          # ch9-b's result is not linked
    assert _publishes(page, 9) and not _publishes(page.replace("ledger.publish()", ""), 9)
    assert not _publishes("quoted = Ledger(chapter=9, glue=False)", 9)        # no report declares chapter 9's


@pytest.mark.parametrize("name", PART_ONE)
def test_a_chapter_links_its_results_and_leaves_its_claims_table_to_part_two(name):
    text = (ROOT / "notebooks" / f"{name}.md").read_text()
    assert "ledger.table()" not in text and "## What this chapter tested" not in text
    assert _publishes(text, int(name[:2])), f"{name}: its claims reach neither What held nor a report"
    ids = _claims_of_a_chapter(text)
    linked = set(re.findall(r"<claim-([\w-]+)>", text))
    assert ids and ids <= linked | {i for i in ids if "{" in i}, f"{name}: claims not linked: {ids - linked}"


# --------------------------------------------------------------------------- Part II
@pytest.mark.parametrize("name", [n for n in PART_TWO if n.startswith("study_")])
def test_a_report_has_the_six_sections_in_order(name):
    text = (ROOT / "notebooks" / f"{name}.md").read_text()
    headings = re.findall(r"(?m)^## (.+?)\s*$", text)
    assert headings == REPORT_HEADINGS, f"{name}: {headings}"
    if "published_claims(" in text or ".ipynb::" in text:   # it reads its chapters' executed pages:
        assert "calibcourse:" in text and "reads:" in text  # it re-executes when they change
    if "published_claims(" in text:                         # and says which of their claims were registered
        assert "with_registration(" in text, f"{name}: its claims without their registration"


# --------------------------------------------------------------------------- statements a number decides
def test_resnet20_is_less_accurate_than_lenet5_and_vector_scaling_repairs_it():
    """Chapter 2 (and chapter 4's table): on the default edition's digits the 'modern' ResNet-20
    errs more than LeNet-5, paired on the same digits; it predicts one class far too rarely, its
    errors pile onto one confusion, and a per-class linear map of its logits brings it below
    LeNet-5."""
    from calibcourse.calibration import calibrators as cal
    from calibcourse.calibration import metrics, stats
    from calibcourse.study.runs.experiments import runs

    pair = runs("ch2/model/", "default")
    lenet, resnet = pair["ch2/model/small"], pair["ch2/model/large"]
    y = resnet.labels("test")
    d = stats.paired_difference(metrics.error, resnet.probs("test"), lenet.probs("test"), y, n_boot=1000)
    assert d.low > 0 and 0.02 < d.estimate < 0.035                     # +2.7 [+1.0, +4.4] points
    pred = resnet.probs("test").argmax(1)
    ratio = np.bincount(pred, minlength=10) / np.bincount(y, minlength=10)
    assert ratio.argmin() == 5 and ratio.min() < 0.7                  # 63 fives predicted per 100 true
    assert ((y == 5) & (pred == 3)).sum() >= 0.25 * (pred != y).sum()  # 20 of its 68 errors are 5 -> 3
    vs = cal.VectorScaling().fit(resnet.logits("val"), resnet.labels("val"))
    assert metrics.error(vs.predict_proba(resnet.logits("test")), y) < metrics.error(lenet.probs("test"), y)
    text = (ROOT / "notebooks" / "02_causes.md").read_text()
    assert "the test cannot tell the two apart" not in text and "pair_acc_words" in text
    assert "{glue:text}`fix_sentence`" in (ROOT / "notebooks" / "04_multiclass.md").read_text()


def test_batch_normalization_layers_are_affine_and_still_scale_the_logits():
    """Chapter 2: the MLP's BatchNorm1d layers learn a scale and a shift, so the logits do not grow
    'only through the last layer': scaling the last normalization's scale and shift by c scales
    the logits (minus the last layer's bias) by c."""
    import torch

    from calibcourse.study.training.models import build_model

    torch.manual_seed(0)
    net = build_model("mlp", input_shape=(40,), num_classes=10, depth=3, width=16, batch_norm=True).eval()
    norms = [m for m in net.modules() if isinstance(m, torch.nn.BatchNorm1d)]
    assert norms and all(m.affine and m.weight.requires_grad for m in norms)
    last = [m for m in net.modules() if isinstance(m, torch.nn.Linear)][-1]
    x = torch.randn(32, 40)
    with torch.no_grad():
        before = net(x) - last.bias
        norms[-1].weight.mul_(3.0), norms[-1].bias.mul_(3.0)
        after = net(x) - last.bias
    assert torch.allclose(after, 3.0 * before, atol=1e-5)
    text = " ".join((ROOT / "notebooks" / "02_causes.md").read_text().split())
    assert "only the last layer's weights can scale the logits" not in text


def test_the_ece_is_not_piecewise_constant_in_the_temperature():
    """Chapter 3: between two temperatures that leave every confidence in its bin, the ECE still
    moves (each bin's mean confidence moves with T); it is piecewise smooth, not piecewise constant."""
    from scipy.special import expit

    from calibcourse.calibration import binning, metrics
    from calibcourse.study.runs.experiments import runs

    sig = runs("ch3/nine1d/sigmoid_overfit", "ci")["ch3/nine1d/sigmoid_overfit"]
    z, y = sig.logits("test"), sig.labels("test")
    temps = (1.5, 1.50005, 1.5001)
    probs = [expit(z / t) for t in temps]
    conf = [np.maximum(p, 1 - p) for p in probs]                   # the top-label confidence
    bins = [binning.assign_bins(c, 15)[0] for c in conf]
    assert all(np.array_equal(bins[0], b) for b in bins[1:])          # no confidence changed bin
    eces = [metrics.ece(p, y, reliability="top_label") for p in probs]
    assert len(set(eces)) == 3 and abs(eces[0] - eces[2]) > 1e-6, eces
    text = (ROOT / "notebooks" / "03_binary.md").read_text()
    takeaways = text[text.index("## Key takeaways"):text.index("## Self-check quiz")]
    assert "piecewise constant" not in takeaways


def test_a_claim_interval_has_one_level_and_the_table_says_which():
    """Chapter 4: the claim 'TS is the most effective' was printed as '+1.8 [+0.5, +2.8]' under
    '95 % interval', a Bonferroni lower end joined to a 95 % upper end. The chapter now declares
    the decisive rival's interval at one level, and a report's table names a level other than 95 %."""
    from calibcourse.calibration import metrics, stats
    from calibcourse.study.analysis.ledger import Ledger
    from calibcourse.study.course.evidence import claims_table

    rng = np.random.default_rng(3)
    q = rng.uniform(0.4, 1, 3000)
    y = (rng.random(3000) < q).astype(int)
    d = stats.rivals_difference(metrics.ece, np.clip(q + 0.03, 0, 1),
                                {"calibrated": q, "worse": np.clip(q + 0.08, 0, 1)}, y,
                                n_boot=300, reliability="positive_class")
    assert d.low != d.per_rival["calibrated"].low                     # the mixed interval: two levels
    rival, one = d.decisive()
    claim = Ledger(chapter=4, glue=False).claim("x", claim="TS is best", source="s", effect="e", interval=one)
    assert claim.level == pytest.approx(1 - 0.05 / 2) and claim.verdict == stats.verdict(d.low, d.high)
    assert "(97.5 % interval)" in claims_table([claim.as_dict()], chapter_links=False)
    text = (ROOT / "notebooks" / "04_multiclass.md").read_text()
    assert ".decisive()" in text and "interval=one" in text
