"""Simulated reviewers for tests, demos and benchmarks: real users, real annotations via the API.

Each reviewer is a Label Studio user created by the admin; annotations are posted on their
behalf (`completed_by`), exactly as the UI would store them.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from bbsard_audit.base.contracts.audit import Layout

from .project import ReviewProject
from .spans import prediction_result


def ensure_reviewer(project: ReviewProject, email: str) -> int:
    """The user id of `email`, creating the user if needed."""
    users = {name: uid for uid, name in project.users().items()}
    if email in users:
        return users[email]
    user = project.conn.call("create user", lambda: project.client.users.create(
        email=email, username=email.split("@")[0]), retry=False)
    return user.id


def annotation_result(verdict: str, corrected_target: str = "", gold_labels_apply: str = "", *, layout: Layout,
                      spans: list[dict] = (), texts: dict[str, str] | None = None) -> list[dict]:
    """A result as the labelling config's UI stores it (choice aliases; span regions with their
    notes, `spans` as in error_spans.csv, on the task's `texts` {code: question} for the pair's sides); the controls
    named for `layout`'s pair (`corrected_<target>` on `question_<target>`)."""
    target = layout.question_tgt
    result = [{"from_name": "verdict", "to_name": target, "type": "choices", "value": {"choices": [verdict]}},
              *prediction_result(list(spans), texts or {}, prefix="review")]
    if corrected_target:
        result.append({"from_name": layout.corrected, "to_name": target, "type": "textarea",
                       "value": {"text": [corrected_target]}})
    if gold_labels_apply:
        result.append({"from_name": "gold_labels_apply", "to_name": target, "type": "choices",
                       "value": {"choices": [gold_labels_apply]}})
    return result


def annotate(project: ReviewProject, reviewer: str, decide: Callable[[int], str | None],
             *, corrected: Callable[[int], str] | None = None, workers: int = 3) -> int:
    """Post `reviewer`'s verdict `decide(question_id)` on every task (None = skip); return count.

    A few concurrent requests: each annotation costs Label Studio ~0.3-0.7 s of CPU-bound work.
    """
    user_id = ensure_reviewer(project, reviewer)
    todo = [(task_id, qid, decide(qid)) for qid, task_ids in project.question_ids().items()
            for task_id in task_ids]
    todo = [item for item in todo if item[2] is not None]

    def post(item) -> None:
        task_id, qid, verdict = item
        result = annotation_result(verdict, corrected(qid) if corrected and verdict != "correct" else "",
                                   "no" if verdict == "legal" else "yes", layout=project.layout)
        project.conn.call("create annotation", lambda: project.client.annotations.create(
            task_id, result=result, completed_by=user_id, project=project.id), retry=False)

    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(post, todo))
    return len(todo)
