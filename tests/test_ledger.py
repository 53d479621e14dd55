"""calibcourse.study.analysis.ledger: what the ledger says about a claim follows from its interval."""
import re

import numpy as np
import pytest
from scipy import stats as sps

from calibcourse.calibration import stats
from calibcourse.study.analysis import ledger as ledgermod


def _paired(est, v_test, v_seed, n_seeds=5, n=5000, level=0.95, n_positive=3):
    """A seed-paired interval as stats.paired_seeds_contrast makes it, from its variance parts."""
    total = v_test + v_seed
    df = total ** 2 / (v_seed ** 2 / (n_seeds - 1))
    half = sps.t.ppf(0.5 + level / 2, df) * np.sqrt(total)
    return stats.PairedSeeds(est, est - half, est + half, level, est, n, n_seeds, "paired seeds",
                             np.full(n_seeds, est), n_positive, v_test, v_seed, df)


def _claim(interval, null=0.0, direction="below"):
    return ledgermod.Ledger(5, glue=False).claim("x", "a lowers the ECE", "src", "ECE(a) - ECE(b)", interval,
                                         null=null, direction=direction)


def _number(text, before):
    """The integer printed just before ``before`` in ``text`` (e.g. the 60 of "about 60 seeds")."""
    return int(re.search(r"about ([\d,]+) " + before, text).group(1).replace(",", ""))


def _excludes(d, gap, n_seeds, test_factor):
    """Whether the conservative interval (t with n_seeds - 1 df) with that many seeds and test samples
    excludes a null ``gap`` away, the mean difference and spreads unchanged."""
    s2 = d.v_seed * d.n_seeds
    q = sps.t.ppf(0.5 + d.level / 2, n_seeds - 1)
    return q * np.sqrt(d.v_test / test_factor + s2 / n_seeds) < gap


def test_an_estimate_beyond_the_null_says_more_seeds_would_decide_not_held():
    d = _paired(0.11, v_test=2.5e-3, v_seed=5e-3, n_seeds=10)  # the claim: below 0; the estimate: above
    c = _claim(d)
    assert c.verdict == "inconclusive"
    assert "as not held" in c.why and "as held" not in c.why and "seed spread dominates" in c.why
    seeds = _number(c.why, "seeds")
    assert _excludes(d, 0.11, seeds, 1) and not _excludes(d, 0.11, seeds - 1, 1)
    # the same interval on the claimed side: more seeds would decide it held
    c = _claim(_paired(-0.11, v_test=2.5e-3, v_seed=5e-3, n_seeds=10))
    assert "as held" in c.why and "not held" not in c.why


def test_more_test_samples_decide_where_the_seed_part_is_small():
    d = _paired(0.01, v_test=4e-5, v_seed=1e-6, n_seeds=10, n=2000)
    c = _claim(d, direction="above")
    assert c.verdict == "inconclusive" and "test samples dominate" in c.why and "as held" in c.why
    n = _number(c.why, "test samples")
    # with n test samples the test part shrinks by 2000 / n: the interval (its t quantile on
    # Satterthwaite's degrees of freedom, as stats.paired_seeds_contrast) then just excludes 0
    v = d.v_test * 2000 / n + d.v_seed
    q = sps.t.ppf(0.975, v ** 2 / (d.v_seed ** 2 / (d.n_seeds - 1)))
    assert q * np.sqrt(v) == pytest.approx(0.01, rel=0.02)
    # where the seeds dominate, the quantile stays near t with n_seeds - 1 degrees of freedom, and
    # more test samples alone cannot decide what a normal quantile would have said they could
    d2 = _paired(0.46e-2, v_test=0.0125e-4, v_seed=0.0569e-4, n_seeds=10, n=5000)
    c2 = _claim(d2)
    assert c2.verdict == "inconclusive" and "more test data cannot" in c2.why and "test samples" not in c2.why
    assert n <= ledgermod.MAX_TEST_FACTOR * 2000


def test_when_neither_part_alone_can_decide_the_text_names_both_and_no_dominance():
    d = _paired(0.08, v_test=4.6e-3, v_seed=2.4e-3, n_seeds=5)  # test share 66 %, seeds alone too wide
    c = _claim(d)
    assert "dominate" not in c.why and "neither alone" in c.why and "as not held" in c.why
    assert "66 %" in c.why and "34 %" in c.why
    seeds = _number(c.why, "seeds")
    factor = int(re.search(r"with (\d+)x the test samples", c.why).group(1))
    assert factor <= ledgermod.MAX_TEST_FACTOR and seeds <= ledgermod.MAX_SEEDS and _excludes(d, 0.08, seeds, factor)
    # seeds dominate (share >= 50 %): never "the test samples dominate"
    c = _claim(_paired(0.08, v_test=2.4e-3, v_seed=4.6e-3, n_seeds=5))
    assert "test samples dominate" not in c.why


