"""The self-check quizzes teach: questions to compute, plausible options of balanced length.

Every page with a self-check quiz (each chapter of the course, and any other page that ends with
one) is parsed into its questions and options, and held to the book's rules for a quiz:

- at least two questions per page need a computation or the reading of a figure, marked by
  starting the question's parenthesis with ``to compute;`` (``**Question 3** (to compute; goal: ...)``);
- the right answer is the longest option (characters of its title, as the reader sees it; longer
  than every other option) in at most a third of the page's questions, and the shortest (shorter
  than every other) in at most a third, so that length gives nothing away either way;
- no option is shorter than half the median length of its question's options: a one-word option
  among sentences, or "0" among "0.19" and "0.25", stands out whether it is right or wrong (a
  quarter of the median would let the one-character number through);
- exactly one option of each question is right, and every option explains itself.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


_QUESTION = re.compile(r"^\*\*Question (\d+)\*\* \((to compute; )?goal: [^)]+\)\.", re.M)
_OPTION = re.compile(r"^:::\{dropdown\} ([A-Z])\. ([^\n]*)\n(.*?)^:::[ \t]*$", re.M | re.S)
_ROLE = re.compile(r"\{[\w:.-]+\}`((?:[^`\\]|\\.)*)`")


@dataclass
class Option:
    letter: str
    title: str
    body: str

    @property
    def answer(self) -> str:
        """The folded text, without the dropdown's options (``:class-container: ...``)."""
        return re.sub(r"(?m)^:[\w-]+:.*\n", "", self.body).strip()

    @property
    def right(self) -> bool:
        return self.answer.startswith("**Right.**")

    @property
    def shown(self) -> str:
        """The title as the reader sees it: roles as their text, math without its dollars."""
        return _ROLE.sub(lambda m: m.group(1), self.title).replace("$", "").strip()

    @property
    def explanation(self) -> str:
        return re.sub(r"^\*\*(Right|Not quite)\.\*\*", "", self.answer).strip()


@dataclass
class Question:
    number: int
    to_compute: bool
    text: str
    options: list

    @property
    def longest_is_right(self) -> bool:
        """The right option is longer than every other one (options of one length give nothing away)."""
        right = [o for o in self.options if o.right]
        others = [len(o.shown) for o in self.options if not o.right]
        return len(right) == 1 and len(right[0].shown) > max(others, default=0)

    @property
    def shortest_is_right(self) -> bool:
        """The right option is shorter than every other one."""
        right = [o for o in self.options if o.right]
        others = [len(o.shown) for o in self.options if not o.right]
        return len(right) == 1 and bool(others) and len(right[0].shown) < min(others)

    @property
    def stand_outs(self) -> list:
        """The options shorter than half the median length of the question's options."""
        lengths = sorted(len(o.shown) for o in self.options)
        if not lengths:
            return []
        mid = len(lengths) // 2
        median = lengths[mid] if len(lengths) % 2 else (lengths[mid - 1] + lengths[mid]) / 2
        return [o for o in self.options if 2 * len(o.shown) < median]


def quiz_pages() -> list[Path]:
    """Every chapter of the course (``notebooks/0*.md``), and every other page with a quiz."""
    pages = set((ROOT / "notebooks").glob("0*.md"))
    pages |= {p for p in (ROOT / "notebooks").glob("*.md") if "## Self-check quiz" in p.read_text()}
    return sorted(pages)


def parse_quiz(text: str) -> list[Question]:
    """The questions of a page's self-check quiz (``## Self-check quiz`` to the end of the page)."""
    if "## Self-check quiz" not in text:
        return []
    quiz = text[text.index("## Self-check quiz"):]
    heads = list(_QUESTION.finditer(quiz))
    questions = []
    for k, head in enumerate(heads):
        block = quiz[head.start(): heads[k + 1].start() if k + 1 < len(heads) else len(quiz)]
        options = [Option(m.group(1), m.group(2), m.group(3)) for m in _OPTION.finditer(block)]
        questions.append(Question(int(head.group(1)), bool(head.group(2)), block, options))
    return questions


