"""The recall API configurations the load benchmarks compare, as given on their command line."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def parse_config(text: str) -> dict[str, Any]:
    """`workers=2,runtime=onnx-int8,threads=1,shared_model=0,code=/path` -> a configuration
    (`shared_model=0`: a model process per worker instead of one model server for all, as
    `MEMSTREAM_API_SHARED_MODEL=false`)."""
    # runtime "" and threads 0: what the server chooses by default.
    config: dict[str, Any] = {
        "workers": 1,
        "runtime": "",
        "threads": 0,
        "shared_model": 1,
        "code": None,
    }
    for part in filter(None, text.split(",")):
        key, _, value = part.partition("=")
        if key not in config:
            raise argparse.ArgumentTypeError(f"unknown key {key!r} in {text!r}")
        config[key] = Path(value) if key == "code" else int(value) if key != "runtime" else value
    config["name"] = text or "default"
    return config
