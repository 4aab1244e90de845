"""The text a person sees on a page: what the HTML's elements hold, without tags, attribute values
(form tokens, assignment tokens, ids in links), scripts or styles, whitespace collapsed. Assertions that
a word or number is absent from a page check this text, since a random token in an attribute can hold
any short string (a 64-digit hex form token holds "999" about once in 70 pages)."""
from html.parser import HTMLParser

HIDDEN = {"script", "style", "template"}


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.hidden = 0

    def handle_starttag(self, tag, attrs):
        if tag in HIDDEN:
            self.hidden += 1

    def handle_endtag(self, tag):
        if tag in HIDDEN and self.hidden:
            self.hidden -= 1

    def handle_data(self, data):
        if not self.hidden:
            self.parts.append(data)


def visible_text(html: str | bytes) -> str:
    parser = _Text()
    parser.feed(html.decode() if isinstance(html, bytes) else html)
    parser.close()
    return " ".join(" ".join(parser.parts).split())
