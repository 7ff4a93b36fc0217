"""The Django admin for quotas: the operator raises, lowers or removes a user's limits here."""

from django.contrib import admin

from memories.limits.quotas import quota_usage
from memories.models import Quota


@admin.register(Quota)
class QuotaAdmin(admin.ModelAdmin):
    list_display = ("user", "max_memories", "max_chars", "max_tokens", "usage")
    search_fields = ("user__username", "user__email")
    autocomplete_fields = ("user",)

    @admin.display(description="usage (memories and notes / characters / tokens)")
    def usage(self, quota: Quota) -> str:
        usage = quota_usage(quota.user)
        return f"{usage.memories.used:,} / {usage.characters.used:,} / {usage.tokens.used:,}"
