"""The real nbgrader round trip, as a teacher runs it (issue 13).

A throw-away nbgrader course in a temporary folder: every lesson goes through
`generate_assignment` (its release holds no solution and no hidden test), and lessons 01 and 09
(09 trains a model; every lesson with `make grade-check`) are autograded for three kinds of
simulated submission, put where a teacher collects them: the release as it is (0 points), the
reference solutions (full points), and one recognisable mistake per exercise (that exercise
0 points, the others full; the graded notebook and the feedback page that `generate_feedback`
writes show the check's ❌ line). Lesson 01 is also autograded for three cheats (the course's
own function as the answer, a rebound check, a patched checks package): 0 points each.
nbgrader runs in this process through its Python API (no 5-second start-up per command), with
its kernel the course's own python3. Skipped, and said so, when nbgrader is not installed
(`pip install -e '.[grade]'`); CI installs it.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import sys
from pathlib import Path

import nbformat
import pytest
import torch

from conftest import LESSONS

nbgrader = pytest.importorskip("nbgrader", reason="nbgrader is not installed: pip install -e '.[grade]'")

from nbgrader.api import Gradebook  # noqa: E402
from nbgrader.apps import NbGraderAPI  # noqa: E402
from nbgrader.coursedir import CourseDirectory  # noqa: E402
from traitlets.config import Config  # noqa: E402

STUB = "    # YOUR CODE HERE\n    raise NotImplementedError()"
# One recognisable mistake per exercise of the autograded lessons: the body of the function.
MISTAKES = {
    "l00_softmax": "    return x.exp() / x.exp().sum(dim=0, keepdim=True)  # wrong dimension",
    "l01_attention": "    return torch.softmax(q @ k.T, dim=-1) @ v  # no 1/sqrt(d_k)",
    "l01_permutation_matrix": "    return torch.eye(len(order))[order].T  # transposed",
    "l01_causal_mask": "    return torch.ones(n, n, dtype=torch.bool).triu()  # sees the future",
    "l02_normalised_positions": "    return torch.arange(length) / length  # divides by n, not n - 1",
    "l02_binary_code": "    return torch.tensor([(t >> b) & 1 for b in range(1, n_bits + 1)],"
                       " dtype=torch.float32)  # skips bit 0",
    "l02_hamming_distance": "    return (a == b).sum()  # counts agreements",
    "l03_wavelengths": "    return base ** (2 * torch.arange(d_model // 2) / d_model)  # no 2π",
    "l03_sinusoidal_encoding": "    t = torch.arange(n)[:, None]\n    w = 10_000.0 ** (-torch.arange(d_model // 2) / d_model)"
                               "\n    return torch.cat([torch.sin(t * w), torch.cos(t * w)], dim=1).double()  # ω off",
    "l03_offset_similarity": "    return sum(math.sin(k * 10_000.0 ** (-2 * i / d_model)) for i in range(d_model // 2))",
    "l04_rotation_block": "    c, s = math.cos(omega * k), math.sin(omega * k)\n    return torch.tensor([[c, -s], [s, c]])",
    "l04_offset_map": "    return torch.eye(d_model, dtype=torch.float64)  # no rotation",
    "l05_block_parameters": "    return 4 * d_model + 4 * d_model * d_model + 2 * d_model * d_ff  # no biases",
    "l05_as_addition": "    return x @ weight[:, :x.shape[1]].T  # drops the code's half",
    "l05_cosine_similarity": "    return (a * b).sum(dim=1)  # not normalised",
    "l06_token_position_term": "    return (f @ w_q) @ (x @ w_k).T  # the other cross term",
    "l06_is_offset_only": "    return bool(torch.allclose(scores, scores.T))  # symmetric is not offset-only",
    "l07_add_learned_code": "    return x + table[1:x.shape[1] + 1]  # off by one row",
    "l07_cosine_similarity_matrix": "    return table @ table.T  # not normalised",
    "l07_neighbour_similarity": "    return torch.diagonal(similarity, offset + 1).mean().item()  # off by one",
    "l08_position_labels": "    return torch.arange(n).repeat_interleave(batch_size)  # wrong order",
    "l08_variance_explained_by": "    centred = features - features.mean(dim=0)\n"
                                 "    return 1 - (centred ** 2).sum().item() / (centred ** 2).sum().item()",
    "l09_uniform_causal_weights": "    return torch.ones(n, n).tril() / n  # 1/n, not 1/(t+1)",
    "l09_bos_share": "    return math.exp(b) / (math.exp(b) + t + 1)  # one key too many",
    "l10_alibi_bias": "    d = torch.arange(n)[:, None] - torch.arange(n)[None, :]\n"
                      "    return slope * d.abs().float()  # the sign",
    "l10_rope_rotate": "    return x  # no rotation",
    "l11_rope_permutation": "    return torch.arange(d)  # no permutation",
    "l11_rope_complex": "    return x  # no rotation",
    "l11_decode_step": "    where = torch.zeros(1)  # forgot the cache offset\n"
                       "    keys = torch.cat([cache_k, rope_rotate(k[None], positions=where)])\n"
                       "    q_rot = rope_rotate(q[None], positions=where)\n"
                       "    weights = torch.softmax(q_rot @ keys.T / math.sqrt(q.shape[-1]), dim=-1)\n"
                       "    return (weights @ torch.cat([cache_v, v[None]]))[0]",
    "l12_pair_turns": "    return length * base ** (-2.0 * torch.arange(d // 2) / d)  # radians, not turns",
    "l12_ntk_base": "    return base * factor  # forgot the exponent d/(d-2)",
    "l12_yarn_blend": "    return (1 - gamma) * omega + gamma * omega / factor  # gamma swapped",
    "l13_patchify": "    return images.reshape(images.shape[0], -1, p * p)  # strips, not squares",
    "l13_sinusoidal_2d": "    index = torch.arange(height * width, dtype=torch.float64)\n"
                         "    quarter = d_model // 4\n"
                         "    omega = 10_000.0 ** (-torch.arange(quarter, dtype=torch.float64) / quarter)\n"
                         "    y, x = index // width, index % width\n"
                         "    one = lambda t: torch.cat([(t[:, None] * omega).sin(), (t[:, None] * omega).cos()], 1)\n"
                         "    return torch.cat([one(y), one(x)], dim=1)  # row half first",
    "l13_rope_2d": "    return rope_rotate(x, positions=rows * 4 + cols)  # 1-D RoPE of the raster index",
    "l14_bits_per_character": "    log_p = torch.log_softmax(logits.double(), dim=-1)\n"
                              "    return -log_p[torch.arange(len(targets)), targets].mean().item()  # nats",
    "l14_next_character_windows": "    index = starts[:, None] + torch.arange(length)\n"
                                  "    return ids[index], ids[index]  # targets not shifted",
    "l14_last_context": "    return tokens[max(0, t - context):t]  # ends at t - 1",
    "l15_llama3_frequencies": "    return omega / factor  # every band divided, as PI",
    "l15_absorbed_scores": "    q_latent = torch.einsum(\"shd,hdr->hsr\", q_nope, w_uk)\n"
                           "    return q_latent @ latent.T / math.sqrt(q_nope.shape[-1])  # the softmax's scale",
    "l15_position_ids": "    return torch.arange(document_ids.shape[1]).expand_as(document_ids).clone()  # never resets",
    "l16_mrope_positions": "    columns, start = [], 0\n"
                           "    for kind, *size in segments:\n"
                           "        if kind == \"text\":\n"
                           "            columns += [(p, p, p) for p in range(start, start + size[0])]\n"
                           "            start += size[0]\n"
                           "            continue\n"
                           "        t, h, w = size\n"
                           "        columns += [(start + i, start + j, start + k)\n"
                           "                    for i in range(t) for j in range(h) for k in range(w)]\n"
                           "        start += t * h * w  # one per token, not one past the largest\n"
                           "    return torch.tensor(columns, dtype=torch.long).T",
    "l16_stream_mask": "    t = torch.arange(n)\n    offset = t[:, None] - t[None, :]\n"
                       "    return (offset >= 0) & ((offset <= window) | (t[None, :] < sinks))  # window + 1 keys",
    "l16_llama4_scale": "    count = positions.to(torch.float64) + 1\n"
                        "    return 1.0 + attn_scale * torch.log1p(count / floor_scale)  # no floor",
}
# Mistakes a check names with a hint of its own (issue 41): each autograded by `make grade-check`
# too, scoring 0 on its exercise with a ❌ line that holds the hint.
TEACHING_MISTAKES = {
    "l11_rope_permutation": [
        ("    return torch.cat([torch.arange(0, d, 2), torch.arange(1, d, 2)]).float()",
         "whole-number indices")],
    "l11_rope_complex": [
        ("    n, d = x.shape\n"
         "    omega = 10_000.0 ** (-2.0 * torch.arange(d // 2, dtype=torch.float64) / d)\n"
         "    angles = torch.arange(n, dtype=torch.float64)[:, None] * omega  # row index\n"
         "    pairs = torch.view_as_complex(x.double().reshape(n, d // 2, 2).contiguous())\n"
         "    return torch.view_as_real(pairs * torch.polar(torch.ones_like(angles), -angles))"
         ".reshape(n, d)", "its row number"),
        ("    n, d = x.shape\n"
         "    omega = 10_000.0 ** (-4.0 * torch.arange(d // 2, dtype=torch.float64) / d)  # 4i/d\n"
         "    angles = positions.double()[:, None] * omega\n"
         "    pairs = torch.view_as_complex(x.double().reshape(n, d // 2, 2).contiguous())\n"
         "    return torch.view_as_real(pairs * torch.polar(torch.ones_like(angles), -angles))"
         ".reshape(n, d)", "The exponent is 4i/d")],
    "l11_decode_step": [
        ("    where = torch.tensor([float(cache_k.shape[0])])\n"
         "    keys = torch.cat([cache_k, rope_rotate(k[None], positions=where)])\n"
         "    q_rot = rope_rotate(q[None], positions=where)\n"
         "    weights = torch.softmax(q_rot @ keys / math.sqrt(q.shape[-1]), dim=-1)  # no .T\n"
         "    return (weights @ torch.cat([cache_v, v[None]]))[0]", "multiply q by keys.T"),
        ("    where = torch.tensor([float(cache_k.shape[0])])\n"
         "    keys = torch.cat([cache_k, rope_rotate(k[None], positions=where)])\n"
         "    q_rot = rope_rotate(q[None], positions=where)\n"
         "    weights = torch.softmax(q_rot @ keys.T / q.shape[-1], dim=-1)  # 1/d\n"
         "    return (weights @ torch.cat([cache_v, v[None]]))[0]", "divided the scores by d")],
}
# CI autogrades lesson 01 (fast) and lesson 09 (trains); `make grade-check` sets COURSE_GRADE_ALL=1
# and autogrades every lesson.
GRADED = LESSONS if os.environ.get("COURSE_GRADE_ALL") == "1" else [LESSONS[1], LESSONS[9]]


def assignment_of(lesson) -> str:
    return f"l{lesson.name[:2]}"


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A fresh nbgrader course holding every lesson as an assignment; returns (api, root)."""
    root = tmp_path_factory.mktemp("nbgrader_course")
    home = root / ".jupyter_home"
    (home / "ipython").mkdir(parents=True)
    saved = {name: os.environ.get(name) for name in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "IPYTHONDIR", "PATH")}
    # nbgrader creates its gradebook by running the `alembic` command of its own environment.
    os.environ.update(JUPYTER_CONFIG_DIR=str(home / "config"), JUPYTER_DATA_DIR=str(home / "data"),
                      IPYTHONDIR=str(home / "ipython"),
                      PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    for lesson in LESSONS:
        source = root / "source" / assignment_of(lesson)
        source.mkdir(parents=True)
        shutil.copy(lesson, source / lesson.name)
    config = Config()
    config.CourseDirectory.root = str(root)
    config.Exchange.root = str(root / "exchange")
    config.Execute.timeout = 300  # lessons that train run longer than nbgrader's 30 s per cell
    api = NbGraderAPI(CourseDirectory(config=config), config=config)
    yield api, root
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda p: p.name)
def test_generate_assignment_strips_solutions_and_hidden_tests(course, lesson):
    api, root = course
    result = api.generate_assignment(assignment_of(lesson))
    assert result["success"], result.get("error") or result.get("log")
    release = root / "release" / assignment_of(lesson) / lesson.name
    text = release.read_text(encoding="utf-8")
    assert "BEGIN SOLUTION" not in text and "HIDDEN TESTS" not in text
    teacher = nbformat.read(lesson, as_version=4)
    student = nbformat.read(release, as_version=4)
    ours = nbformat.read(lesson.parent / "student" / lesson.name, as_version=4)
    assert [c.source for c in ours.cells] == [c.source for c in student.cells], \
        "the committed student copy must hold exactly the cells of nbgrader's release"
    for original, released in zip(teacher.cells, student.cells):
        if original.metadata.get("nbgrader", {}).get("solution") and original.cell_type == "code":
            answer = original.source.split("### BEGIN SOLUTION\n")[1].split("### END SOLUTION")[0]
            assert STUB in released.source
            assert not any(line.strip() in released.source.splitlines() for line in answer.strip().splitlines())


