"""An upload handler that stops reading an import upload at the size limit, so an oversized file is
never written in full to memory or disk (Django's own handlers buffer the whole file first)."""
from __future__ import annotations

from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler, StopUpload
from django.http import QueryDict
from django.utils.datastructures import MultiValueDict


class SizeLimitUploadHandler(FileUploadHandler):
    """Counts the bytes of each uploaded file as they stream in and stops the upload once one passes
    ``limit`` (``settings.IMPORT_MAX_BYTES``); ``exceeded`` then tells the view. Django closes (and so
    deletes) the temporary files of the handlers after this one when the upload stops."""

    def __init__(self, request=None, limit: int | None = None):
        super().__init__(request)
        self.limit = settings.IMPORT_MAX_BYTES if limit is None else limit
        self.received = 0
        self.exceeded = False

    def handle_raw_input(self, input_data, META, content_length, boundary, encoding=None):
        if content_length and content_length > self.limit + 64 * 1024:  # multipart framing is small
            self.exceeded = True  # refused before reading a byte of the body
            return QueryDict(encoding=encoding), MultiValueDict()
        return None

    def new_file(self, *args, **kwargs):
        super().new_file(*args, **kwargs)
        self.received = 0

    def receive_data_chunk(self, raw_data, start):
        self.received += len(raw_data)
        if self.received > self.limit:
            self.exceeded = True
            raise StopUpload(connection_reset=True)
        return raw_data

    def file_complete(self, file_size):
        return None

    def message(self) -> str:
        return (f"the file is larger than the import limit of {self.limit / 2**20:.0f} MiB "
                "(CONCORD_IMPORT_MAX_BYTES); nothing was kept")
