"""The claims of every chapter checked, and the book's "What held" page written from them."""
from __future__ import annotations

import json
import re
from pathlib import Path

from calibcourse.calibration import stats
from calibcourse.study.analysis.ledger._texts import (
    _METHOD_TEXT,
    _VERDICT_MARK,
    CLAIM_KEYS,
    UNDERPOWERED_RATIO,
    _scale_limit,
)
from calibcourse.study.analysis.ledger.claims import Claim
from calibcourse.study.analysis.ledger.reads import NOT_INFORMATIVE, RETIRED, SANITY_CHECKS
from calibcourse.study.analysis.tables.summaries import fmt_difference

__all__ = ["check_claims", "ledger_page", "with_registration", "kind_of", "short_claim", "retired_why",
           "registration_summary", "committed_registration", "STUDIES", "KINDS"]

#: the study's reports and the sources each covers, in the book's order: ``(page, title, sources)``; the
#: course's own claims come last (a source in none of them gets a section of its own)
STUDIES = (
    ("study_guo2017", "Guo et al. (2017), with the lecture's MNIST practical",
     ("guo2017calibration", "sharipov2025lecture", "kumar2019verified")),
    ("study_temperature", "The temperature-scaling studies: the student project and the TorchUncertainty tutorial",
     ("munoz2024project", "torchuncertainty_ts")),
    ("study_metareg", "Meta-regularization (arXiv 2303.15057)", ("wang2023metareg",)),
    ("study_shift", "Ovadia et al. (2019)", ("ovadia2019can",)),
    (None, "The course's own claims", ("calibcourse_claims",)),
)
#: what a claim is, for the tally: a test of a paper's claim, the course's own claim, a sanity check of
#: the set-up, a retired claim or a test that cannot inform its verdict (the last three never counted)
KINDS = ("paper", "course", "sanity check", "retired", "not informative")
#: the kinds never counted
_APART = KINDS[2:]
COURSE_SOURCE = "calibcourse_claims"
_STATUS_TEXT = {"registered": "registered", "post hoc": "*post hoc*", "amended": "*amended*", None: "not checked"}


def check_claims(claims: list, chapters=None) -> None:
    """Validate a list of claim dicts (``_build/claims.json``): keys, unique ids, restatements that tell
    a source's claims apart (:func:`short_claim`), chapters the book has, verdicts that follow from their
    intervals by :func:`calibcourse.calibration.stats.verdict`.

    Parameters
    ----------
    claims : list of dict
        As :meth:`Claim.as_dict` writes them.
    chapters : collection of int, optional
        The book's chapter numbers (the build reads them from ``_toc.yml``); a claim of
        another chapter is refused. None: not checked.

    Returns
    -------
    None

    Raises
    ------
    ValueError
        The first problem, naming the claim.

    Examples
    --------
    >>> c = Claim("x", 1, "A", "src", "e", -0.01, -0.02, 0.005, 0.95, 0.0, "below", "held", 100, 1).as_dict()
    >>> check_claims([c])
    Traceback (most recent call last):
        ...
    ValueError: claim 'x': verdict 'held' does not follow from its interval [-0.02, 0.005] against below 0.0
    ('inconclusive')
    >>> check_claims([{**c, "verdict": "inconclusive"}])
    >>> check_claims([{**c, "verdict": "inconclusive"}], chapters={2, 3})
    Traceback (most recent call last):
        ...
    ValueError: claim 'x': chapter 1 is not one of the book's chapters [2, 3]
    >>> check_claims([{**c, "verdict": "inconclusive"}, {**c, "id": "y", "verdict": "inconclusive"}])
    Traceback (most recent call last):
        ...
    ValueError: claims 'x' and 'y' read the same on the page ('A'): say in each claim what tells them apart
    """

    seen, said = set(), {}
    for c in claims:
        missing = [k for k in CLAIM_KEYS if k not in c]
        if missing:
            raise ValueError(f"claim {c.get('id')!r} lacks the keys {missing}")
        if c["id"] in seen:
            raise ValueError(f"claim id {c['id']!r} appears twice")
        if chapters is not None and c["chapter"] not in chapters:
            raise ValueError(f"claim {c['id']!r}: chapter {c['chapter']} is not one of the book's chapters "
                             f"{sorted(chapters)}")
        seen.add(c["id"])
        short = (c["source"], short_claim(c["claim"]))
        if short in said:
            raise ValueError(f"claims {said[short]!r} and {c['id']!r} read the same on the page "
                             f"({short[1]!r}): say in each claim what tells them apart")
        said[short] = c["id"]
        learns = c.get("learns")
        if learns is not None and learns.get("verdict") != "held" and not c["claim"].startswith(
                ("γ-Net inactive", "γ-Net active but not shown to help")):
            raise ValueError(f"claim {c['id']!r}: its gamma-Net does not beat its frozen control (learns: "
                             f"{learns.get('verdict')!r}), so the claim must say 'γ-Net inactive' or "
                             "'γ-Net active but not shown to help'")
        if c["verdict"] == "not tested":
            if c["estimate"] is not None or not c.get("why"):
                raise ValueError(f"claim {c['id']!r} is 'not tested' but has numbers or no why")
            continue
        expected = stats.verdict(c["low"], c["high"], null=c["null"], direction=c["direction"])
        if c["verdict"] != expected:
            raise ValueError(f"claim {c['id']!r}: verdict {c['verdict']!r} does not follow from its interval "
                             f"[{c['low']}, {c['high']}] against {c['direction']} {c['null']} ({expected!r})")


