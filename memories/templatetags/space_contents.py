"""`{% space_contents space as held %}`: what one of the signed-in user's spaces holds,
`{% space_quota space as quota %}` its quota, and `{% space_key_rotation space as rotation %}`
its key rotation under way, for the account pages, which may not import `memories` themselves
(accounts stands below it)."""

from django import template
from django.template import Context

from accounts.models import Space
from memories.encryption.rotation import Rotation, rotation_of
from memories.limits.quotas import QuotaUsage, space_quota_usage
from memories.models import SpaceQuota
from memories.selectors import SpaceSummary, space_summaries

register = template.Library()
_HELD = "memories.space_contents"  # the counts, kept in the render context for the rest of the page


@register.simple_tag(takes_context=True)
def space_contents(context: Context, space: Space) -> SpaceSummary | None:
    """The space's current memories and notes (`.memories`, `.notes`), or None for a space the user
    does not reach; every space the user reaches is counted once a page, in two queries."""
    held = context.render_context.get(_HELD)
    if held is None:
        summaries = space_summaries(context["request"].user)
        held = context.render_context[_HELD] = {summary.space.id: summary for summary in summaries}
    return held.get(space.pk)


@register.simple_tag
def space_key_rotation(space: Space) -> Rotation | None:
    """The space's key rotation under way (how many of its rows are sealed under the new key), or None."""
    return rotation_of(space.pk)


@register.simple_tag
def space_quota(space: Space) -> QuotaUsage | None:
    """The space's usage against its quota, or None when it has no limits, without summing what a
    space without a quota holds (the page shows the space only to its members)."""
    quota = SpaceQuota.objects.filter(space_id=space.pk).first()
    if quota is None:
        return None
    usage = space_quota_usage(quota)
    return usage if usage.limited else None
