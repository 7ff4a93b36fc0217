"""A note's Markdown rendered as HTML safe to put in a page as is (`|safe`).

CommonMark with tables, raw HTML off (a `<script>` in the text shows as text), links only to the
schemes markdown-it lets through (never `javascript:`, `vbscript:`, `file:` or non-image `data:`),
each marked `rel="nofollow noopener"`. Images are not shown: each becomes a link to its address with
its alt text, so opening a note never makes the browser fetch anything from elsewhere.
"""

from collections.abc import Sequence

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

LINK_REL = "nofollow noopener"


def _link_open(self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    tokens[idx].attrSet("rel", LINK_REL)
    return self.renderToken(tokens, idx, options, env)


def _image(self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    """An image as a link to it, its alt text (else its address) the link's text; inside a link,
    where an anchor may not nest, or for an inline `data:` image or one whose address markdown-it
    refused, the alt text alone."""
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    alt = self.renderInlineAsText(token.children or [], options, env)
    opened = sum(1 if t.type == "link_open" else -1 for t in tokens[:idx] if t.type in ("link_open", "link_close"))
    if not src or src.lower().startswith("data:") or opened > 0:
        return escapeHtml(alt)
    title = token.attrGet("title")
    title_attr = f' title="{escapeHtml(str(title))}"' if title else ""
    return f'<a href="{escapeHtml(src)}"{title_attr} rel="{LINK_REL}">{escapeHtml(alt or src)}</a>'


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    md.add_render_rule("link_open", _link_open)
    md.add_render_rule("image", _image)
    return md


_MARKDOWN = _parser()


def render_markdown(text: str) -> str:
    """A note's Markdown as safe HTML: raw HTML escaped, links to safe schemes only and marked
    nofollow, images turned into links."""
    return _MARKDOWN.render(text)
