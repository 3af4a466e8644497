"""One review project on a Label Studio server: create, push tasks without duplicates, export.

Label Studio does not deduplicate imports, so push always asks the server which question ids
it already holds and imports only the others, in batches. An import is never retried blindly
(a lost response may hide a committed batch): after a transient failure the server is asked
again, so an interrupted or repeated push never creates a duplicate task.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Callable
from xml.etree import ElementTree

from label_studio_sdk import LabelStudio

from bbsard_audit.base.errors import InputError

from .connection import Connection, LabelStudioError
from bbsard_audit.base.contracts.audit import Layout
from bbsard_audit.base.contracts.table import id_order

from .tasks import EXTERNAL_ID, IDS_FIELD, label_config


@dataclass
class PushResult:
    project_id: int
    created: int
    already_there: int
    duplicates_on_server: list[int] = field(default_factory=list)
    seconds: float = 0.0


def config_controls(config: str) -> dict[str, frozenset[str]]:
    """Control name -> its choice/label values: what an annotation of this config can hold."""
    try:
        root = ElementTree.fromstring(config)
    except ElementTree.ParseError:
        return {}
    return {el.get("name"): frozenset(c.get("value") for c in el) for el in root.iter()
            if el.get("name") and el.get("toName")}


@dataclass
class ReviewProject:
    conn: Connection
    client: LabelStudio
    id: int
    title: str
    layout: Layout | None
    """The pushed audit's pair: its labelling config names the texts and controls with the pair's codes.
    None for a project opened to export only (the tasks carry their pair: tasks.task_layout)."""

    @classmethod
    def open(cls, conn: Connection, title: str, *, layout: Layout | None = None, create: bool = False,
             overlap: int = 2) -> "ReviewProject":
        """The project with this exact title; created (with the labelling config of `layout`, the
        pushed audit's) if asked."""
        client = conn.client()
        found = [p for p in conn.listing("list projects", lambda: client.projects.list(title=title, page_size=100))
                 if p.title == title]
        if len(found) > 1:
            raise InputError(f"{len(found)} Label Studio projects are titled {title!r} "
                             f"(ids {', '.join(str(p.id) for p in found)}): rename all but one")
        if found:
            return cls(conn, client, found[0].id, title, layout)
        if not create:
            raise InputError(f"no Label Studio project titled {title!r} at {conn.shown_url}")
        if layout is None:
            raise ValueError("a new project needs the pushed audit's layout (its labelling config)")
        project = conn.call("create project", lambda: client.projects.create(
            title=title, label_config=label_config(layout),
            maximum_annotations=overlap, show_collab_predictions=True,
            description="bbsard-audit expert review of Dutch translations"), retry=False)
        return cls(conn, client, project.id, title, layout)

    def check_config(self, *, update: bool = False) -> bool:
        """Refuse (one line) a project whose labelling config is not ours; True when it was updated.

        `update` replaces an older config by ours only when ours is a strict superset (every
        control and value kept, span labels added), so no existing annotation loses its meaning;
        Label Studio itself also refuses a config that existing annotations do not fit.
        """
        ours_text = label_config(self.layout)
        theirs = config_controls(self.conn.call("get project", lambda: self.client.projects.get(self.id)).label_config or "")
        ours = config_controls(ours_text)
        if theirs == ours:
            return False
        missing = sorted(set(ours) - set(theirs))
        superset = all(name in ours and values <= ours[name] for name, values in theirs.items())
        if update and superset:
            self.conn.call("update labelling config", lambda: self.client.projects.update(
                self.id, label_config=ours_text), retry=False)
            return True
        what = (f"an older labelling config (without {', '.join(missing)})" if superset and missing
                else "a labelling config that is not bbsard-audit's")
        fix = ("push to a new --project title, or add --update-config to add the span labels to this one"
               if superset else "push to a new --project title")
        raise InputError(f"Label Studio project {self.title!r} (id {self.id}) uses {what}: {fix}")

    def export(self) -> list[dict]:
        """Every task with its annotations (Label Studio JSON export, all tasks); a body that is not
        a JSON list of tasks (an HTML page, a truncated download) is one line naming the endpoint."""
        body = self.conn.call("export tasks", lambda: b"".join(self.client.projects.exports.download_sync(
            self.id, export_type="JSON", download_all_tasks=True)))
        try:
            tasks = json.loads(body)
        except ValueError as exc:
            start = body[:15].decode("utf-8", "replace").strip()
            raise self.conn.bad_body("export tasks", f"{len(body):,} bytes that are not JSON ({type(exc).__name__}: "
                                                     f"{str(exc)[:80]}; it starts {start!r})") from None
        if not isinstance(tasks, list) or not all(isinstance(t, dict) for t in tasks):
            raise self.conn.bad_body("export tasks", f"JSON that is not a list of tasks (a {type(tasks).__name__})")
        return tasks

    def question_ids(self) -> dict[int | str, list[int]]:
        """question id -> task ids on the server (more than one means duplicates).

        Asks only for id and data: ~1 s for 1,108 tasks where the full export takes ~10 s.
        """
        tasks = self.conn.listing("list tasks", lambda: self.client.tasks.list(
            project=self.id, fields="task_only", include="id,data", page_size=1000))
        held: dict[int | str, list[int]] = {}
        for task in tasks:
            data = task.data or {}
            qid = data.get(EXTERNAL_ID)
            if qid is not None:  # a string id where the task says so (`ids`), else an int as ever
                held.setdefault(str(qid) if data.get(IDS_FIELD) == "string" else int(qid), []).append(task.id)
        return held

    def push(self, tasks: list[dict], *, batch_size: int = 250,
             progress: Callable[[int], None] | None = None) -> PushResult:
        started = time.monotonic()
        attempt, created = 0, 0
        while True:
            held = self.question_ids()
            missing = [t for t in tasks if t["data"][EXTERNAL_ID] not in held]
            if attempt == 0:
                already = len(tasks) - len(missing)
            try:
                for start in range(0, len(missing), batch_size):
                    batch = missing[start:start + batch_size]
                    self.conn.call("import tasks", lambda: self.client.projects.import_tasks(
                        self.id, request=batch, return_task_ids=True), retry=False)
                    created += len(batch)
                    if progress:
                        progress(len(batch))
                break
            except LabelStudioError as exc:
                if not exc.transient or attempt >= self.conn.retries:
                    raise
                time.sleep(self.conn.backoff * 2**attempt)
                attempt += 1
        dupes = sorted((q for q, ids in held.items() if len(ids) > 1), key=id_order)
        return PushResult(self.id, created, already, dupes, round(time.monotonic() - started, 2))

    def users(self) -> dict[int, str]:
        """User id -> email, to name annotators (the export only gives ids)."""
        users = self.conn.call("list users", self.client.users.list)
        if not isinstance(users, list) or not all(isinstance(getattr(u, "id", None), int) for u in users):
            raise self.conn.bad_body("list users", "JSON that is not a list of users")
        return {u.id: u.email or u.username or f"user-{u.id}" for u in users}
