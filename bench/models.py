"""What each way of running the shipped embedding models costs and how far its vectors drift from
the reference (sentence-transformers on torch): the numbers behind the choice of default model and
runtime (docs/benchmarks.md, "Embedding models").

    .venv/bin/python bench/models.py [--turns 512]

For all-MiniLM-L6-v2 and, when its packages are installed, all-mpnet-base-v2: torch, ONNX Runtime
in float32, and ONNX Runtime with dynamic int8 quantisation (all operators, and only the matrix
multiplications per channel). Per runtime: indexing throughput (LoCoMo conversation 0's turns in
batches of 32 on every core), one search query's latency on one thread (p50 of its questions),
and against torch: the mean and lowest cosine of the turns' vectors, and how much of each
question's ten nearest turns stay the same (top-10 overlap).
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.environment import BASE_DIR, setup_django

setup_django("bench")

import numpy as np  # noqa: E402

from memories.indexing import embedding  # noqa: E402
from memories.indexing.model_packages import MPNET_NAME  # noqa: E402
from memories.indexing.query_encoder import OnnxQueryEncoder, export_onnx  # noqa: E402

DATA = BASE_DIR.parent / "shared" / "bench" / "locomo10.json"
BATCH = 32
CORES = len(os.sched_getaffinity(0))


def locomo_texts(turn_count: int) -> tuple[list[str], list[str]]:
    conversation = json.loads(DATA.read_text())[0]
    turns = [
        f"{turn['speaker']}: {turn['text']}"
        for key, session in conversation["conversation"].items()
        if key.startswith("session_") and isinstance(session, list)
        for turn in session
    ]
    return turns[:turn_count], [question["question"] for question in conversation["qa"]]


def onnx_session(path: Path):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = CORES
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def onnx_batches(path: Path, model, texts: list[str]) -> np.ndarray:
    session = onnx_session(path)
    names = [node.name for node in session.get_inputs()]
    vectors = []
    for start in range(0, len(texts), BATCH):
        features = model.tokenizer(
            texts[start : start + BATCH],
            truncation=True,
            max_length=model.max_seq_length,
            padding=True,
            return_tensors="np",
        )
        batch = session.run(None, {name: features[name].astype(np.int64) for name in names})[0]
        vectors.append(batch / np.linalg.norm(batch, axis=1, keepdims=True))
    return np.vstack(vectors)


def query_p50_ms(encode, questions: list[str]) -> float:
    encode("warm up")
    times = []
    for question in questions[:100]:
        started = time.perf_counter()
        encode(question)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def agreement(vectors: np.ndarray, queries: np.ndarray, reference: np.ndarray, reference_queries: np.ndarray) -> dict:
    cosines = np.sum(vectors * reference, axis=1)

    def nearest(turns: np.ndarray, asked: np.ndarray) -> np.ndarray:
        return np.argsort(-(asked @ turns.T), axis=1)[:, :10]

    overlap = [
        len(set(a) & set(b)) / 10
        for a, b in zip(nearest(reference, reference_queries), nearest(vectors, queries), strict=True)
    ]
    return {"cos_mean": float(cosines.mean()), "cos_min": float(cosines.min()), "top10": float(np.mean(overlap))}


def measure(name: str, turns: list[str], questions: list[str], folder: Path) -> list[dict]:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    embedder = embedding.get_embedder(name)
    model = embedder.model
    started = time.perf_counter()
    reference = embedder.embed(turns)
    torch_seconds = time.perf_counter() - started
    reference_queries = np.vstack([embedder.embed_query_with_torch(question) for question in questions])
    rows = [
        {
            "model": name,
            "runtime": "torch",
            "turns/s": len(turns) / torch_seconds,
            "query ms": query_p50_ms(embedder.embed_query_with_torch, questions),
            "cos_mean": 1.0,
            "cos_min": 1.0,
            "top10": 1.0,
        }
    ]
    fp32 = folder / f"{name}.onnx"
    export_onnx(model, fp32)
    variants = {"onnx fp32": fp32}
    for label, options in {
        "onnx int8": {"weight_type": QuantType.QInt8},
        "onnx int8 matmul": {"weight_type": QuantType.QInt8, "op_types_to_quantize": ["MatMul"], "per_channel": True},
    }.items():
        variants[label] = folder / f"{name}-{label.replace(' ', '-')}.onnx"
        quantize_dynamic(str(fp32), str(variants[label]), **options)
    for label, path in variants.items():
        started = time.perf_counter()
        vectors = onnx_batches(path, model, turns)
        seconds = time.perf_counter() - started
        encoder = OnnxQueryEncoder(path, model.tokenizer, model.max_seq_length)
        queries = np.vstack([encoder.encode(question) for question in questions])
        rows.append(
            {
                "model": name,
                "runtime": label,
                "turns/s": len(turns) / seconds,
                "query ms": query_p50_ms(encoder.encode, questions),
                **agreement(vectors, queries, reference, reference_queries),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=512, help="LoCoMo turns to embed (default 512)")
    args = parser.parse_args()
    turns, questions = locomo_texts(args.turns)
    names = [embedding.DEFAULT_MODEL_NAME]
    try:
        embedding.get_embedder(MPNET_NAME)
        names.append(MPNET_NAME)
    except Exception as exc:  # its packages are not installed
        print(f"({MPNET_NAME} left out: {exc})")
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for name in names:
            rows += measure(name, turns, questions, Path(folder))
    print(f"\n{len(turns)} turns, {len(questions)} questions of LoCoMo conversation 0; {CORES} cores")
    print(f"{'model':18} {'runtime':17} {'turns/s':>8} {'query ms':>9} {'cos mean':>9} {'cos min':>8} {'top-10':>7}")
    for row in rows:
        print(
            f"{row['model']:18} {row['runtime']:17} {row['turns/s']:8.1f} {row['query ms']:9.2f} "
            f"{row['cos_mean']:9.4f} {row['cos_min']:8.4f} {row['top10']:7.3f}"
        )


if __name__ == "__main__":
    main()
