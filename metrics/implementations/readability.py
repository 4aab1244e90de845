"""Readability: Flesch Reading Ease of the response (textstat), as used by Santhanam & Shaikh 2019.

FRE = 206.835 − 1.015 · (words / sentences) − 84.6 · (syllables / words); higher is easier to read
(about 0-100 for ordinary prose, at most 121.22). A response with no letters (empty, symbols only)
has no reading ease: it gets 0.0 and is counted in ``warnings``."""
from __future__ import annotations

import re

import textstat

from metrics.implementations.base import MetricImplementation, ScoringInput

LETTER = re.compile(r"[^\W\d_]", re.UNICODE)


class Readability(MetricImplementation):
    key = "readability"
    name = "Flesch Reading Ease"
    level = "turn"
    range = (None, 121.22)
    description = "Flesch Reading Ease of the response (textstat); higher = easier to read."

    def score(self, batch: list[ScoringInput]) -> list[float]:
        values = []
        for item in batch:
            if not LETTER.search(item.response or ""):
                self.warnings += 1
                values.append(0.0)
            else:
                values.append(float(textstat.flesch_reading_ease(item.response)))
        return values
