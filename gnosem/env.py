"""Typed readers for environment variables that fail loudly, naming the variable."""

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar, overload

from django.core.exceptions import ImproperlyConfigured


def _raw(name: str) -> str | None:
    """The variable's value, or the contents of the file named by NAME_FILE (for secrets)."""
    file_name = os.environ.get(f"{name}_FILE")
    if file_name:
        try:
            return Path(file_name).read_text().strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE={file_name!r} cannot be read: {exc}") from exc
    value = os.environ.get(name)
    return value if value not in (None, "") else None


@overload
def env_str(name: str, default: str) -> str: ...
@overload
def env_str(name: str, default: None = None) -> str | None: ...
def env_str(name: str, default: str | None = None) -> str | None:
    value = _raw(name)
    return default if value is None else value


_Number = TypeVar("_Number", int, float)


def _env_number(
    name: str, default: _Number, parse: type[_Number], kind: str, minimum: _Number | None, maximum: _Number | None
) -> _Number:
    """The variable read with `parse` (`kind` says what it must be), within the bounds."""
    value = _raw(name)
    if value is None:
        return default
    try:
        number = parse(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not {kind}.") from None
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name}={number} is below the minimum of {minimum}.")
    if maximum is not None and number > maximum:
        raise ImproperlyConfigured(f"{name}={number} is above the maximum of {maximum}.")
    return number


def env_int(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    return _env_number(name, default, int, "a whole number", minimum, maximum)


def env_float(name: str, default: float, *, minimum: float | None = None, maximum: float | None = None) -> float:
    return _env_number(name, default, float, "a number", minimum, maximum)


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def env_bool(name: str, default: bool) -> bool:
    value = _raw(name)
    if value is None:
        return default
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={value!r} is not a boolean; use one of true/false, 1/0, yes/no, on/off.")


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = _raw(name)
    if value is None:
        return default
    if value not in choices:
        raise ImproperlyConfigured(f"{name}={value!r} is not one of {', '.join(choices)}.")
    return value


_RATE = re.compile(r"\d+/\d*[smhd](?:/(ip|key|user))?")


def env_rate_limit(name: str, default: str, *, per: tuple[str, ...] = ("ip", "key", "user")) -> str:
    """A rate limit in allauth's form: comma-separated `count/period/per`, like 10/m/ip,5/5m/key;
    `per` names what the caller can count by (a rate without one counts per ip)."""
    value = _raw(name)
    if value is None:
        return default
    matches = [_RATE.fullmatch(part.strip()) for part in value.split(",")]
    if not all(match and (match[1] or "ip") in per for match in matches):
        example = "10/m/ip,5/5m/key" if "key" in per else "10/m/ip,100/d/ip"
        subjects = f"{', '.join(per[:-1])} or {per[-1]}" if len(per) > 1 else per[0]
        raise ImproperlyConfigured(
            f"{name}={value!r} is not a rate limit like {example} (count / period in s, m, h or d / per {subjects})."
        )
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    value = _raw(name)
    if value is None:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


def env_url(name: str, schemes: tuple[str, ...]) -> str | None:
    """A URL whose scheme is one of `schemes`, or None when unset."""
    value = _raw(name)
    if value is None:
        return None
    scheme = value.split("://", 1)[0] if "://" in value else ""
    if scheme not in schemes:
        allowed = ", ".join(f"{s}://" for s in schemes)
        raise ImproperlyConfigured(f"{name}={value!r} is not a URL starting with {allowed}.")
    return value


def persistent_secret(name: str, data_dir: Path) -> str:
    """The secret from the environment, else one generated once and kept in the data folder.

    Keeping it on disk lets the web server, the workers and later runs agree on it without any
    configuration; production sets the variable (or NAME_FILE) instead.
    """
    value = _raw(name)
    if value is not None:
        return value  # long enough? check gnosem.E002
    import secrets
    import tempfile

    path = data_dir / "secrets" / name.lower()
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        # Write aside, then hard-link into place: creation is atomic and the first process wins.
        with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False) as handle:
            handle.write(secrets.token_urlsafe(48))
        try:
            os.link(handle.name, path)
        except FileExistsError:
            pass
        finally:
            os.unlink(handle.name)
    return path.read_text().strip()


_PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_REQUEST_RATE = re.compile(r"(\d+)/(\d*)([smhd])")


@dataclass(frozen=True)
class Rate:
    """`count` requests per `seconds`."""

    count: int
    seconds: int

    @property
    def period(self) -> str:
        """The period in words: "minute", "hour", "300 seconds"."""
        names = {1: "second", 60: "minute", 3600: "hour", 86400: "day"}
        return names.get(self.seconds, f"{self.seconds:,} seconds")

    def __str__(self) -> str:
        return f"{self.count:,} per {self.period}"


def env_request_rate(name: str, default: str) -> Rate | None:
    """A request rate like 600/m, 10/h or 100/5m (period in s, m, h or d); 0 means no limit (None)."""
    value = (_raw(name) or default).strip()
    if value == "0":
        return None
    match = _REQUEST_RATE.fullmatch(value)
    if match is None or int(match[1]) == 0 or match[2] == "0":
        raise ImproperlyConfigured(
            f"{name}={value!r} is not a rate like 600/m, 10/h or 100/5m (requests / period in s, m, h or d); "
            "0 turns the limit off."
        )
    return Rate(count=int(match[1]), seconds=int(match[2] or 1) * _PERIODS[match[3]])