def test_a_claim_out_of_reach_cannot_be_decided_at_this_scale():
    # a single test set: the interval would exclude the null only with (1.6 / 0.07)^2 = 520x the samples
    c = _claim(stats.Difference(0.18, -1.0, 2.2, 0.95, n=10000), null=0.25, direction="above")
    assert c.why.startswith("underpowered") and "cannot be decided at this scale" in c.why
    assert not re.search(r"\d{2},\d{3}", c.why)  # no test set size it names
    # seeds paired by seed: even 100 seeds with 10x the test samples would not do
    c = _claim(_paired(0.016, v_test=1.1e-4, v_seed=1.6e-4, n_seeds=5, n=700), null=0.01)
    assert "cannot be decided at this scale" in c.why and "100 seeds" in c.why


def test_a_claim_whose_test_detects_far_more_than_its_margin_is_flagged_underpowered():
    wide = stats.Difference(0.016, -0.017, 0.049, 0.95, n=700)  # detects ~4.7 points
    c = _claim(wide, null=0.01)
    assert c.detectable / 0.01 > 2 and c.underpowered and c.why.startswith("underpowered: it detects 4.7 points")
    assert "4.7x its margin of 1.0 points" in c.why
    narrow = stats.Difference(0.005, -0.001, 0.0099, 0.95, n=5000)  # detects ~0.8 points < 2 x 1
    assert not _claim(narrow, null=0.01).underpowered
    assert not _claim(wide, null=0.0).underpowered  # no margin: nothing to compare with
    page = ledgermod.ledger_page([c.as_dict()])
    assert "(*underpowered*)" in page


def test_no_minus_zero_and_one_more_decimal_next_to_the_null():
    c = _claim(stats.Difference(0.0048, -0.0001, 0.0097, 0.95, n=5000), null=0.01)
    assert c.verdict == "held" and c.interval_text == "+0.48 [-0.01, +0.97] points"
    c = _claim(stats.Difference(-0.0004, -0.0004, 0.0003, 0.95, n=5000))
    assert c.interval_text == "-0.04 [-0.04, +0.03] points" and "-0.0 " not in c.interval_text
    # ends far from the null keep one decimal
    assert _claim(stats.Difference(-0.03, -0.04, -0.02, 0.95)).interval_text == "-3.0 [-4.0, -2.0] points"
    page = ledgermod.ledger_page([c.as_dict()])
    assert "-0.0 " not in page and "-0.0]" not in page and "-0.0," not in page


def test_one_interval_reads_the_same_in_the_ledger_and_on_the_page():
    """The ledger printed +0.5 [0.0, +0.93] for chapter 5's error cost where the chapter's table printed
    +0.47 [+0.01, +0.93]: the ledger gave the end next to the margin a second decimal and the rest one
    (and dropped the sign of 0.01 rounded to 0.0). Both now print through tables.fmt_difference."""
    from calibcourse.study.analysis.tables import fmt_difference

    d = stats.Difference(0.004693, 0.000131, 0.009255, 0.95, n=5000)
    c = _claim(d, null=0.01)
    assert c.interval_text == fmt_difference(d, digits=2) == "+0.47 [+0.01, +0.93] points"
    assert c.interval_text == fmt_difference(d, null=0.01)
    # every number of an interval has the same decimals, whatever the boundary
    for null in (0.0, 0.01, -0.02, 0.0093):
        text = _claim(d, null=null).interval_text
        decimals = {len(x.split(".")[1]) for x in re.findall(r"[+-]?\d+\.\d+", text)}
        assert len(decimals) == 1, text


