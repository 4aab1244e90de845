"""Parity between the researcher's pages and the API: every named route of the researcher URLconf (the pages
a signed-in researcher uses; not the rater pages under /r/, not the admin) is either served by an API route
named here, or listed, with its reason, among the pages that stay pages (``PAGES_ONLY``) or the capabilities
the API does not have yet (``NOT_YET``, meant to shrink). A new page with none of these fails this test, as
does an entry naming a page or an API route that no longer exists."""
import pytest
from django.urls import get_resolver
from django.urls.resolvers import URLResolver

# page route name -> the API route(s) that do what it does
API_FOR_PAGE = {
    "studies:experiment_list": ["studies-api:experiment-list"],
    "studies:experiment_create": ["studies-api:experiment-create"],
    "studies:study_create": ["studies-api:study-create"],
    "studies:experiment_report": ["studies-api:experiment-report"],
    "studies:study_report": ["studies-api:study-report"],
    "studies:study_detail": ["studies-api:study-detail", "studies-api:study-progress", "studies-api:study-items"],
    "studies:study_checks": ["studies-api:study-checks"],
    "studies:study_checks_action": ["studies-api:study-check-create", "studies-api:study-check",
                                    "studies-api:study-checks-settings"],
    "studies:study_practice_action": ["studies-api:study-practice-item-create", "studies-api:study-practice-item",
                                      "studies-api:study-practice-settings", "studies-api:study-practice-share"],
    "studies:invite_create": ["studies-api:study-invite-create"],
    "studies:study_rater_settings": ["studies-api:study-rater-settings"],
    "studies:experiment_collaborators": ["studies-api:experiment-collaborators", "studies-api:experiment-collaborator"],
    "studies:study_edit": ["studies-api:study-settings", "studies-api:study-items-build"],
    "studies:study_duplicate": ["studies-api:study-duplicate"],
    "studies:study_delete": ["studies-api:study-detail"],
    "studies:study_review": ["studies-api:study-review"],
    "studies:study_rater": ["studies-api:study-rater"],
    "studies:study_rater_decide": ["studies-api:study-rater-decide"],
    "studies:study_decision_revert": ["studies-api:study-decision-revert"],
    "studies:study_items_browser": ["studies-api:study-browse"],
    "studies:study_state": ["studies-api:study-pause", "studies-api:study-resume", "studies-api:study-reopen"],
    "studies:study_transition": ["studies-api:study-publish", "studies-api:study-close"],
    "studies:study_export": ["studies-api:study-ratings"],
    "studies:study_span_export": ["studies-api:study-spans"],
    "studies:study_label_studio_tasks": ["studies-api:study-label-studio"],
    "studies:study_label_studio_config": ["studies-api:study-label-studio"],
    "studies:import": ["studies-api:import", "studies-api:import-job", "studies-api:corpus-list"],
    "studies:corpus_list": ["studies-api:corpus-list"],
    "studies:corpus_detail": ["studies-api:corpus-detail", "studies-api:corpus-conversations"],
    "studies:corpus_conversation": ["studies-api:corpus-conversation"],
    "chat:selfchat_list": ["studies-api:selfchat-list"],
    "chat:selfchat_detail": ["studies-api:selfchat-detail"],
    "chat:selfchat_rerun": ["studies-api:selfchat-rerun"],
    "chat:selfchat_cancel": ["studies-api:selfchat-cancel"],
    "chat:selfchat_conversation": ["studies-api:selfchat-conversations"],
    "chat:endpoint_list": ["studies-api:endpoint-list"],
    "chat:endpoint_new": ["studies-api:endpoint-list"],
    "chat:endpoint_edit": ["studies-api:endpoint-detail"],
    "chat:endpoint_try": ["studies-api:endpoint-try"],
    "crowd:study_crowd": ["crowd-api:study"],
    "crowd:study_crowd_action": ["crowd-api:publication-configure", "crowd-api:publish", "crowd-api:sync",
                                 "crowd-api:review", "crowd-api:bonus", "crowd-api:transition"],
    "crowd:rater_decide": ["crowd-api:rater-decide"],
    "metrics:metric_list": ["metrics-api:model-list", "metrics-api:run-create"],
    "metrics:model_detail": ["metrics-api:model-detail"],
    "metrics:run_start": ["metrics-api:run-create"],
    "metrics:judge_start": ["metrics-api:judge-create"],
    "metrics:run_cancel": ["metrics-api:run-cancel"],
    "metrics:run_rerun": ["metrics-api:run-rerun"],
    "metrics:run_retry": ["metrics-api:run-retry"],
    "metrics:training_start": ["metrics-api:training-create"],
    "metrics:mdd_training_start": ["metrics-api:training-create"],
    "metrics:training_cancel": ["metrics-api:training-cancel"],
    "metrics:bme_fill": ["metrics-api:bme-anchors"],
    "metrics:human_metric": ["metrics-api:human-metric", "metrics-api:judge-ranking", "metrics-api:ppi"],
    "chat:transcripts_export": ["studies-api:study-chats"],
    "studies:study_live_config": ["studies-api:study-live"],
    "studies:study_report_download": ["studies-api:study-report-download"],
    "studies:experiment_report_download": ["studies-api:experiment-report-download"],
    "studies:study_report_figure": ["studies-api:study-report-figure"],
    "studies:experiment_report_figure": ["studies-api:experiment-report-figure"],
    "studies:experiment_export": ["studies-api:experiment-ratings"],
    "metrics:human_metric_csv": ["metrics-api:human-metric-download"],
    "metrics:ppi_download": ["metrics-api:ppi-download"],
    "metrics:ppi_extend": ["studies-api:study-items-extend"],
    "metrics:model_card_start": ["metrics-api:model-card"],
}

