from django.urls import path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from memories.api import views

urlpatterns = [
    path("spaces", views.SpaceListView.as_view(), name="api-spaces"),
    path("spaces/<uuid:space_id>", views.SpaceDetailView.as_view(), name="api-space"),
    path("spaces/<uuid:space_id>/members", views.SpaceMembersView.as_view(), name="api-space-members"),
    path("spaces/<uuid:space_id>/members/<str:username>", views.SpaceMemberView.as_view(), name="api-space-member"),
    path("spaces/<uuid:space_id>/leave", views.SpaceLeaveView.as_view(), name="api-space-leave"),
    path("spaces/<uuid:space_id>/hand-over", views.SpaceHandOverView.as_view(), name="api-space-hand-over"),
    path("spaces/<uuid:space_id>/key", views.SpaceKeyView.as_view(), name="api-space-key"),
    path("spaces/<uuid:space_id>/invitations", views.SpaceInvitationsView.as_view(), name="api-space-invitations"),
    path(
        "spaces/<uuid:space_id>/invitations/<uuid:invitation_id>",
        views.SpaceInvitationView.as_view(),
        name="api-space-invitation",
    ),
    path("invitations/accept", views.InvitationAcceptView.as_view(), name="api-invitation-accept"),
    path("memories", views.MemoryListView.as_view(), name="api-memories"),
    path("memories/search", views.MemorySearchView.as_view(), name="api-search"),
    path("memories/count", views.MemoryCountView.as_view(), name="api-count"),
    path("memories/<uuid:public_id>", views.MemoryDetailView.as_view(), name="api-memory"),
    path("memories/<uuid:public_id>/history", views.MemoryHistoryView.as_view(), name="api-memory-history"),
    path("memories/<uuid:public_id>/merge", views.MemoryMergeView.as_view(), name="api-memory-merge"),
    path("memories/<uuid:public_id>/keep-apart", views.MemoryKeepApartView.as_view(), name="api-memory-keep-apart"),
    path("memories/<uuid:public_id>/reinstate", views.MemoryReinstateView.as_view(), name="api-memory-reinstate"),
    path("memories/<uuid:public_id>/share", views.MemoryShareView.as_view(), name="api-memory-share"),
    path("graph", views.GraphExploreView.as_view(), name="api-graph"),
    path("notes", views.NoteListView.as_view(), name="api-notes"),
    path("notes/<uuid:public_id>", views.NoteDetailView.as_view(), name="api-note"),
    path("search", views.SemanticSearchView.as_view(), name="api-semantic-search"),
    path("context", views.SessionContextView.as_view(), name="api-context"),
    path("export", views.ExportView.as_view(), name="api-export"),
    path("import", views.ImportView.as_view(), name="api-import"),
    path("imports", views.ImportJobsView.as_view(), name="api-imports"),
    path("imports/<uuid:public_id>", views.ImportJobView.as_view(), name="api-import-job"),
    path("imports/<uuid:public_id>/start", views.ImportJobStartView.as_view(), name="api-import-job-start"),
    path("usage", views.UsageView.as_view(), name="api-usage"),
    path("schema", SpectacularAPIView.as_view(), name="api_schema"),
    path("docs", SpectacularSwaggerView.as_view(url_name="api_schema"), name="api_docs"),
    re_path(r"^(?P<path>[\s\S]*)$", views.api_not_found),  # any path, line breaks (%0A) included
]
