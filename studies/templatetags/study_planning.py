"""Template tags for the rater's start page include (templates/raters/_pay.html): pay, expected
time and the study's consent text, read from the study already in the page's context."""
from django import template

from studies.authoring import planning
from studies.designs import design_for

register = template.Library()


@register.simple_tag
def rater_pay(study):
    """``planning.rater_pay`` (reward, minutes, hourly rate) or None."""
    return planning.rater_pay(study) if study is not None else None


@register.simple_tag
def money(amount, code):
    """An amount with its currency: ``$1.50``, ``£1.50``, ``1.50 CHF`` (``planning.money``)."""
    return planning.money(amount, code)


@register.simple_tag
def consent_html(study):
    """The study's consent text as safe HTML (Markdown, cleaned as the instructions are)."""
    from studies.rating.pages import render_markdown

    return render_markdown(study.consent_text) if study is not None and study.consent_text else ""


@register.filter
def design_title(study):
    """The study's design as pages list it; a labels-only study is not called by its scale's name."""
    return design_for(study).study_title(study)