# Pages that stay pages: what they show is for a person, and the API already has what they are made of.
PAGES_ONLY = {
    "login": "the browser's sign-in; the API signs in at /api/auth/token/",
    "logout": "the browser's sign-out; the API revokes a token at /api/auth/tokens/<id>/",
    "studies:study_preview": "the rater's page as a rater sees it; the API gives the items (study-items)",
    "studies:study_preview_item": "as above, one item",
    "studies:builder_preview": "the study builder's live preview of a page being designed",
    "studies:new_study_preview": "the new-study page's live preview of a rater page for a sample item; nothing is saved",
    "studies:builder_expected": "the builder's form rows for an expected answer; the API takes the rules as JSON",
    "studies:study_live_panel": "an HTML fragment the study page polls; the API reads the same figures (study-progress)",
    "metrics:training_curve": "an SVG of a training run's losses; the API gives the run (training-detail)",
    "metrics:human_metric_scatter": "an SVG figure of the points the API's human-metric report lists",
    "metrics:ppi_figure": "an SVG figure of the estimates the API's prediction-powered report gives",
}

# Capabilities the API does not have yet: each one a page only today. Remove an entry when its route lands.
NOT_YET: dict[str, str] = {}


def _all_routes():
    found: dict[str, str] = {}

    def walk(patterns, prefix="", namespace=None):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, prefix + str(pattern.pattern), pattern.namespace or namespace)
            elif pattern.name:
                found[f"{namespace}:{pattern.name}" if namespace else pattern.name] = prefix + str(pattern.pattern)
    walk(get_resolver().url_patterns)
    return found


ROUTES = _all_routes()
RESEARCHER_PAGES = sorted(name for name, route in ROUTES.items()
                          if not route.startswith(("api/", "admin/", "r/")) and not name.startswith("raters:"))
API_ROUTES = {name for name, route in ROUTES.items() if route.startswith("api/")}


@pytest.mark.parametrize("page", RESEARCHER_PAGES)
def test_api_parity_every_researcher_page_has_an_api_route_or_a_reason(page):
    listed = [page in API_FOR_PAGE, page in PAGES_ONLY, page in NOT_YET]
    assert sum(listed) == 1, (f"{page} ({ROUTES[page]}): give it an API route (API_FOR_PAGE), or say why it stays "
                              "a page (PAGES_ONLY) or that the API lacks it (NOT_YET), exactly once")
    missing = [name for name in API_FOR_PAGE.get(page, []) if name not in API_ROUTES]
    assert not missing, f"{page} is mapped to API routes that do not exist: {missing}"


def test_api_parity_lists_name_only_existing_pages():
    stale = [name for name in (*API_FOR_PAGE, *PAGES_ONLY, *NOT_YET) if name not in RESEARCHER_PAGES]
    assert not stale, f"listed but no longer a researcher page: {stale}"


def test_api_parity_not_yet_stays_empty():
    # every researcher capability has its API route: a new page-only capability must come with one
    assert not NOT_YET