def test_the_interval_of_seeds_added_after_a_verdict_is_that_of_those_seeds_alone():
    from calibcourse.calibration import metrics

    rng = np.random.default_rng(3)
    n, k = 2000, 12
    y = rng.integers(0, 3, n)
    a = [rng.dirichlet(np.ones(3) * 2, n) for _ in range(k)]
    b = [rng.dirichlet(np.ones(3) * 2, n) for _ in range(k)]
    d = stats.paired_seeds_difference(metrics.error, a, b, y, n_boot=200)
    c = ledgermod.Ledger(5, glue=False).claim("x", "lowers", "src", "d", d)
    splits = {s[0]: s[1:] for s in c.seed_splits}
    assert sorted(splits) == list(range(2, k - 1))
    # the same test run on the planned seeds' and on the added seeds' predictions alone
    first = stats.paired_seeds_difference(metrics.error, a[:4], b[:4], y, n_boot=200)
    alone = stats.paired_seeds_difference(metrics.error, a[4:], b[4:], y, n_boot=200)
    assert np.allclose(splits[4][:3], first[:3], rtol=1e-12, atol=1e-15)
    assert np.allclose(splits[4][3:], alone[:3], rtol=1e-12, atol=1e-15)
    # without a test part it is the paired t interval of scipy on those seeds
    d0 = stats.paired_seeds_difference(metrics.error, a, b, y, n_boot=0)
    diffs = np.array([metrics.error(p, y) - metrics.error(q, y) for p, q in zip(a[4:], b[4:], strict=True)])
    ci = sps.ttest_rel(diffs, np.zeros_like(diffs)).confidence_interval()
    assert np.allclose(d0.subset(range(4, k))[1:3], (ci.low, ci.high), rtol=1e-10)
    with pytest.raises(ValueError, match="at least two distinct positions"):
        d.subset([3])


def _block(page: str, start: str) -> str:
    """The lines of ``page`` from the one starting with ``start`` to the next blank line."""
    lines = page.splitlines()
    i = next(i for i, line in enumerate(lines) if line.startswith(start))
    return "\n".join(lines[i:lines.index("", i)])


def _registered(claims, status="registered"):
    return {c.id: {"registration": status, "why": "w", "amendments": []} for c in claims}


def test_the_page_states_multiplicity_over_the_registered_tests_run():
    led = ledgermod.Ledger(2, glue=False)
    for i in range(39):
        led.claim(f"c{i}", "lowers", "guo2017calibration", "d", stats.Difference(-0.03, -0.04, -0.02, 0.95, n=100))
    led.claim("open", "lowers", "guo2017calibration", "d", _paired(0.11, v_test=2.5e-3, v_seed=5e-3, n_seeds=10))
    led.claim("untested", "lowers", "guo2017calibration", "d", None, why="a description")
    claims = ledgermod.with_registration([c.as_dict() for c in led.claims], _registered(led.claims))
    page = ledgermod.ledger_page(claims)
    # 40 registered tests were run (the untested one is not a test): 5 % of them decided by chance, 2.5 % held
    assert "Of the 40 registered tests of the papers' claims that were run, about 2 would then be decided " \
           "by chance alone, 1 of them as a false \"held\"" in page
    assert "not a share of the verdicts decided" in page
    assert "Holm" in page and "1 - 0.05/40" in page and "does not apply it" in page
    assert "bootstrap hull intervals: 39" in page and "t intervals over seeds paired by seed: 1" in page


