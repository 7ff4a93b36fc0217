"""API tokens: shown once, stored as a lookup prefix plus an HMAC digest, never in clear."""

from django.conf import settings
from django.db import models
from django.db.models import Q


class TokenScope(models.TextChoices):
    READ = "read"
    WRITE = "write"


class ApiToken(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    scope = models.CharField(max_length=8, choices=TokenScope.choices)
    prefix = models.CharField(max_length=16, unique=True)
    digest = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(scope__in=TokenScope.values), name="apitoken_scope"),
            models.CheckConstraint(condition=~Q(name=""), name="apitoken_name_not_empty"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    @property
    def can_write(self) -> bool:
        return self.scope == TokenScope.WRITE


class Invite(models.Model):
    """A single-use sign-up link made by staff (GNOSEM_SIGNUP=invite). Only a digest of its secret
    is stored, as for API tokens; `email`, when set, is the only address it signs up."""

    digest = models.CharField(max_length=64, unique=True)
    email = models.EmailField(blank=True, help_text="Leave empty to let the link sign up any address.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"invite #{self.pk}" + (f" for {self.email}" if self.email else "")


class ActivityAction(models.TextChoices):
    TOKEN_CREATED = "token_created", "token created"
    TOKEN_REVOKED = "token_revoked", "token revoked"
    SIGNED_IN = "signed_in", "signed in"
    SIGN_IN_FAILED = "sign_in_failed", "sign-in failed"
    EXPORTED = "exported", "exported"
    IMPORTED = "imported", "imported"


class ActivityEvent(models.Model):
    """One thing done to or with an account: what, when, from which address and with which token
    (null when done from the web pages or the shell). Kept GNOSEM_ACTIVITY_RETENTION_DAYS days."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="activity_events")
    action = models.CharField(max_length=32, choices=ActivityAction.choices)
    token = models.ForeignKey(ApiToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    detail = models.JSONField(default=dict, blank=True)
    ip = models.GenericIPAddressField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        indexes = [models.Index(fields=["owner", "-created_at"], name="activity_owner_newest")]

    def __str__(self) -> str:
        return f"{self.get_action_display()} ({self.created_at:%Y-%m-%d %H:%M})"
