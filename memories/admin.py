"""The Django admin for quotas: the operator raises, lowers or removes a user's limits, or a team
space's, here."""

from django.contrib import admin

from memories.limits.quotas import QuotaUsage, quota_usage, space_quota_usage
from memories.models import Quota, SpaceQuota

USAGE_COLUMN = "usage (memories and notes / characters / tokens)"


def _usage_text(usage: QuotaUsage) -> str:
    return f"{usage.memories.used:,} / {usage.characters.used:,} / {usage.tokens.used:,}"


@admin.register(Quota)
class QuotaAdmin(admin.ModelAdmin):
    list_display = ("user", "max_memories", "max_chars", "max_tokens", "usage")
    search_fields = ("user__username", "user__email")
    autocomplete_fields = ("user",)

    @admin.display(description=USAGE_COLUMN)
    def usage(self, quota: Quota) -> str:
        return _usage_text(quota_usage(quota.user))


@admin.register(SpaceQuota)
class SpaceQuotaAdmin(admin.ModelAdmin):
    list_display = ("space", "max_memories", "max_chars", "max_tokens", "usage")
    search_fields = ("space__name",)
    autocomplete_fields = ("space",)

    @admin.display(description=USAGE_COLUMN)
    def usage(self, quota: SpaceQuota) -> str:
        return _usage_text(space_quota_usage(quota))
