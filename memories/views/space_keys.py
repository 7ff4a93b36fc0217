"""The space page's "Replace the encryption key" button (its owners'): starts the rotation and goes
back to the page, which shows its progress (`{% space_key_rotation %}`)."""

import uuid

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from gnosem.errors import NotFound, PermissionDenied
from gnosem.types import SignedInRequest
from memories.space_keys import space_key_rotate


@login_required
@require_POST
def space_key_rotate_view(request: SignedInRequest, space_id: uuid.UUID) -> HttpResponse:
    try:
        rotation = space_key_rotate(user=request.user, space_id=space_id, request=request)
    except NotFound:
        raise Http404("No such space.") from None
    except PermissionDenied as error:
        messages.error(request, str(error))
        return redirect("space", space_id=space_id)
    messages.success(
        request,
        f"The space now seals everything under a new key (version {rotation.version}); what the older key "
        "sealed is being sealed again in the background.",
    )
    return redirect("space", space_id=space_id)
