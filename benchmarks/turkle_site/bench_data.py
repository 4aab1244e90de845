"""Turkle's side of benchmarks/http_load.py, run with Turkle's own Python (its virtual environment):

    python -m turkle_site.bench_data setup  '<json: raters, items, raters_per_item, responses, criteria, points, password>'
    python -m turkle_site.bench_data verify ACKS.json

``setup`` migrates, creates one worker account per rater, a project whose HIT template shows a
conversation and ``responses`` responses with a ``points``-point scale per response and criterion
(the Concord Likert item's questions, as one Turkle HIT), and a batch of ``items`` tasks with
``raters_per_item`` assignments each; prints {"batch": id, "users": [...]}. ``verify`` compares the
acknowledged submits (JSON list of {"username", "action", "fields"}) with the stored assignments and
prints the counts."""
from __future__ import annotations

import html
import json
import os
import re
import sys
from collections import Counter

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "turkle_site.settings")


def _template(responses: int, criteria: list[str], points: int) -> str:
    rows = []
    for criterion in criteria:
        rows.append(f"<fieldset><legend>How good is each response's {criterion}?</legend>")
        for r in range(1, responses + 1):
            scale = "".join(f'<label><input type="radio" name="r{r}-{criterion}" value="{p}" required> {p}</label>'
                            for p in range(1, points + 1))
            rows.append(f"<div>Response {chr(64 + r)} {scale}</div>")
        rows.append("</fieldset>")
    shown = "".join(f"<article><h3>Response {chr(64 + r)}</h3><p>${{response_{r}}}</p></article>"
                    for r in range(1, responses + 1))
    return (f"<section><h2>Conversation</h2>${{conversation}}</section>{shown}{''.join(rows)}"
            '<p><input type="submit" value="Submit"></p>')


def setup(spec: dict) -> dict:
    import django

    django.setup()
    from django.contrib.auth.hashers import make_password
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from turkle.models import Batch, Project, Task

    call_command("migrate", verbosity=0)
    hashed = make_password(spec["password"])  # one hash for all accounts: setting up 100 users stays fast
    users = [f"worker{i:04d}" for i in range(spec["raters"])]
    User.objects.bulk_create([User(username=u, password=hashed) for u in users])
    owner = User.objects.create(username="bench-owner", is_staff=True, is_superuser=True, password=hashed)
    project = Project(name="bench likert", created_by=owner, updated_by=owner, login_required=True,
                      assignments_per_task=spec["raters_per_item"],
                      html_template=_template(spec["responses"], spec["criteria"], spec["points"]))
    project.clean()  # Turkle's own template processing: field names, submit button
    project.save()
    batch = Batch.objects.create(project=project, name="bench batch", filename="bench.csv", created_by=owner,
                                 assignments_per_task=spec["raters_per_item"], login_required=True)
    turns = "".join(f"<p><b>{'AB'[t % 2]}</b> {html.escape(f'Turn {t} of conversation {{i}}.')}</p>" for t in range(3))
    Task.objects.bulk_create([
        Task(batch=batch, input_csv_fields={
            "conversation": turns.replace("{i}", str(i)),
            **{f"response_{r}": html.escape(f"System {r} reply to conversation {i}: a sentence of ordinary length.")
               for r in range(1, spec["responses"] + 1)}})
        for i in range(spec["items"])
    ])
    return {"batch": batch.pk, "users": users}


def verify(acks: list[dict]) -> dict:
    import django

    django.setup()
    from turkle.models import TaskAssignment

    stored = {a.pk: a for a in TaskAssignment.objects.select_related("assigned_to").filter(completed=True)}
    acknowledged = lost = wrong = 0
    lost_examples = []
    for ack in acks:
        match = re.search(r"/task/(\d+)/assignment/(\d+)/", ack["action"])
        answers = {k: v for k, v in ack["fields"] if re.fullmatch(r"r\d+-\w+", k)}
        acknowledged += len(answers)
        assignment = stored.get(int(match.group(2))) if match else None
        if assignment is None or assignment.assigned_to.username != ack["username"]:
            lost += len(answers)
            lost_examples.append(ack["action"])
            continue
        wrong += sum(1 for k, v in answers.items() if assignment.answers.get(k) != v)
    per_user_task = Counter((a.assigned_to_id, a.task_id) for a in stored.values())
    open_assignments = TaskAssignment.objects.filter(completed=False).count()
    ratings = sum(sum(1 for k in a.answers if re.fullmatch(r"r\d+-\w+", k)) for a in stored.values())
    return {
        "acknowledged_ratings": acknowledged, "stored_ratings": ratings, "lost": lost + wrong,
        "stored_with_other_value": wrong,
        "duplicated": sum(n - 1 for n in per_user_task.values() if n > 1),
        "items_acknowledged": len(acks), "items_stored": len(stored),
        "assignments_left_open": open_assignments, "lost_examples": lost_examples[:5],
    }


if __name__ == "__main__":
    command, argument = sys.argv[1], sys.argv[2]
    if command == "setup":
        print(json.dumps(setup(json.loads(argument))))
    else:
        with open(argument) as fh:
            print(json.dumps(verify(json.load(fh))))
