"""The Django admin for accounts: invitations (made here or with `manage.py createinvite`), the
activity log and the spaces with their members (both read-only: a space changes through its
services, which keep its rules), and a sign-in form for /admin/ throttled like allauth's."""

from datetime import timedelta
from typing import Any, cast

from allauth.account.adapter import get_adapter
from django import forms
from django.contrib import admin, messages
from django.contrib.admin.forms import AdminAuthenticationForm
from django.db.models import Count, QuerySet
from django.http import HttpRequest
from django.utils import timezone

from accounts.invites import DEFAULT_DAYS, IssuedInvite, invite_save_new
from accounts.models import ActivityEvent, Invite, Membership, Space
from gnosem.types import Owner


class ThrottledAdminAuthenticationForm(AdminAuthenticationForm):
    """The admin's sign-in, authenticated through allauth's adapter: failed attempts count against
    the same per-address and per-account limits (ACCOUNT_RATE_LIMITS["login_failed"]) as the
    site's sign-in page, and once over them even the right password is refused."""

    def clean(self) -> dict[str, Any]:
        username = self.cleaned_data.get("username")
        password = self.cleaned_data.get("password")
        if username is not None and password:
            # Raises "Too many failed login attempts" (a ValidationError) once over the limit.
            self.user_cache = get_adapter(self.request).authenticate(self.request, username=username, password=password)
            if self.user_cache is None:
                raise self.get_invalid_login_error()
            self.confirm_login_allowed(self.user_cache)
        return self.cleaned_data


admin.site.login_form = ThrottledAdminAuthenticationForm


@admin.register(Invite)
class InviteAdmin(admin.ModelAdmin):
    list_display = ["__str__", "state", "created_by", "created_at", "expires_at", "used_by", "used_at"]
    readonly_fields = ["created_by", "created_at", "used_by", "used_at"]
    fields = ["email", "expires_at", *readonly_fields]

    def get_changeform_initial_data(self, request: HttpRequest) -> dict:
        return {"expires_at": timezone.now() + timedelta(days=DEFAULT_DAYS)}

    @admin.display(description="state")
    def state(self, invite: Invite) -> str:
        if invite.used_at:
            return "used"
        return "expired" if invite.expires_at <= timezone.now() else "open"

    def save_model(self, request: HttpRequest, obj: Invite, form: forms.ModelForm, change: bool) -> None:
        if change:
            return super().save_model(request, obj, form, change)
        obj.created_by = cast(Owner, request.user)  # the admin lets signed-in staff in only
        secret = invite_save_new(obj)
        link = IssuedInvite(invite=obj, secret=secret).url(request.build_absolute_uri("/"))
        self.message_user(
            request, f"Send this sign-up link; it is shown only now and works once: {link}", messages.WARNING
        )


@admin.register(ActivityEvent)
class ActivityEventAdmin(admin.ModelAdmin):
    list_display = ["created_at", "owner", "action", "token", "ip"]
    list_filter = ["action"]
    search_fields = ["owner__username", "owner__email"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: ActivityEvent | None = None) -> bool:
        return False


class ReadOnly:
    """An admin page (or inline) staff read and never change: the app's own services change it."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class MembershipInline(ReadOnly, admin.TabularInline):
    model = Membership
    fields = ("user", "role", "joined_at")
    readonly_fields = fields
    extra = 0


@admin.register(Space)
class SpaceAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ["name", "kind", "personal_of", "members", "public_id", "created_at"]
    list_filter = ["kind"]
    search_fields = ["name", "public_id", "memberships__user__username", "memberships__user__email"]
    inlines = [MembershipInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Space]:
        return super().get_queryset(request).annotate(member_count=Count("memberships", distinct=True))

    @admin.display(description="members", ordering="member_count")
    def members(self, space: Space) -> int:
        return space.member_count  # type: ignore[attr-defined]  # annotated by get_queryset