def kind_of(claim: dict) -> str:
    """The claim's kind (:data:`KINDS`): retired claims, sanity checks and tests that cannot inform their
    verdict by their lists in :mod:`~calibcourse.study.analysis.ledger.reads`, the course's own claims by
    their source.

    Parameters
    ----------
    claim : dict
        A claim as ``_build/claims.json`` stores it (its ``id`` and ``source`` are read).

    Returns
    -------
    str
        One of :data:`KINDS`.

    Parameters
    ----------
    claim : dict
        A published claim (``id`` and ``source`` are read).

    Returns
    -------
    str
        ``"retired"``, ``"sanity check"``, ``"course"`` or ``"paper"``.

    Examples
    --------
    >>> kind_of({"id": "ch6-error-rises", "source": "ovadia2019can"})
    'sanity check'
    >>> kind_of({"id": "x", "source": "guo2017calibration"}), kind_of({"id": "y", "source": "calibcourse_claims"})
    ('paper', 'course')
    >>> kind_of({"id": "ch5-mce-vs-cedece", "source": "wang2023metareg"})
    'not informative'
    """
    if claim["id"] in RETIRED:
        return "retired"
    if claim["id"] in NOT_INFORMATIVE:
        return "not informative"
    if claim["id"] in SANITY_CHECKS:
        return "sanity check"
    return "course" if claim["source"] == COURSE_SOURCE else "paper"


def short_claim(text: str) -> str:
    """A claim's text without its parentheses and, where what is left before a colon or semicolon says
    enough, what follows it: the restatement of the page's tables.

    Parameters
    ----------
    text : str
        The claim as declared (:attr:`Claim.claim`), with any "γ-Net inactive (...): " prefix.

    Returns
    -------
    str
        The restatement.

    Examples
    --------
    >>> short_claim("FLγ-SECE has a lower ECE than CE + TS (Table 1)")
    'FLγ-SECE has a lower ECE than CE + TS'
    >>> short_claim("γ-Net inactive (focal loss at γ ≈ 2): FLγ-SECE has a lower ECE than focal loss (Table 1)")
    'FLγ-SECE has a lower ECE than focal loss'
    >>> short_claim("γ-Net active but not shown to help (its final γ 5.1 against its frozen control's): "
    ...             "FLγ-SECE has a lower ECE than FLγ-DECE")
    'FLγ-SECE has a lower ECE than FLγ-DECE'
    >>> short_claim("retired: its inputs are told apart by brightness (AUROC 0.99), so it measured little. "
    ...             "A deep ensemble separates them better than CE (the course's claim)")
    'A deep ensemble separates them better than CE'
    """
    text = re.sub(r"^γ-Net (?:inactive|active but not shown to help) \((?:[^()]|\([^()]*\))*\): ", "", text)
    text = text[len(retired_why(text)):].lstrip()
    while True:
        cut = re.sub(r" ?\([^()]*\)", "", text)
        if cut == text:
            break
        text = cut
    head = re.split(r": |; ", text, maxsplit=1)[0]
    return head if len(head) >= 30 and not head.startswith("...") else text