def submit(root, lesson, student: str, answers: dict[str, str]) -> None:
    """Write a submission: the release with each stub replaced by answers[grade_id] (if given)."""
    release = nbformat.read(root / "release" / assignment_of(lesson) / lesson.name, as_version=4)
    for cell in release.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in answers and cell.cell_type == "markdown":  # a written answer
            cell.source = answers[grade_id]
        elif grade_id in answers:
            cell.source = cell.source.replace(STUB, answers[grade_id])
    folder = root / "submitted" / student / assignment_of(lesson)
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(release, folder / lesson.name)


def reference_answers(lesson) -> dict[str, str]:
    teacher = nbformat.read(lesson, as_version=4)
    return {cell.metadata["nbgrader"]["grade_id"]: re.search(r"### BEGIN SOLUTION\n(.*?)\n\s*### END SOLUTION",
                                                             cell.source, flags=re.S)[1]
            for cell in teacher.cells
            if cell.metadata.get("nbgrader", {}).get("solution") and cell.cell_type == "code"}


def test_every_exercise_of_every_lesson_has_a_mistake_for_grade_check():
    """`make grade-check` autogrades each exercise with its typical mistake; CI autogrades only
    lessons 01 and 09, so this cheap test keeps the list complete for the others (lessons 15 and
    16 once went without)."""
    exercises = sorted(g for lesson in LESSONS for g in reference_answers(lesson))
    assert exercises == sorted(MISTAKES)