def quiz_problems(text: str) -> list[str]:
    """What breaks the rules in a page's quiz, one line each (empty when it keeps them)."""
    questions = parse_quiz(text)
    if not questions:
        return ["no self-check quiz"]
    problems = []
    computing = sum(q.to_compute for q in questions)
    if computing < 2:
        problems.append(f"{computing} question(s) to compute, at least 2 wanted")
    longest = [q.number for q in questions if q.longest_is_right]
    if 3 * len(longest) > len(questions):
        problems.append(f"the right answer is the longest option in questions {longest}, "
                        f"more than a third of {len(questions)}")
    shortest = [q.number for q in questions if q.shortest_is_right]
    if 3 * len(shortest) > len(questions):
        problems.append(f"the right answer is the shortest option in questions {shortest}, "
                        f"more than a third of {len(questions)}")
    for q in questions:
        if len(q.options) < 3:
            problems.append(f"question {q.number}: {len(q.options)} options")
        if sum(o.right for o in q.options) != 1:
            problems.append(f"question {q.number}: {sum(o.right for o in q.options)} right answers")
        for o in q.stand_outs:
            problems.append(f"question {q.number}, option {o.letter}: {o.shown!r} is under half the median "
                            "length of its options")
        for o in q.options:
            if not (o.right or o.answer.startswith("**Not quite.**")):
                problems.append(f"question {q.number}, option {o.letter}: neither **Right.** nor **Not quite.**")
            if len(o.explanation.split()) < 4:
                problems.append(f"question {q.number}, option {o.letter}: no explanation")
    return problems


def _params():
    out = []
    for page in quiz_pages():
        out.append(pytest.param(page, id=page.stem))
    return out


@pytest.mark.parametrize("page", _params())
def test_every_quiz_teaches(page):
    problems = quiz_problems(page.read_text())
    assert not problems, f"{page.name}: " + "; ".join(problems)


def test_the_six_chapters_have_quizzes_checked():
    stems = {p.stem for p in quiz_pages()}
    assert {"01_theory", "02_causes", "03_binary", "04_multiclass"} <= stems
    assert sum(s[:2] in {"05", "06"} for s in stems) >= 2


# --------------------------------------------------------------------------- the checker can fail
def _quiz(*questions) -> str:
    """A quiz page in small: each question ``(to_compute, [(title, right), ...])``."""
    out = ["## Self-check quiz\n"]
    for n, (to_compute, options) in enumerate(questions, 1):
        mark = "to compute; " if to_compute else ""
        out.append(f"**Question {n}** ({mark}goal: a goal). A question?\n")
        for letter, (title, right) in zip("ABCD", options, strict=False):
            verdict = "**Right.**" if right else "**Not quite.**"
            out.append(f":::{{dropdown}} {letter}. {title}\n:class-container: quiz-option\n\n"
                       f"{verdict} Because of this and that.\n:::\n")
    return "\n".join(out)


GOOD = [(True, [("a short one", False), ("a longer one", False), ("the right one", True),
                ("the longest of all", False)]),
        (True, [("right, and the longest", True), ("short and wrong", False), ("another wrong", False)]),
        (False, [("{fixed}`0.5`", True), ("{fixed}`0.25`", False), ("{fixed}`1.5`", False)])]


def test_a_quiz_that_keeps_the_rules_passes():
    assert quiz_problems(_quiz(*GOOD)) == []
    questions = parse_quiz(_quiz(*GOOD))
    assert [q.to_compute for q in questions] == [True, True, False]
    assert [q.longest_is_right for q in questions] == [False, True, False]
    assert [q.shortest_is_right for q in questions] == [False, False, False]   # 0.5 ties with 1.5
    assert questions[2].options[0].shown == "0.5"


def test_the_checker_finds_each_broken_rule():
    no_compute = [(False, opts) for _, opts in GOOD]
    assert quiz_problems(_quiz(*no_compute)) == ["0 question(s) to compute, at least 2 wanted"]
    longest = GOOD[:2] + [(False, [("wrong", False), ("the right one, longest", True), ("wrong too", False)])]
    assert quiz_problems(_quiz(*longest)) == [
        "the right answer is the longest option in questions [2, 3], more than a third of 3"]
    shortest = [(True, [("right", True), ("wrong one", False), ("wrong two", False)]), GOOD[1],
                (False, [("right", True), ("wrong one", False), ("wrong two", False)])]
    assert quiz_problems(_quiz(*shortest)) == [
        "the right answer is the shortest option in questions [1, 3], more than a third of 3"]
    lone = GOOD[:2] + [(False, [("{fixed}`0.19`", True), ("0", False), ("{fixed}`0.25`", False)])]
    assert quiz_problems(_quiz(*lone)) == ["question 3, option B: '0' is under half the median length of its options"]
    one_word = GOOD[:2] + [(False, [("above 0.", True), ("0, since the noise is as often positive as negative.", False),
                                    ("above 0, by more the more test samples there are.", False)])]
    assert quiz_problems(_quiz(*one_word)) == [
        "question 3, option A: 'above 0.' is under half the median length of its options"]
    two_right = GOOD[:2] + [(False, [("one", True), ("two", True), ("three, the longest", False)])]
    assert quiz_problems(_quiz(*two_right)) == ["question 3: 2 right answers"]
    bare = _quiz(*GOOD).replace("**Not quite.** Because of this and that.", "**Not quite.**", 1)
    assert quiz_problems(bare) == ["question 1, option A: no explanation"]
    assert quiz_problems("# A page\n\nNo quiz.") == ["no self-check quiz"]
