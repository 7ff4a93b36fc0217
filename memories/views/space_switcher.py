"""The space switcher of the list pages (memories, notes, entities): the `space` query parameter read
into the reach a page lists with, and the choices its form offers."""

from dataclasses import dataclass
from urllib.parse import urlencode

from django.core.exceptions import BadRequest
from django.http import Http404

from accounts.models import MAX_SPACE_NAME_CHARS
from accounts.reach import Reach, ReachedSpace, reach_of
from gnosem.errors import NotFound, ValidationError
from gnosem.types import SignedInRequest


@dataclass(frozen=True)
class SpaceSwitcher:
    """The space a list page shows (`chosen`; None: every space the user reaches), the reach it lists
    with, and the user's spaces to choose from."""

    reach: Reach
    chosen: ReachedSpace | None
    choices: tuple[ReachedSpace, ...]

    @property
    def shown(self) -> bool:
        """Whether there is anything to switch between."""
        return len(self.choices) > 1

    @property
    def writable(self) -> tuple[ReachedSpace, ...]:
        """The spaces a form of the page may write to."""
        return tuple(space for space in self.choices if space.can_write)

    @property
    def write_choice(self) -> ReachedSpace | None:
        """The space a form of the page writes to unless told otherwise: the chosen one where the
        user may write there, else the default write space."""
        if self.chosen is not None and self.chosen.can_write:
            return self.chosen
        return next((space for space in self.writable if space.is_personal), None)

    @property
    def query(self) -> str:
        """The query parameter that keeps the chosen space in a link ("" for every space)."""
        return urlencode({"space": str(self.chosen.public_id)}) if self.chosen else ""


def space_switcher(request: SignedInRequest) -> SpaceSwitcher:
    """The switcher for the space named by the request's `space` parameter (a public id or a name,
    as `Reach.find` takes them); a space the user does not reach is a 404, exactly like one that
    does not exist."""
    reach = reach_of(request.user)
    wanted = request.GET.get("space", "").strip()
    if not wanted:
        return SpaceSwitcher(reach=reach, chosen=None, choices=reach.spaces)
    if len(wanted) > MAX_SPACE_NAME_CHARS:
        raise Http404("No such space.")
    try:
        chosen = reach.find(wanted)
    except NotFound:
        raise Http404("No such space.") from None
    except ValidationError as error:  # two of the user's spaces go by that name
        raise BadRequest(error.message) from None
    return SpaceSwitcher(reach=reach.within(chosen.id), chosen=chosen, choices=reach.spaces)