def test_the_tally_counts_like_with_like():
    """Only registered tests of the papers' claims make the headline; post hoc and amended ones, the course's
    own claims, sanity checks and retired claims are counted apart (the 36 "held" of issue 46 mixed them)."""
    led = ledgermod.Ledger(6, glue=False)
    held = stats.Difference(-0.03, -0.04, -0.02, 0.95, n=100)
    led.claim("reg", "lowers", "ovadia2019can", "d", held)
    led.claim("late", "lowers", "ovadia2019can", "d", held)
    led.claim("changed", "lowers", "ovadia2019can", "d", held)
    led.claim("ch6-error-rises", "the error rises", "ovadia2019can", "d", held)  # a sanity check
    led.claim("ch6-ts-gain-shrinks", "retired as a test", "calibcourse_claims", "d",
              stats.Difference(0.03, 0.02, 0.04, 0.95, n=100))  # retired: not held, never counted
    led.claim("ours", "lowers", "calibcourse_claims", "d", held)
    records = {**_registered(led.claims), "late": {"registration": "post hoc", "why": "after"},
               "changed": {"registration": "amended", "why": "w", "amendments": [
                   {"date": "d", "what": "seeds added after a verdict: 10 at its first verdict, 30 now"}]}}
    claims = ledgermod.with_registration([c.as_dict() for c in led.claims], records)
    assert [c["kind"] for c in claims] == ["paper", "paper", "paper", "sanity check", "retired", "course"]
    page = ledgermod.ledger_page(claims)
    assert "**Registered tests of the papers' claims: 1 held, 0 not held, 0 inconclusive.**" in page
    rows = {line.split(" | ")[0].strip("| "): line for line in page.splitlines() if line.startswith("| ")}
    assert rows["registered tests of the papers' claims"].endswith("| 1 | 0 | 0 | 0 | 1 |")
    assert rows["the papers' claims, post hoc"].endswith("| 1 | 0 | 0 | 0 | 1 |")
    assert rows["the papers' claims, amended"].endswith("| 1 | 0 | 0 | 0 | 1 |")
    assert rows["sanity checks (not counted)"].endswith("| 1 | 0 | 0 | 0 | 1 |")
    assert rows["retired (not counted)"].endswith("| 0 | 1 | 0 | 0 | 1 |")
    assert rows["the course's own claims, registered"].endswith("| 1 | 0 | 0 | 0 | 1 |")
    # every claim has a target other pages link, and its registration on its row
    for c in claims:
        assert f"({'claim-' + c['id']})=" in page
    assert "*post hoc*" in page and "*amended*" in page
    # the paragraph of Ovadia et al.: 3 counted, 1 registered, the sanity check apart; nothing of the course's
    para = _block(page, "**Ovadia et al. (2019)**")
    assert "3 claims tested here, 1 of them registered before its runs; of the others, 1 declared after its " \
           "runs, 1 amended (seeds added after a verdict: 1)" in para
    assert "- *Survived* (3): lowers (registered); lowers; lowers." in para
    assert "- *Not counted*: the error rises (sanity check)." in para and "Did not survive" not in para
    course = _block(page, "**The course's own claims**")
    assert "Did not survive" not in course and "retired as a test (retired)" in course


def test_the_page_follows_the_verdicts():
    """The paragraphs are made from the ledger: a verdict that changes moves its claim."""
    led = ledgermod.Ledger(5, glue=False)
    c = led.claim("m", "lowers the ECE", "wang2023metareg", "d", stats.Difference(-0.03, -0.04, -0.02, 0.95, n=9))
    page = ledgermod.ledger_page(ledgermod.with_registration([c.as_dict()], _registered([c])))
    para = _block(page, "**Meta-regularization")
    assert "*Survived* (1): lowers the ECE (registered)." in para and "Did not survive" not in para
    d = {**c.as_dict(), "estimate": 0.03, "low": 0.02, "high": 0.04, "verdict": "not held"}
    para = _block(ledgermod.ledger_page(ledgermod.with_registration([d], _registered([c]))), "**Meta-regularization")
    assert "*Did not survive* (1): lowers the ECE (registered)." in para and "Survived" not in para


def test_seeds_added_after_a_verdict_are_reported_beside_the_pooled_interval():
    from calibcourse.calibration import metrics

    rng = np.random.default_rng(7)
    n, k = 3000, 8
    y = rng.integers(0, 2, n)
    a = [rng.dirichlet([2, 2], n) for _ in range(k)]
    b = [rng.dirichlet([2, 2], n) for _ in range(k)]
    d = stats.paired_seeds_difference(metrics.error, a, b, y, n_boot=100)
    c = ledgermod.Ledger(5, glue=False).claim("x", "costs less than 1 point", "wang2023metareg", "d", d, null=0.01)
    rec = {"x": {"registration": "amended", "why": "w", "seeds": list(range(k)), "planned_seeds": [0, 1, 2],
                 "seeds_added": {"date": "2026-11-27T22:58:44Z"},
                 "amendments": [{"date": "2026", "what": "seeds added after a verdict: 3 then, 8 now"}]}}
    claim = ledgermod.with_registration([c.as_dict()], rec)[0]
    first = stats.paired_seeds_difference(metrics.error, a[:3], b[:3], y, n_boot=100)
    alone = stats.paired_seeds_difference(metrics.error, a[3:], b[3:], y, n_boot=100)
    added = claim["added_seeds"]
    assert added["planned"] == 3 and added["added"] == 5
    assert np.allclose(added["planned_interval"], first[:3], rtol=1e-12, atol=1e-15)
    assert np.allclose(added["added_interval"], alone[:3], rtol=1e-12, atol=1e-15)
    page = ledgermod.ledger_page([claim])
    from calibcourse.study.analysis.tables import fmt_difference

    assert f"On the 3 planned seeds: {fmt_difference(first, null=0.01)}" in page
    assert f"on the 5 added seeds alone: {fmt_difference(alone, null=0.01)}" in page
    assert "pooled over all 8" in page and "3 → 8 seeds" in page
    # planned seeds that are not the first ones: said, not computed
    rec["x"]["planned_seeds"] = [0, 2, 4]
    assert "not the first ones" in ledgermod.with_registration([c.as_dict()], rec)[0]["added_seeds"]["why"]