#: a retired claim's text starts with why: "retired: <why>. <claim>" or "retired as <what> (...): <claim>"
_RETIRED = re.compile(r"^retired(?:: .*?\.(?= [A-Z.])| as (?:[^():]|\([^()]*\))*:)")


def retired_why(text: str) -> str:
    """The opening of a retired claim's text that says why it was retired ("" when it has none).

    Parameters
    ----------
    text : str
        A claim's text as published.

    Returns
    -------
    str
        Its opening up to the reason's end (a full stop or a colon), or ``""``.

    Examples
    --------
    >>> retired_why("retired: the inputs differ in brightness. A deep ensemble separates them")
    'retired: the inputs differ in brightness.'
    >>> retired_why("retired as a test of X (it tests a gain): the course's claim that TS helps")
    'retired as a test of X (it tests a gain):'
    >>> retired_why("TS lowers the ECE")
    ''
    """
    m = _RETIRED.match(text)
    return m.group(0) if m else ""


def _added_seeds(claim: dict, rec: dict) -> dict | None:
    """The planned seeds and those added after a verdict, with the interval on each part (from the
    claim's ``seed_splits``), or a ``why`` where it cannot be given; None when no seed was added."""
    planned, now = rec.get("planned_seeds"), rec.get("seeds")
    if not rec.get("seeds_added") or planned is None or now is None:
        return None
    k = len(planned)
    out = {"planned": k, "n": claim.get("n_seeds"), "added": len(now) - k}
    splits = {int(s[0]): s[1:] for s in claim.get("seed_splits") or []}
    if claim.get("estimate") is None:
        out["why"] = "the claim has no interval"
    elif claim.get("n_seeds") != len(now):
        out["why"] = f"the claim pairs {_count(claim.get('n_seeds') or 0, 'seed')}, the profile's runs {len(now)}"
    elif planned != sorted(now)[:k]:
        out["why"] = "the planned seeds are not the first ones"
    elif k not in splits:
        few = min(k, len(now) - k) < 2
        out["why"] = "fewer than two seeds on a side" if few else "its interval is not split by seed"
    else:
        out["planned_interval"], out["added_interval"] = splits[k][:3], splits[k][3:]
    return out


#: the registration records the history gives (written by :mod:`calibcourse.tools.registration`), in the
#: repository this package is in
REGISTRATION_RECORDS = Path(__file__).resolve().parents[4] / "data" / "registration.json"


def committed_registration() -> dict:
    """The committed registration records (:data:`REGISTRATION_RECORDS`), or ``{}`` where there are none.

    The pages read the records from the repository the package is in, not from their working
    folder, so that a page executed elsewhere (a smoke run, a test) reads the same records.

    Returns
    -------
    dict
        ``{claim id: record}`` as :func:`calibcourse.tools.registration.write` wrote them.

    Examples
    --------
    >>> records = committed_registration()
    >>> all("registration" in r for r in records.values())
    True
    """
    if not REGISTRATION_RECORDS.is_file():
        return {}
    return json.loads(REGISTRATION_RECORDS.read_text())


