"""Which spaces a token or an OAuth connection reaches, and where it writes when a call names no
space: the choice checked against its owner's spaces (the same way for `token_create`, the Tokens
page and the consent page), and the form fields both pages show for it."""

from collections.abc import Sequence
from dataclasses import dataclass

from django.http import QueryDict

from accounts.reach import Reach, ReachedSpace
from gnosem.errors import ValidationError

# A token names at most this many spaces to reach (a person belongs to a handful).
MAX_BOUND_SPACES = 50


@dataclass(frozen=True)
class SpaceBinding:
    """A checked choice: `space_ids`, the row ids of the spaces bound (None: every space of the
    owner's, now and later), and `default_space_id`, where a call naming no space writes (None: the
    personal space)."""

    space_ids: tuple[int, ...] | None
    default_space_id: int | None


def space_binding_clean(*, reach: Reach, spaces: Sequence[object], default_space: object) -> SpaceBinding:
    """The binding to `spaces` (names or ids; none: all the spaces of `reach`, a user's) writing to
    `default_space` (None: the personal space, or with spaces bound and the personal one not among
    them, the first). A space outside the reach is NotFound, as for one that does not exist; a
    default outside the bound spaces is refused."""
    if isinstance(spaces, str) or len(spaces) > MAX_BOUND_SPACES:
        raise ValidationError("spaces", f"a list of at most {MAX_BOUND_SPACES} spaces' names or ids.")
    bound = tuple(dict.fromkeys(reach.find(space).id for space in spaces))
    if default_space is None:
        default = bound[0] if bound and reach.default_space_id not in bound else None
        return SpaceBinding(space_ids=bound or None, default_space_id=default)
    chosen = reach.find(default_space).id
    if bound and chosen not in bound:
        raise ValidationError("default_space", "must be one of the spaces the token is bound to.")
    return SpaceBinding(space_ids=bound or None, default_space_id=None if chosen == reach.default_space_id else chosen)


@dataclass(frozen=True)
class SpaceOption:
    """One of the owner's spaces on the form, ticked or not, chosen as the default or not."""

    space: ReachedSpace
    ticked: bool
    default: bool


@dataclass(frozen=True)
class SpaceBindingForm:
    """The spaces fields of the token form and the consent page, as sent (shown back unchanged when
    refused): `all_spaces` or the `ticked` ones (public ids), and the `default_space` (a public id,
    empty for the personal space or the first ticked). Shown only to a user of several spaces; a
    form without them binds to all."""

    choices: tuple[ReachedSpace, ...]
    all_spaces: bool = True
    ticked: tuple[str, ...] = ()
    default_space: str = ""

    @classmethod
    def from_post(cls, reach: Reach, post: QueryDict) -> "SpaceBindingForm":
        return cls(
            choices=reach.spaces,
            all_spaces=post.get("reach") != "chosen",
            ticked=tuple(post.getlist("spaces")),
            default_space=post.get("default_space", "").strip(),
        )

    @property
    def shown(self) -> bool:
        return len(self.choices) > 1

    @property
    def options(self) -> list[SpaceOption]:
        return [
            SpaceOption(
                space=space,
                ticked=str(space.public_id) in self.ticked,
                default=str(space.public_id) == self.default_space,
            )
            for space in self.choices
        ]

    def arguments(self) -> tuple[tuple[str, ...], str | None]:
        """The spaces ticked (none: all) and the default space, as `space_binding_clean` and
        `token_create` take them; refused when "only these" was chosen with none ticked."""
        if self.all_spaces:
            return (), self.default_space or None
        if not self.ticked:
            raise ValidationError("spaces", "tick at least one space, or choose all your spaces.")
        return self.ticked, self.default_space or None

    def binding(self, reach: Reach) -> SpaceBinding:
        """The choice checked against the user's spaces (`reach`): a space named in a tampered form
        that the user is not a member of is NotFound, as for one that does not exist."""
        spaces, default_space = self.arguments()
        return space_binding_clean(reach=reach, spaces=spaces, default_space=default_space)
