"""The API's one pagination: DRF's limit/offset, bounded and strict. DRF lets ``?offset=`` be any
number of digits and ``?limit=`` any size (an offset beyond a 64-bit integer reached the database: a
500), and it silently ignored what it could not read (``?limit=abc`` gave the default page). Here a
limit or offset that is not a whole number in range is a 400 naming the parameter; an offset past the
end is an empty page (``count`` says how many there are)."""
from __future__ import annotations

from rest_framework.pagination import LimitOffsetPagination

from studies.api.inputs import whole_param

MAX_OFFSET = 10**12  # far beyond any table here, well inside a 64-bit integer


class Pagination(LimitOffsetPagination):
    max_limit = 1000

    def get_limit(self, request) -> int:
        limit = whole_param(request, self.limit_query_param, low=1, high=self.max_limit)
        return self.default_limit if limit is None else limit

    def get_offset(self, request) -> int:
        offset = whole_param(request, self.offset_query_param, low=0, high=MAX_OFFSET)
        return offset or 0

