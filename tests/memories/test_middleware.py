"""The upload size limit: its 413 page links only to this site."""

from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse


def test_the_413_page_links_back_to_the_transfer_page_whatever_the_path(owner_client, settings):
    settings.GNOSEM_IMPORT_MAX_BYTES = 1024
    upload = {"file": SimpleUploadedFile("export.json", b"x" * 4096)}

    # PATH_INFO as a crafted link `https://gnosem.example//evil.example/x` delivers it.
    response = owner_client.post("/transfer/", upload, PATH_INFO="//evil.example/x")

    assert response.status_code == 413
    page = response.content.decode()
    assert "evil.example" not in page
    assert f'<a href="{reverse("transfer")}">Back</a>' in page
