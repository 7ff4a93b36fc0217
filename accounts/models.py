"""Spaces, their members and the links that invite people into them; API tokens (shown once,
stored as a lookup prefix plus an HMAC digest, never in clear), the OAuth clients that may ask for
a connection, sign-up invitations and the activity log."""

import uuid
from typing import cast

from django.conf import settings
from django.contrib.postgres.functions import RandomUUID
from django.db import connections, models
from django.db.models import F, Q
from django.db.models.fields.json import KT
from oauth2_provider.generators import generate_client_id
from oauth2_provider.models import AbstractApplication

from gnosem.types import Owner


class SpaceKind(models.TextChoices):
    PERSONAL = "personal"
    TEAM = "team"


class Role(models.TextChoices):
    """What a member may do in a space, each role everything the next one may and more."""

    OWNER = "owner"  # everything, deleting the space and handing it over included
    ADMIN = "admin"  # members and invitations
    EDITOR = "editor"  # read, write, update, delete, supersede, merge
    VIEWER = "viewer"  # read


# A space's name: one line, short enough for a switcher and a tool argument.
MAX_SPACE_NAME_CHARS = 100
PERSONAL_SPACE_NAME = "Personal"


class Space(models.Model):
    """Where memories, notes and entities live: every user's personal space (`personal_of` that
    user, who is its one member, as owner), or a team's, shared by its members."""

    # Its id wherever it is shown or named (tokens, tool arguments, URLs): random rather than the
    # row's, which would count every user's spaces.
    public_id = models.UUIDField(db_default=RandomUUID(), unique=True, editable=False)
    name = models.CharField(max_length=MAX_SPACE_NAME_CHARS)
    kind = models.CharField(max_length=8, choices=SpaceKind.choices)
    personal_of = models.OneToOneField(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="personal_space"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(kind__in=SpaceKind.values), name="space_kind"),
            models.CheckConstraint(condition=~Q(name=""), name="space_name_not_empty"),
            # A personal space is some user's; a team space is nobody's alone.
            models.CheckConstraint(
                condition=Q(kind=SpaceKind.PERSONAL, personal_of__isnull=False)
                | Q(kind=SpaceKind.TEAM, personal_of__isnull=True),
                name="space_personal_has_its_user",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind})"


class Membership(models.Model):
    """A user's place in a space, with the role that says what they may do there."""

    space = models.ForeignKey(Space, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=8, choices=Role.choices)
    joined_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["space", "user"], name="membership_once_per_space"),
            models.CheckConstraint(condition=Q(role__in=Role.values), name="membership_role"),
        ]
        indexes = [models.Index(fields=["user", "space"], name="membership_by_user")]

    def __str__(self) -> str:
        return f"{self.user_id} in {self.space_id} as {self.role}"


class SpaceInvitation(models.Model):
    """A single-use link that makes whoever opens it a member of a team space, with `role` (never
    owner: ownership is handed over, not given by link). Only a digest of its secret is stored, as
    for sign-up invitations."""

    # Its id on the space's invitations list: random rather than the row's, which would count them.
    public_id = models.UUIDField(db_default=RandomUUID(), unique=True, editable=False)
    space = models.ForeignKey(Space, on_delete=models.CASCADE, related_name="invitations")
    role = models.CharField(max_length=8, choices=Role.choices)
    digest = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(role__in=[Role.ADMIN, Role.EDITOR, Role.VIEWER]), name="spaceinvitation_role_not_owner"
            ),
        ]

    def __str__(self) -> str:
        return f"invitation to {self.space_id} as {self.role}"


class TokenScope(models.TextChoices):
    READ = "read"
    WRITE = "write"


class OAuthClient(AbstractApplication):
    """An OAuth client (django-oauth-toolkit's Application, swapped in by
    OAUTH2_PROVIDER_APPLICATION_MODEL): registered by Dynamic Client Registration or described by
    a Client ID Metadata Document, whose URL is then its client_id (hence up to 2048 characters).
    `registration_source` (dcr / cimd / manual) and `cimd_expires_at` come from the toolkit."""

    client_id = models.CharField(max_length=2048, unique=True, default=generate_client_id)
    # When a token was last issued to it: an unused DCR registration is cleaned up.
    last_used_at = models.DateTimeField(null=True, blank=True)
    # CIMD only: when its metadata document was last fetched (cimd_expires_at says when to again).
    metadata_fetched_at = models.DateTimeField(null=True, blank=True)

    class Meta(AbstractApplication.Meta):
        verbose_name = "OAuth client"


