from django.urls import path

from memories.mcp.views import mcp_endpoint
from memories.views import entities, health, memories, notes, space_keys, transfer

urlpatterns = [
    path("", memories.home, name="home"),
    path("memories/<uuid:public_id>/", memories.memory_detail, name="memory_detail"),
    path("memories/<uuid:public_id>/delete", memories.memory_delete_view, name="memory_delete"),
    path("memories/<uuid:public_id>/edit", memories.memory_edit, name="memory_edit"),
    path("memories/<uuid:public_id>/pin", memories.memory_pin, name="memory_pin"),
    path("memories/<uuid:public_id>/supersede", memories.memory_supersede, name="memory_supersede"),
    path("memories/<uuid:public_id>/reinstate", memories.memory_reinstate_view, name="memory_reinstate"),
    path("memories/<uuid:public_id>/merge", memories.memory_merge_view, name="memory_merge"),
    path("memories/<uuid:public_id>/keep-apart", memories.memory_keep_apart_view, name="memory_keep_apart"),
    path("memories/<uuid:public_id>/share", memories.memory_share_view, name="memory_share"),
    path("memories/duplicates/", memories.near_duplicates_page, name="near_duplicates"),
    path("memories/retry-failed", memories.retry_failed_view, name="retry_failed"),
    path("entities/", entities.entity_list_page, name="entities"),
    path("entities/<uuid:public_id>/", entities.entity_detail, name="entity_detail"),
    path("notes/", notes.notes_page, name="notes"),
    path("notes/upload", notes.note_upload, name="note_upload"),
    path("notes/<uuid:public_id>/", notes.note_detail, name="note_detail"),
    path("notes/<uuid:public_id>/edit", notes.note_edit, name="note_edit"),
    path("notes/<uuid:public_id>/delete", notes.note_delete_view, name="note_delete"),
    path("spaces/<uuid:space_id>/key/rotate", space_keys.space_key_rotate_view, name="space_key_rotate"),
    path("export", transfer.export_download, name="export"),
    path("transfer/", transfer.transfer_page, name="transfer"),
    path("transfer/imports/<uuid:public_id>/", transfer.import_job_page, name="import_job"),
    path("healthz", health.healthz, name="healthz"),
    path("mcp", mcp_endpoint, name="mcp"),
]