@pytest.mark.parametrize("lesson", GRADED, ids=lambda p: p.name)
def test_autograde_gives_zero_full_and_all_but_the_mistake(course, lesson):
    api, root = course
    assignment = assignment_of(lesson)
    assert api.generate_assignment(assignment)["success"]
    reference = reference_answers(lesson)
    exercises = sorted(reference)
    assert exercises == sorted(g for g in MISTAKES if g.startswith(assignment + "_"))
    submissions = {"as_released": {}, "reference": reference}
    wrong = {}  # submission → (the exercise it gets wrong, what its ❌ line must say)
    for grade_id in exercises:
        wrong[f"wrong_{grade_id}"] = grade_id, "❌ Not yet:"
        submissions[f"wrong_{grade_id}"] = {**reference, grade_id: MISTAKES[grade_id]}
        for j, (body, hint) in enumerate(TEACHING_MISTAKES.get(grade_id, ())):
            wrong[f"hinted{j}_{grade_id}"] = grade_id, hint
            submissions[f"hinted{j}_{grade_id}"] = {**reference, grade_id: body}
    for student, answers in submissions.items():
        submit(root, lesson, student, answers)
        result = api.autograde(assignment, student)
        assert result["success"], result.get("error") or result.get("log")
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:
        def points(student: str) -> dict[str, float]:
            submission = gradebook.find_submission(assignment, student)
            return {grade.name.removesuffix("_test"): grade.score
                    for notebook in submission.notebooks for grade in notebook.grades
                    if grade.name.endswith("_test")}  # the written answers are graded by hand

        assert points("as_released") == {g: 0 for g in exercises}
        assert points("reference") == {g: 1 for g in exercises}
        for student, (grade_id, _) in wrong.items():
            assert points(student) == {g: 0 if g == grade_id else 1 for g in exercises}, student
    for student, (grade_id, says) in wrong.items():
        graded = nbformat.read(root / "autograded" / student / assignment / lesson.name, as_version=4)
        test = next(c for c in graded.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id + "_test")
        shown = "".join(out.get("text", "") for out in test.outputs if out.output_type == "stream")
        assert shown.startswith("❌ Not yet:") and says in shown, f"{student}: the graded notebook shows {shown!r}"
        assert any(out.output_type == "error" and out.ename == "AssertionError" for out in test.outputs)
    for grade_id in exercises:
        # The feedback a student gets back: nbgrader's HTML of the graded notebook, ❌ line included.
        result = api.generate_feedback(assignment, f"wrong_{grade_id}")
        assert result["success"], result.get("error") or result.get("log")
        page = (root / "feedback" / f"wrong_{grade_id}" / assignment / f"{lesson.stem}.html").read_text(encoding="utf-8")
        assert "❌ Not yet:" in page, f"{grade_id}: the feedback page does not show the check's line"