def with_registration(claims: list, records: dict | None = None) -> list:
    """The claims with their kind and registration (:mod:`calibcourse.tools.registration`'s records).

    Adds ``kind``, ``registration`` (``"registered"``, ``"post hoc"``, ``"amended"``; None where the claim
    has no record), ``registration_why``, ``declared``, ``first_run``, ``n_runs``, ``amendments`` (texts) and
    ``added_seeds`` (the planned seeds, those added after a verdict, and the interval on them alone).

    Parameters
    ----------
    claims : list of dict
        The claims as ``_build/claims.json`` stores them.
    records : dict, optional
        ``{id: record}`` of :func:`calibcourse.tools.registration.compute` (a claim without one reads
        "not checked"); default: :func:`committed_registration`.

    Returns
    -------
    list of dict
        New dicts, in the claims' order.

    Examples
    --------
    >>> c = {"id": "x", "source": "guo2017calibration", "n_seeds": 4, "estimate": 0.2,
    ...      "seed_splits": [[2, 0.3, -0.1, 0.7, 0.1, -0.2, 0.4]]}
    >>> rec = {"registration": "amended", "why": "declared before its runs", "seeds": [0, 1, 2, 3],
    ...        "planned_seeds": [0, 1], "seeds_added": {"date": "2026-11-27T22:58:44Z"},
    ...        "amendments": [{"date": "2026-11-27T22:58:44Z", "what": "seeds added after a verdict"}]}
    >>> d = with_registration([c], {"x": rec})[0]
    >>> d["kind"], d["registration"], d["added_seeds"]["added_interval"]
    ('paper', 'amended', [0.1, -0.2, 0.4])
    """
    records = committed_registration() if records is None else records
    out = []
    for c in claims:
        rec = records.get(c["id"])
        d = {**c, "kind": kind_of(c), "registration": None, "registration_why": "no registration record",
             "declared": None, "first_run": None, "n_runs": None, "amendments": [], "added_seeds": None}
        if rec is not None:
            d.update(registration=rec["registration"], registration_why=rec.get("why", ""),
                     declared=(rec.get("declared") or {}).get("date"),
                     first_run=(rec.get("first_run") or {}).get("date"), n_runs=rec.get("runs"),
                     amendments=[a["what"] for a in rec.get("amendments", [])], added_seeds=_added_seeds(c, rec))
        out.append(d)
    return out


# --------------------------------------------------------------------------- the page
def _claim(d: dict) -> Claim:
    return Claim(**{k: d.get(k) for k in Claim.__dataclass_fields__ if k in d})


def _link(d: dict) -> str:
    return f"{{ref}}`{short_claim(d['claim'])} <claim-{d['id']}>`"


def _groups(claims: list) -> list:
    """``[(page, title, sources, claims)]`` in :data:`STUDIES`'s order, then any other source's."""
    known = {s for _, _, sources in STUDIES for s in sources}
    groups = [(page, title, sources, [c for c in claims if c["source"] in sources]) for page, title, sources in STUDIES]
    for source in dict.fromkeys(c["source"] for c in claims if c["source"] not in known):
        groups.append((None, source, (source,), [c for c in claims if c["source"] == source]))
    return [g for g in groups if g[3]]


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


#: why a claim is amended, by the start of its amendments' texts (:mod:`calibcourse.tools.registration`)
_AMENDED = (("first decided on runs", "moved to other runs after a verdict"),
            ("seeds added", "seeds added after a verdict"),
            ("its ", "a margin or side changed after runs existed"),
            ("runs retrained", "runs retrained under a changed config"))


def _reasons(items: list) -> str:
    """Why these claims are not registered, counted: ``"14 declared after their runs, 3 amended (...)"``."""
    late = [d for d in items if d["registration"] == "post hoc"]
    sims = sum(d.get("n_runs") == 0 for d in late)
    along = sum(d.get("n_runs") != 0 and any("committed with its declaration" in a for a in d.get("amendments") or [])
                for d in late)   # declared in the commit of its first verdict's runs, then moved to later runs
    out = []
    if late:
        n = len(late) - sims - along
        out.append(f"{n} declared after {'its' if n == 1 else 'their'} runs" if n else "")
        out.append(f"{along} declared with the runs of {'its' if along == 1 else 'their'} first verdict, then "
                   "moved to later runs" if along else "")
        out.append(f"{sims} computed as the page runs, with no dated run" if sims else "")
        grown = sum(any(a.startswith("seeds added") for a in d.get("amendments") or []) for d in late)
        out.append(f"{grown} of these {len(late)} with seeds added after a verdict" if grown else "")
    amended = [d for d in items if d["registration"] == "amended"]
    if amended:
        why = {text: sum(any(a.startswith(start) for a in d["amendments"]) for d in amended)
               for start, text in _AMENDED}
        out.append(f"{len(amended)} amended (" + ", ".join(f"{text}: {n}" for text, n in why.items() if n) + ")")
    unchecked = sum(d["registration"] is None for d in items)
    out.append(f"{unchecked} not checked" if unchecked else "")
    return ", ".join(x for x in out if x)


