from django.urls import path

from accounts import space_views, views

urlpatterns = [
    path("tokens/", views.tokens, name="tokens"),
    path("tokens/<uuid:public_id>/revoke", views.token_revoke_view, name="token_revoke"),
    path("tokens/applications/<uuid:public_id>/revoke", views.connection_revoke_view, name="connection_revoke"),
    path("connect/", views.connect, name="connect"),
    path("activity/", views.activity, name="activity"),
    path("spaces/", space_views.spaces, name="spaces"),
    path("spaces/join/<str:secret>/", space_views.space_join, name="space_join"),
    path("spaces/<uuid:space_id>/", space_views.space, name="space"),
    path("spaces/<uuid:space_id>/rename", space_views.space_rename_view, name="space_rename"),
    path("spaces/<uuid:space_id>/delete", space_views.space_delete_view, name="space_delete"),
    path("spaces/<uuid:space_id>/leave", space_views.space_leave_view, name="space_leave"),
    path("spaces/<uuid:space_id>/hand-over", space_views.space_hand_over_view, name="space_hand_over"),
    path("spaces/<uuid:space_id>/members/role", space_views.member_role_view, name="space_member_role"),
    path("spaces/<uuid:space_id>/members/remove", space_views.member_remove_view, name="space_member_remove"),
    path("spaces/<uuid:space_id>/invitations", space_views.invitation_create_view, name="space_invitation_create"),
    path(
        "spaces/<uuid:space_id>/invitations/<uuid:invitation_id>/revoke",
        space_views.invitation_revoke_view,
        name="space_invitation_revoke",
    ),
]
