"""The API's pagination: DRF's limit/offset, bounded. DRF lets ``?offset=`` be any number of digits
and ``?limit=`` any size; an offset beyond a 64-bit integer reached the database (a 500), and a huge
limit asks for every row at once."""
from __future__ import annotations

from rest_framework.pagination import LimitOffsetPagination

MAX_OFFSET = 10**12  # far beyond any table here, well inside a 64-bit integer


class Pagination(LimitOffsetPagination):
    max_limit = 1000

    def get_offset(self, request) -> int:
        return min(super().get_offset(request), MAX_OFFSET)