def registration_summary(items: list) -> str:
    """How many of these claims the history shows registered, and why the others are not, in words.

    Parameters
    ----------
    items : list of dict
        Claims with their registration (:func:`with_registration`).

    Returns
    -------
    str
        ``"3 claims, none registered; of the others, 1 declared after its runs, 2 amended (...)"``.

    Examples
    --------
    >>> rec = {"registration": "amended", "why": "w", "amendments": [{"what": "seeds added after a verdict"}]}
    >>> items = with_registration([{"id": "a", "source": "s"}, {"id": "b", "source": "s"}],
    ...                           {"a": {"registration": "registered"}, "b": rec})
    >>> registration_summary(items)
    '2 claims, 1 registered; of the others, 1 amended (seeds added after a verdict: 1)'
    """
    reg = sum(d["registration"] == "registered" for d in items)
    rest = _reasons([d for d in items if d["registration"] != "registered"])
    return f"{_count(len(items), 'claim')}, {reg or 'none'} registered" + (f"; of the others, {rest}" if rest else "")


def _plain(items: list) -> str:
    """Restatements in a sentence, the registered ones marked."""
    return "; ".join(short_claim(d["claim"]) + (" (registered)" if d["registration"] == "registered" else "")
                     for d in items)


def _summary(title: str, sources: tuple, group: list, page, docs) -> list:
    """A paragraph and its list: how many claims were tested and registered (and why the others were not),
    what survived, what did not, what cannot be decided here (the numbers and lists from the claims)."""
    counted = [d for d in group if d["kind"] in ("paper", "course")]
    cites = ", ".join(f"{{cite:t}}`{s}`" for s in sources
                      if s != COURSE_SOURCE and any(d["source"] == s for d in group))
    report = f" ({{doc}}`its report <{page}>`)" if page and page in docs else ""
    head = f"**{title}**{report}" + (f", from {cites}" if cites else "") + ". "
    if not counted:
        return [head + "Nothing here is counted: " + _plain(group) + ".", ""]
    reg = [d for d in counted if d["registration"] == "registered"]
    rest = _reasons([d for d in counted if d["registration"] != "registered"])
    lines = [head + f"{_count(len(counted), 'claim')} tested here, {len(reg) or 'none'} of them registered before "
             f"{'its' if len(reg) == 1 else 'their'} runs" + (f"; of the others, {rest}" if rest else "") + ":"]
    for verdicts, word in ((("held",), "Survived"), (("not held",), "Did not survive"),
                           (("inconclusive", "not tested"), "Cannot be decided here")):
        items = [d for d in counted if d["verdict"] in verdicts]
        if items:
            uncredited = sum(bool(d.get("learns")) and d["learns"].get("verdict") != "held" for d in items)
            note = f", {uncredited} not credited to the paper (its γ-Net not shown to learn)" if uncredited else ""
            lines.append(f"- *{word}* ({len(items)}{note}): {_plain(items)}.")
    other = [d for d in group if d["kind"] not in ("paper", "course")]
    if other:   # the claims left out for one reason listed together, then the reason
        why = {}
        for d in other:
            why.setdefault(_apart_text(d), []).append(short_claim(d["claim"]))
        lines.append("- *Not counted*: " + "; ".join(f"{'; '.join(names)} ({reason})" for reason, names in why.items())
                     + ".")
    return lines + [""]


def _apart_text(d: dict) -> str:
    """Why a claim is not counted: its kind, and for a test that cannot inform its verdict, the reason."""
    if d["kind"] == "not informative":
        return f"not informative: {NOT_INFORMATIVE[d['id']]}"
    why = retired_why(d["claim"]) if d["kind"] == "retired" else ""
    return why.rstrip(".:") if why else d["kind"]


def _level(c: Claim) -> str:
    """The interval's level after a space where it is not 95 % (the page's default), else nothing."""
    return f" ({100 * c.level:.0f} %)" if c.level is not None and abs(c.level - 0.95) > 1e-9 else ""