# Lesson 01 answered by a student who tries to score without solving (issue 41): each
# exercise handed to the course's own function, the check rebound to one that always passes,
# or the checks package patched (the check, the comparison every check shares, the guard).
_ALWAYS = "lambda *args, **kwargs: True"
CHEATS = {
    "shortcut": {
        "l01_attention": "    return attention(q, k, v)[0]",
        "l01_causal_mask": "    return causal_mask(n)",
    },
    "rebound": {
        grade_id: f"    return None\n\n\n{check} = {_ALWAYS}"
        for grade_id, check in (("l01_attention", "check_attention"),
                                ("l01_permutation_matrix", "check_permutation_matrix"),
                                ("l01_causal_mask", "check_causal_mask"))
    },
    "patched": {
        "l01_attention": "    return None\n\n\nimport course_utils.checks as _checks\n"
                         f"_checks.check_attention = {_ALWAYS}\n"
                         f"_checks.check_permutation_matrix = {_ALWAYS}\n"
                         f"_checks.check_causal_mask = {_ALWAYS}\n"
                         f"_checks._core.close = {_ALWAYS}\n"
                         "_checks._fresh.fresh_check = lambda name: lambda answer: True",
        "l01_causal_mask": "    return causal_mask(n)",
    },
}


def test_no_cheat_scores_under_autograde(course):
    """Real nbgrader autograde of lesson 01 for each cheat: every exercise scores 0 (the
    shortcut fails its check with a line that names the course function it called)."""
    api, root = course
    lesson = next(path for path in LESSONS if path.name.startswith("01_"))
    assignment = assignment_of(lesson)
    assert api.generate_assignment(assignment)["success"]
    exercises = sorted(reference_answers(lesson))
    for student, answers in CHEATS.items():
        submit(root, lesson, f"cheat_{student}", answers)
        result = api.autograde(assignment, f"cheat_{student}")
        assert result["success"], result.get("error") or result.get("log")
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:
        for student in CHEATS:
            submission = gradebook.find_submission(assignment, f"cheat_{student}")
            points = {grade.name.removesuffix("_test"): grade.score
                      for notebook in submission.notebooks for grade in notebook.grades
                      if grade.name.endswith("_test")}
            assert points == {g: 0 for g in exercises}, (student, points)
    graded = nbformat.read(root / "autograded" / "cheat_shortcut" / assignment / lesson.name,
                           as_version=4)
    shown = "".join(out.get("text", "") for cell in graded.cells for out in cell.get("outputs", [])
                    if out.get("output_type") == "stream")
    assert "this calls the course's `attention`" in shown
    assert "this calls the course's `causal_mask`" in shown