def test_a_quantity_that_is_not_a_difference_prints_without_a_sign():
    from calibcourse.calibration import stats as S

    led = ledgermod.Ledger(chapter=3, glue=False)
    t = S.Difference(2.85, 2.099, 3.25, 0.95, n=500)
    c = led.claim("t", "needs a temperature above 1", "s", "the temperature", t, null=1.0, direction="above",
                  scale=1, unit="", signed=False)
    assert c.interval_text == "2.850 [2.099, 3.250]" and c.verdict == "held"
    d = led.claim("d", "lowers it", "s", "a difference", S.Difference(-0.012, -0.02, -0.004, 0.95, n=500))
    assert d.interval_text == "-1.2 [-2.0, -0.4] points"


def test_a_test_that_cannot_inform_its_verdict_is_counted_apart_with_its_reason():
    """ch5-sgd-sece-vs-ts tests σγ-SECE (SGD), not FLγ-SECE; ch5-mce-vs-cedece tests against a broken
    baseline, decided only by the seeds added after its first verdict: neither "did not survive" (review of
    the merged book, MAJOR 7); both are listed, with the reason, under "not informative (not counted)"."""
    from calibcourse.study.analysis.ledger.reads import NOT_INFORMATIVE

    led = ledgermod.Ledger(5, glue=False)
    worse = stats.Difference(0.02, 0.01, 0.03, 0.95, n=100)
    led.claim("ch5-sece-vs-ts", "FLγ-SECE has a lower ECE than CE + TS", "wang2023metareg", "d", worse)
    led.claim("ch5-sgd-sece-vs-ts", "σγ-SECE (SGD) has a lower ECE than CE + TS", "wang2023metareg", "d", worse)
    led.claim("ch5-mce-vs-cedece", "FLγ-SECE's MCE is at least 9.4 points below CE-DECE's", "wang2023metareg",
              "d", worse, null=-0.094)
    claims = ledgermod.with_registration([c.as_dict() for c in led.claims], _registered(led.claims))
    assert [c["kind"] for c in claims] == ["paper", "not informative", "not informative"]
    page = ledgermod.ledger_page(claims)
    para = _block(page, "**Meta-regularization")
    assert "1 claim tested here" in para
    assert "- *Did not survive* (1): FLγ-SECE has a lower ECE than CE + TS (registered)." in para
    for cid in ("ch5-sgd-sece-vs-ts", "ch5-mce-vs-cedece"):
        assert f"(not informative: {NOT_INFORMATIVE[cid]})" in para
        assert f"**Not counted**: not informative: {NOT_INFORMATIVE[cid]}." in page
    rows = {line.split(" | ")[0].strip("| "): line for line in page.splitlines() if line.startswith("| ")}
    assert rows["not informative (not counted)"].endswith("| 0 | 2 | 0 | 0 | 2 |")
    assert rows["registered tests of the papers' claims"].endswith("| 0 | 1 | 0 | 0 | 1 |")


def test_an_interval_at_another_level_says_so_on_its_row_and_restatements_differ():
    """The page's column sat under "estimate [95 % interval]" over chapter 4's 99 % intervals, and two claims
    read the same restatement (review of the merged book, MINOR 16)."""
    led = ledgermod.Ledger(4, glue=False)
    led.claim("a", "TS is the best method for the MLP 4x256: below every rival", "guo2017calibration", "d",
              stats.Difference(0.018, 0.005, 0.031, 0.99, n=5000))
    led.claim("b", "TS is the best method for the MLP 8x256: below every rival", "guo2017calibration", "d",
              stats.Difference(-0.018, -0.031, -0.005, 0.95, n=5000))
    page = ledgermod.ledger_page(ledgermod.with_registration([c.as_dict() for c in led.claims], {}))
    assert "| claim | ch. | estimate [interval] | verdict | registration |" in page and "[95 % interval]" not in page
    row = {line.split(" | ")[0]: line for line in page.splitlines() if line.startswith("| {ref}")}
    assert "+1.8 [+0.5, +3.1] points (99 %) |" in row["| {ref}`TS is the best method for the MLP 4x256 <claim-a>`"]
    assert "-1.8 [-3.1, -0.5] points |" in row["| {ref}`TS is the best method for the MLP 8x256 <claim-b>`"]
    assert "**Estimate**: +1.8 [+0.5, +3.1] points (99 %) (< 0)" in page
    same = [c.as_dict() for c in led.claims]
    same[1]["claim"] = same[0]["claim"]
    with pytest.raises(ValueError, match="read the same on the page"):
        ledgermod.check_claims(same)