def _tally(claims: list) -> list:
    """The tally's table, like with like."""
    verdicts = (*stats.VERDICTS, "not tested")
    rows = []
    for label, pick in (
            ("registered tests of the papers' claims",
             lambda d: d["kind"] == "paper" and d["registration"] == "registered"),
            ("the papers' claims, post hoc", lambda d: d["kind"] == "paper" and d["registration"] == "post hoc"),
            ("the papers' claims, amended", lambda d: d["kind"] == "paper" and d["registration"] == "amended"),
            ("the papers' claims, not checked", lambda d: d["kind"] == "paper" and d["registration"] is None),
            ("the course's own claims, registered",
             lambda d: d["kind"] == "course" and d["registration"] == "registered"),
            ("the course's own claims, post hoc or amended",
             lambda d: d["kind"] == "course" and d["registration"] in ("post hoc", "amended")),
            ("the course's own claims, not checked", lambda d: d["kind"] == "course" and d["registration"] is None),
            ("sanity checks (not counted)", lambda d: d["kind"] == "sanity check"),
            ("retired (not counted)", lambda d: d["kind"] == "retired"),
            ("not informative (not counted)", lambda d: d["kind"] == "not informative")):
        group = [d for d in claims if pick(d)]
        if group or label.startswith("registered"):
            rows.append(f"| {label} | " + " | ".join(str(sum(d["verdict"] == v for d in group)) for v in verdicts)
                        + f" | {len(group)} |")
    return (["| | held | not held | inconclusive | not tested | all |", "|---|---|---|---|---|---|"] + rows)


def _details(d: dict) -> list:
    """A claim's dropdown: its full text, test, verdict and registration."""
    c = _claim(d)
    side = f" ({c.null_text})" if c.null is not None else ""
    sizes = f" ({c.n_test:,} test samples, {c.n_seeds} seed{'s' if c.n_seeds != 1 else ''})" if c.n_test else ""
    where = f"{{ref}}`chapter {c.chapter} <{c.section}>`" if c.section else f"chapter {c.chapter}"
    lines = [f"({'claim-' + d['id']})=", f":::{{dropdown}} {short_claim(d['claim'])}: {c.verdict}", "",
             f"**Claim** ({where}; {{cite:t}}`{c.source}`): {c.claim}.", "",
             f"**Effect**: {c.effect}{sizes}" + (f"; {c.cost}" if c.cost else "") + ".", "",
             (f"**Estimate**: {c.interval_text}{_level(c)}{side}: {c.verdict_text()}." if c.estimate is not None
              else f"**Verdict**: {c.verdict_text()}."), ""]
    if c.detectable is not None:
        detects = f"{c.scale * c.detectable:.{c.digits}f} {c.unit}".strip()
        under = " (*underpowered*)" if c.underpowered else ""
        lines += [f"**Detects** (80 %): {detects}{under}.", ""]
    if d["kind"] in _APART:
        what = "a sanity check of the set-up" if d["kind"] == "sanity check" else _apart_text(d)
        lines += [f"**Not counted**: {what}.", ""]
    reg = _STATUS_TEXT[d.get("registration")]
    lines += [f"**Registration**: {reg}: {d.get('registration_why', '')}."]
    for a in d.get("amendments") or []:
        lines.append(f"- {a}")
    added = d.get("added_seeds")
    if added:
        lines += ["", _added_text(d, c, added)]
    lines += [":::", ""]
    return lines


def _added_text(d: dict, c: Claim, added: dict) -> str:
    head = (f"**Seeds added after a verdict**: {added['planned']} seeds were planned (those of its first verdict), "
            f"{added['added']} came after it. ")
    if "added_interval" not in added:
        return head + f"The intervals on each part cannot be given here: {added['why']}."

    def part(numbers):
        text = fmt_difference(numbers, scale=c.scale, unit=c.unit, digits=c.digits, null=c.null, signed=c.signed)
        return f"{text} ({stats.verdict(numbers[1], numbers[2], null=c.null, direction=c.direction)})"

    return (head + f"On the {added['planned']} planned seeds: {part(added['planned_interval'])}; on the "
            f"{added['added']} added seeds alone: {part(added['added_interval'])}; pooled over all {c.n_seeds}: "
            f"{c.interval_text} ({c.verdict}). Choosing the number of seeds after a verdict breaks the pooled "
            "interval's 95 %; the added seeds' own interval does not depend on that choice.")


