from django.urls import path

from memories import views
from memories.mcp.views import mcp_endpoint

urlpatterns = [
    path("", views.home, name="home"),
    path("memories/<uuid:public_id>/", views.memory_detail, name="memory_detail"),
    path("memories/<uuid:public_id>/delete", views.memory_delete, name="memory_delete"),
    path("memories/<uuid:public_id>/edit", views.memory_edit, name="memory_edit"),
    path("memories/<uuid:public_id>/pin", views.memory_pin, name="memory_pin"),
    path("memories/<uuid:public_id>/supersede", views.memory_supersede, name="memory_supersede"),
    path("memories/<uuid:public_id>/reinstate", views.memory_reinstate, name="memory_reinstate"),
    path("memories/<uuid:public_id>/merge", views.memory_merge, name="memory_merge"),
    path("memories/<uuid:public_id>/keep-apart", views.memory_keep_apart, name="memory_keep_apart"),
    path("memories/duplicates/", views.near_duplicates_page, name="near_duplicates"),
    path("entities/", views.entity_list_page, name="entities"),
    path("entities/<uuid:public_id>/", views.entity_detail, name="entity_detail"),
    path("notes/", views.notes_page, name="notes"),
    path("notes/upload", views.note_upload, name="note_upload"),
    path("notes/<uuid:public_id>/", views.note_detail, name="note_detail"),
    path("notes/<uuid:public_id>/edit", views.note_edit, name="note_edit"),
    path("notes/<uuid:public_id>/delete", views.note_delete, name="note_delete"),
    path("memories/retry-failed", views.retry_failed, name="retry_failed"),
    path("export", views.export_download, name="export"),
    path("transfer/", views.transfer_page, name="transfer"),
    path("healthz", views.healthz, name="healthz"),
    path("mcp", mcp_endpoint, name="mcp"),
]