def test_an_interval_end_just_past_zero_keeps_its_sign():
    """The error cost on its 10 planned seeds printed +0.7 [0.0, +1.5] points, its lower end -0.013 points
    (review of the merged book, MINOR 16): the end keeps its sign and a decimal."""
    from calibcourse.study.analysis.tables import fmt_difference

    d = (0.0073, -0.00013, 0.0145)
    assert fmt_difference(d, null=0.01) == "+0.73 [-0.01, +1.45] points"
    assert fmt_difference(d) == "+0.73 [-0.01, +1.45] points"
    assert fmt_difference((0.0073, 0.00013, 0.0145)) == "+0.73 [+0.01, +1.45] points"
    assert fmt_difference((0.03, 0.02, 0.04)) == "+3.0 [+2.0, +4.0] points"   # far from 0: one decimal
    assert fmt_difference((0.0, 0.0, 0.01)) == "0.0 [0.0, +1.0] points"        # an end on 0 stays 0.0


def test_a_retired_claim_reads_as_its_claim_with_why_it_was_retired_beside_it():
    """A retired claim's text opens with why it was retired; the page's restatement is the claim itself, and
    the reason is given once for the claims retired together (the photographs' patches)."""
    led = ledgermod.Ledger(6, glue=False)
    d = stats.Difference(0.003, 0.001, 0.005, 0.95, n=100)
    why = "retired: its images are told from the digits by brightness alone (AUROC 0.99), so it measured little. "
    led.claim("ch6-ood-ts", why + "Temperature scaling raises the AUROC by less than 0.01 (the course's claim)",
              "calibcourse_claims", "d", d, null=0.01)
    led.claim("ch6-ood-ts-lower", why + "... nor lowers it by 0.01 or more (declared after its numbers were seen)",
              "calibcourse_claims", "d", d, null=-0.01, direction="above")
    led.claim("ours", "lowers", "calibcourse_claims", "d", stats.Difference(-0.03, -0.04, -0.02, 0.95, n=100))
    claims = ledgermod.with_registration([c.as_dict() for c in led.claims], {})
    ledgermod.check_claims(claims)
    page = ledgermod.ledger_page(claims)
    assert "{ref}`Temperature scaling raises the AUROC by less than 0.01 <claim-ch6-ood-ts>`" in page
    assert "{ref}`... nor lowers it by 0.01 or more <claim-ch6-ood-ts-lower>`" in page
    course = _block(page, "**The course's own claims**")
    reason = "retired: its images are told from the digits by brightness alone (AUROC 0.99), so it measured little"
    assert ("- *Not counted*: Temperature scaling raises the AUROC by less than 0.01; ... nor lowers it by 0.01 "
            f"or more ({reason}).") in course
    assert page.count(f"**Not counted**: {reason}.") == 2   # each claim's dropdown
    assert ledgermod.retired_why("retired as a test of X (a gain): the claim") == "retired as a test of X (a gain):"


def test_a_claim_declared_with_the_runs_of_its_first_verdict_is_counted_as_such():
    """Chapter 5's claims were declared in the commit holding their first recipe's runs, then moved to the
    reference recipe's, with seeds added: the summary says both, not "declared after their runs" alone."""
    together = {"registration": "post hoc", "why": "w", "amendments": [
        {"what": "first decided on runs it no longer reads (commit 984a16e0), committed with its declaration, so "
                 "not shown declared before them; its current runs came 5.2 days later"},
        {"what": "seeds added after a verdict: 10 at its first verdict, 30 now"}]}
    items = ledgermod.with_registration(
        [{"id": i, "source": "wang2023metareg"} for i in ("a", "b", "c")],
        {"a": together, "b": {**together, "amendments": together["amendments"][:1]},
         "c": {"registration": "post hoc", "why": "w", "runs": 3, "amendments": []}})
    assert ledgermod.registration_summary(items) == (
        "3 claims, none registered; of the others, 1 declared after its runs, 2 declared with the runs of their "
        "first verdict, then moved to later runs, 1 of these 3 with seeds added after a verdict")