def _choices(choices: dict) -> list:
    """The design choices checked like claims (:data:`~calibcourse.study.analysis.ledger.reads.CHOICES`), each
    with what the history cannot show about it (its ``caveat``, from
    :data:`~calibcourse.study.analysis.ledger.reads.CHOICE_CAVEATS`)."""
    if not choices:
        return []
    lines = ["### Design choices checked the same way", "",
             "Not claims, but values the study takes from a grid of runs by a rule; they are checked like the "
             "claims, against the grid's runs, and counted nowhere.", "",
             "| choice | registration | the history |", "|---|---|---|"]
    for cid, rec in sorted(choices.items()):
        caveat = f"; but {rec['caveat']}" if rec.get("caveat") else ""
        lines.append(f"| {rec.get('why_choice') or cid} | {_STATUS_TEXT[rec.get('registration')]} | "
                     f"{rec.get('why', '')}{caveat} |")
    return lines + [""]


def ledger_page(claims: list, titles: dict | None = None, docs=(), choices: dict | None = None) -> str:
    """The "What held" page (MyST): a paragraph per paper, the tally, then every claim by paper.

    Parameters
    ----------
    claims : list of dict
        Every claim of the book (``_build/claims.json``), with their registration where known
        (:func:`with_registration`; a claim without one reads "not checked").
    titles : dict, optional
        ``{source key: title}`` for a source outside :data:`STUDIES` (default: the key).
    docs : collection of str, default=()
        The book's pages, so that a paragraph links its study's report where the book has it.
    choices : dict, optional
        ``{id: record}`` of the design choices checked like claims (their ``why_choice`` says what each is).

    Returns
    -------
    str
        The page's MyST source.

    Examples
    --------
    >>> c = Claim("x", 4, "TS lowers the ECE", "guo2017calibration", "ECE(TS) - ECE(none)",
    ...           -0.03, -0.04, -0.02, 0.95, 0.0, "below", "held", 5000, 1)
    >>> page = ledger_page(with_registration([c.as_dict()], {}))
    >>> next(line for line in page.splitlines() if line.startswith("In this build"))
    'In this build, all claims: 1 held, 0 not held, 0 inconclusive, 0 not tested.'
    >>> "(claim-x)=" in page, "| registered tests of the papers' claims | 0 | 0 | 0 | 0 | 0 |" in page
    (True, True)
    """
    claims = [d if "kind" in d else with_registration([d], {})[0] for d in claims]
    counts = {v: sum(d["verdict"] == v for d in claims) for v in _VERDICT_MARK}
    reg_papers = [d for d in claims if d["kind"] == "paper" and d["registration"] == "registered"]
    reg_tested = [d for d in reg_papers if d["verdict"] != "not tested"]
    rc = {v: sum(d["verdict"] == v for d in reg_papers) for v in _VERDICT_MARK}
    methods = {}
    for d in claims:
        if d["verdict"] != "not tested":
            kind = _METHOD_TEXT.get(d.get("method"), "other intervals")
            methods[kind] = methods.get(kind, 0) + 1
    kinds = "; ".join(f"{k}: {n}" for k, n in sorted(methods.items(), key=lambda kv: -kv[1]))
    lines = [
        "# What held",
        "",
        "The study's summary: what each paper's claims became when tested here, then the tally and every "
        "claim. A verdict follows from an interval (95 %, unless its row gives another level) by one rule: "
        "**held** when the whole interval lies on "
        "the side the claim states (a claim with a size is tested on its size), **not held** when it lies "
        "wholly on the other side, *inconclusive* when it contains the boundary. A claim is **registered** "
        "when the history shows it declared before the first of its runs, *post hoc* when it was declared "
        "after them or in the commit that holds them, *amended* when its margin, its test or its number of "
        "seeds changed after runs existed; only registered tests of the papers' claims make the headline. "
        "Every claim, with its registration, is "
        "also in `_build/claims.json`.",
        "",
        "## What survived, paper by paper",
        "",
    ]
    groups = _groups(claims)
    for page, title, sources, group in groups:
        lines += _summary((titles or {}).get(title, title), sources, group, page, set(docs))
    lines += [
        "## The tally",
        "",
        f"**Registered tests of the papers' claims: {rc['held']} held, {rc['not held']} not held, "
        f"{rc['inconclusive']} inconclusive" + (f", {rc['not tested']} not tested" if rc["not tested"] else "")
        + ".** The rest is counted apart, like with like:",
        "",
        *_tally(claims),
        "",
        f"In this build, all claims: {counts['held']} held, {counts['not held']} not held, "
        f"{counts['inconclusive']} inconclusive, {counts['not tested']} not tested.",
        "",
        "Each verdict is a separate test at the 95 % level. If every effect sat exactly on its boundary, each "
        "interval would still exclude the boundary with probability 5 %, on the claimed side with probability "
        f"2.5 %. Of the {len(reg_tested)} registered tests of the papers' claims that were run, about "
        f"{0.05 * len(reg_tested):.2g} would then be decided by chance alone, {0.025 * len(reg_tested):.2g} of them "
        "as a false \"held\": an expectation over the tests run, not a share of the verdicts decided. A reader "
        "who wants a family-wise guarantee can apply Holm's procedure: order the claims by p-value and require "
        f"the first to be decided at level 1 - 0.05/{max(len(reg_tested), 1)}, the next at "
        f"1 - 0.05/{max(len(reg_tested) - 1, 1)}, and so on. The ledger stores each claim's interval at one "
        "level, not a p-value or the interval at other levels, so this page does not apply it.",
        "",
        "## The claims",
        "",
        "By paper: a short restatement, the estimate with its interval (95 %, or the level the row gives), the "
        "verdict and the registration; "
        "each claim's full text, test and history unfold below its paper's table.",
        "",
    ]
    for _page, title, _sources, group in groups:
        lines += [f"### {(titles or {}).get(title, title)}", "", ":::{div} full-width",
                  "| claim | ch. | estimate [interval] | verdict | registration |", "|---|---|---|---|---|"]
        for d in sorted(group, key=lambda d: (d["chapter"], d["id"])):
            c = _claim(d)
            verdict = _VERDICT_MARK[c.verdict] + ("" if c.credited else ", not credited")
            reg = _STATUS_TEXT[d["registration"]]
            added = d.get("added_seeds")
            if added:
                reg += f", {added['planned']} → {added['planned'] + added['added']} seeds"
            if d["kind"] in _APART:
                reg += f" ({d['kind']})"
            lines.append(f"| {_link(d)} | {c.chapter} | {c.interval_text}{_level(c)} | {verdict} | {reg} |")
        lines += [":::", ""]
        for d in sorted(group, key=lambda d: (d["chapter"], d["id"])):
            lines += _details(d)
    lines += _choices(choices or {})
    lines += [
        "## How to read this page",
        "",
        f"The intervals are of several kinds ({kinds}); the appendix {{ref}}`appendix-coverage` says which and "
        "how far each is checked. An interval end close to the boundary is printed with one more decimal, so "
        "that its side shows. *Detects* is the smallest true effect the test finds with 80 % probability. Where "
        "a verdict is inconclusive, its note says what would decide it and which verdict that would likely be "
        "if the estimate stayed where it is: more test samples where the test samples make most of the "
        "interval's variance, more seeds where the seed spread does (for a claim compared over seeds, no test "
        f"set, however large, shrinks the seed part), or both; or that it cannot be decided at this scale, when "
        f'it would take {_scale_limit()}. A claim with a margin ("less than 1 point") whose test detects only '
        f"effects more than {UNDERPOWERED_RATIO:g} times the margin is marked *underpowered*: even a true effect "
        "of zero would seldom have been told apart from the margin.",
        "",
        "The registration is computed from the repository's history (`python -m calibcourse.tools.registration`): "
        "the commit that first declared the claim, whichever notebook it was in, against the earliest evidence "
        "of its runs (the time a cache entry was created or first committed, followed through re-keyed "
        "entries). A claim computed from a simulation the page runs has no dated run and counts as post hoc, and "
        "so does one declared in the commit that also holds the runs of its first verdict. "
        "The history dates commits and runs; it cannot show a result seen in an uncommitted pass, so "
        "\"registered\" means that nothing in the history contradicts the order, not that it proves it. Seeds "
        "added after a verdict are reported with the interval on the added seeds alone beside the pooled one.",
        "",
    ]
    return "\n".join(lines)
