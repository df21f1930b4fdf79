#!/usr/bin/env bash
# Installs the second torch configuration of cdui: PyPI's torch 2.11.0 built for CUDA 13 (the GPU
# host's build), with the nvidia-* wheels it loads, into a virtual environment of its own. The build
# then selects it with -DCDUI_TORCH=pip (docs/gpu.md). Idempotent: a second run installs nothing.
#   CDUI_TORCH_VENV  where the environment goes (default ~/.cache/cdui/torch-2.11.0-cu130)
#   CDUI_PYTHON      the Python that makes it (default python3: 3.10 to 3.14 have wheels)
# Prints the environment's path last, for -DCDUI_TORCH_VENV=.
set -euo pipefail

torch_version=2.11.0
venv=${CDUI_TORCH_VENV:-$HOME/.cache/cdui/torch-$torch_version-cu130}
python=${CDUI_PYTHON:-python3}

if [ -x "$venv/bin/python" ] \
   && "$venv/bin/python" -c "import numpy, torch, sys; sys.exit(torch.__version__ != '$torch_version+cu130')" 2>/dev/null; then
  echo "install-torch-pip: torch $torch_version+cu130 present in $venv" >&2
  echo "$venv"
  exit 0
fi

mkdir -p "$(dirname "$venv")"
"$python" -m venv "$venv"
# PyPI's default Linux wheel of 2.11.0 is the CUDA 13.0 build; its nvidia-*-cu13 wheels bring the
# CUDA runtime, cuDNN, cuBLAS and NCCL that libtorch_cuda loads (its RUNPATH points at them), so
# the process holds the CUDA runtime torch was built with, whatever CUDA toolkit the host has.
# numpy: for bench/process_bench.py's Python side (its data loading), as the GPU host's torch has it.
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "torch==$torch_version" numpy
"$venv/bin/python" -c "import torch, sys; print('install-torch-pip: torch', torch.__version__, 'CUDA', torch.version.cuda, file=sys.stderr)"
echo "$venv"