class ApiTokenManager(models.Manager["ApiToken"]):
    def active_with_owner(self, column: str, value: str | uuid.UUID) -> "ApiToken | None":
        """The unrevoked token whose unique `column` holds `value`, its active owner loaded, or None.
        Authentication runs on every MCP and REST request, so this is one statement written out
        rather than compiled by the ORM."""
        token_names = [field.attname for field in self.model._meta.concrete_fields]
        user_model = self.model._meta.get_field("owner").related_model
        user_names = [field.attname for field in user_model._meta.concrete_fields]
        assert column in token_names, column
        sql = (
            f"SELECT {', '.join(f't.{name}' for name in token_names)}, {', '.join(f'u.{name}' for name in user_names)}"
            f" FROM {self.model._meta.db_table} t JOIN {user_model._meta.db_table} u ON u.id = t.owner_id"
            f" WHERE t.{column} = %s AND t.revoked_at IS NULL AND u.is_active"
        )
        with connections[self.db].cursor() as cursor:
            cursor.execute(sql, [value])
            row = cursor.fetchone()
        if row is None:
            return None
        token = self.model.from_db(self.db, token_names, row[: len(token_names)])
        token.owner = cast(Owner, user_model.from_db(self.db, user_names, row[len(token_names) :]))
        return token


class ApiToken(models.Model):
    """A `gno_` token, or a connection: what an OAuth client was granted (`oauth_client` set, no
    secret of its own). A connection's access tokens authenticate as it, so rate limits, last use,
    activity and revocation work the same for both; `oauth_token_family` ties it to the refresh
    token family its grant started, `oauth_code_digest` to the authorization code exchanged for it."""

    # Its id on the Tokens page: random rather than the row's, which would count every user's tokens.
    public_id = models.UUIDField(db_default=RandomUUID(), editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    scope = models.CharField(max_length=8, choices=TokenScope.choices)
    prefix = models.CharField(max_length=16, unique=True, null=True, blank=True)
    digest = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    oauth_client = models.ForeignKey(
        OAuthClient, null=True, blank=True, on_delete=models.CASCADE, related_name="connections"
    )
    oauth_token_family = models.UUIDField(null=True, blank=True, unique=True)
    # SHA-256 of the code, never the code: it finds the connection to end when the code is
    # presented again (RFC 6749 section 4.1.2). Not unique: two exchanges of one code may race.
    oauth_code_digest = models.CharField(max_length=64, blank=True, default="", db_index=True)
    # The spaces it reaches (accounts.reach.token_reach): every space its owner belongs to, now and
    # later, or (all_spaces false) only those listed, each while the owner is a member there. A
    # listed space deleted leaves the others; with none left it reaches nothing, never everything.
    all_spaces = models.BooleanField(default=True)
    spaces = models.ManyToManyField(Space, blank=True, related_name="+")
    # Where it writes when a call names no space: empty, its owner's personal space.
    default_space = models.ForeignKey(Space, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    objects = ApiTokenManager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["owner", "public_id"], name="apitoken_public_id_unique_per_owner"),
            models.CheckConstraint(condition=Q(scope__in=TokenScope.values), name="apitoken_scope"),
            models.CheckConstraint(condition=~Q(name=""), name="apitoken_name_not_empty"),
            # Either a bearer token (prefix and digest) or a connection (client and token family).
            models.CheckConstraint(
                condition=Q(prefix__isnull=False, oauth_client__isnull=True, oauth_token_family__isnull=True)
                & ~Q(digest="")
                | Q(prefix__isnull=True, digest="", oauth_client__isnull=False, oauth_token_family__isnull=False),
                name="apitoken_secret_or_connection",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)" if self.prefix else f"{self.name} (OAuth connection)"

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
    APP_CONNECTED = "app_connected", "application connected"
    APP_DISCONNECTED = "app_disconnected", "application disconnected"
    SIGNED_IN = "signed_in", "signed in"
    SIGN_IN_FAILED = "sign_in_failed", "sign-in failed"
    EXPORTED = "exported", "exported"
    IMPORTED = "imported", "imported"
    SPACE_CREATED = "space_created", "space created"
    SPACE_RENAMED = "space_renamed", "space renamed"
    SPACE_DELETED = "space_deleted", "space deleted"
    SPACE_LEFT = "space_left", "left a space"
    SPACE_HANDED_OVER = "space_handed_over", "space handed over"
    MEMBER_ADDED = "member_added", "member added"
    MEMBER_REMOVED = "member_removed", "member removed"
    ROLE_CHANGED = "role_changed", "role changed"
    INVITATION_MADE = "invitation_made", "space invitation made"
    INVITATION_USED = "invitation_used", "space invitation used"
    INVITATION_REVOKED = "invitation_revoked", "space invitation revoked"
    MEMORY_SHARED = "memory_shared", "memory shared to another space"
    MEMORY_MOVED = "memory_moved", "memory moved to another space"
    SPACE_KEY_ROTATED = "space_key_rotated", "space's encryption key replaced"


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
        indexes = [
            models.Index(fields=["owner", "-created_at"], name="activity_owner_newest"),
            # A space's events, whoever's they are (accounts.spaces.space_activity).
            models.Index(KT("detail__space_id"), F("created_at").desc(), name="activity_space_newest"),
        ]

    def __str__(self) -> str:
        return f"{self.get_action_display()} ({self.created_at:%Y-%m-%d %H:%M})"