def test_a_term_through_the_written_answers_to_the_exported_marks(course):
    """The term's loop on lesson 01 for three students: submit, autograde, grade the written
    question by hand (as the Formgrader does), export with nbgrader's CSV plugin. Each row is
    the autograded points plus the written answer's."""
    import csv

    from nbgrader.plugins import CsvExportPlugin

    api, root = course
    lesson = next(path for path in LESSONS if path.name.startswith("01_"))
    assignment = assignment_of(lesson)
    assert api.generate_assignment(assignment)["success"]
    reference = reference_answers(lesson)
    written = {"l01_question": "Permuting the rows only permutes the outputs: the table ..."}
    students = {"alice": ({**reference, **written}, 3),
                "bob": ({**reference, **written, "l01_attention": MISTAKES["l01_attention"]}, 1),
                "carol": ({}, None)}  # handed in the release as it was
    for student, (answers, _) in students.items():
        submit(root, lesson, student, answers)
        result = api.autograde(assignment, student)
        assert result["success"], result.get("error") or result.get("log")
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:
        for student, (_, score) in students.items():
            grade = gradebook.find_grade("l01_question", lesson.stem, assignment, student)
            assert grade.max_score == 3
            if score is None:  # no answer written: nbgrader scores it 0 by itself
                assert grade.auto_score == 0 and not grade.needs_manual_grade
            else:  # an answer waits for the teacher
                assert grade.auto_score is None and grade.needs_manual_grade
                grade.manual_score = score
        gradebook.db.commit()
        CsvExportPlugin(to=str(root / "grades.csv")).export(gradebook)
    with open(root / "grades.csv", newline="", encoding="utf-8") as handle:
        rows = {row["student_id"]: row for row in csv.DictReader(handle)
                if row["assignment"] == assignment and row["student_id"] in students}
    assert {student: (float(row["score"]), float(row["max_score"]))
            for student, row in rows.items()} == {
        "alice": (3 + 3, 6), "bob": (2 + 1, 6), "carol": (0, 6)}


@pytest.mark.parametrize("grade_id, body, hint", [(g, body, hint) for g, cases in TEACHING_MISTAKES.items()
                                                  for body, hint in cases])
def test_each_teaching_mistake_gets_its_hint_from_the_check(grade_id, body, hint, capsys):
    """The same mistakes without nbgrader (CI autogrades lessons 01 and 09 only): the
    exercise's own check says not yet, with the hint."""
    lesson = next(p for p in LESSONS if p.name.startswith(grade_id[1:3]))
    cells = {c.metadata.get("nbgrader", {}).get("grade_id"): c.source
             for c in nbformat.read(lesson, as_version=4).cells}
    answer = re.sub(r"### BEGIN SOLUTION\n.*?### END SOLUTION", lambda _: body.lstrip(), cells[grade_id],
                    flags=re.S)
    namespace = {"torch": torch, "math": math}
    exec(answer, namespace)
    check, function = re.search(r"assert (check_\w+)\((my_\w+)\)", cells[grade_id + "_test"]).groups()
    exec(f"from course_utils.checks import {check}", namespace)
    capsys.readouterr()
    assert namespace[check](namespace[function]) is False
    shown = capsys.readouterr().out
    assert shown.startswith("❌ Not yet:") and hint in shown, shown
