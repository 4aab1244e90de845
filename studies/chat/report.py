"""The report page's "Chats" section (registered with ``studies.reports.sections`` by the app's
``ready``): for each chat study, per system, how its chats went (ended by the rater, at the last turn or
after a failure; failed calls; replies per chat; reply time), and why a chat study's reliability is
not an inter-rater ICC: each conversation is rated only by the rater who had it, so the ICC tables say
"needs at least two raters on one item"; the system means and the human-vs-metric page compare systems."""
from __future__ import annotations

from django.template.loader import render_to_string

from studies.chat.selectors import chat_summary
from studies.designs import unit_for


def report_section(request, studies, target):
    chat_studies = [s for s in studies if unit_for(s).collects_dialogues]
    if not chat_studies:
        return None
    return render_to_string("reports/_chats.html", {"rows": chat_summary(chat_studies)}, request=request)
