"""Error pages that know who is asking: API clients (paths under /api/) get the JSON body the schema
documents (``{"detail": ...}``), people get the HTML page. DRF already answers JSON inside its views;
these cover what happens before a view runs (a URL that resolves to no view) and uncaught errors."""
from django.http import JsonResponse
from django.views import defaults


def _is_api(request) -> bool:
    return request.path.startswith("/api/")


def page_not_found(request, exception=None):
    if _is_api(request):
        return JsonResponse({"detail": "Not found."}, status=404)
    return defaults.page_not_found(request, exception)


def server_error(request):
    if _is_api(request):
        return JsonResponse({"detail": "Server error: the request was not completed."}, status=500)
    return defaults.server_error(request)
