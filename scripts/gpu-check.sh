#!/usr/bin/env bash
# The GPU check (docs/gpu.md): one prepared command for a GPU host that has PyTorch with CUDA as
# its python3, but no cdui build, no Debian -dev packages and no internet.
#
#   bash scripts/gpu-check.sh pack [BUILD]   here: packs BUILD (default build-pip, a -DCDUI_TORCH=pip
#                                            build of cdui) into gpu-check/: the stripped cdui and
#                                            cdui-runtime and the non-torch shared libraries they
#                                            load (xz-compressed), the Fashion-MNIST files. Prints
#                                            the bundle's size.
#   bash scripts/gpu-check.sh run [--deadline-s S] [--only STEPS]
#                                            on the GPU host, from the checkout with gpu-check/ in it:
#                                            every step of scripts/gpu_check.py against the card;
#                                            the report goes to $OUT/gpu-check/ (else ./gpu-check-report).
#   bash scripts/gpu-check.sh libs           prints the LD_LIBRARY_PATH `run` uses (for a shell).
# $CDUI_GPU_CHECK_PYTHON: the Python whose torch the bundle loads (default python3, the GPU host's).
#
# With the device tool: carry gpu-check/ and run `bash scripts/gpu-check.sh run` (docs/gpu.md).
set -euo pipefail
cd "$(dirname "$0")/.."
bundle=$PWD/gpu-check
# What one carry may hold in all (64 MiB) less the checkout's tracked files and a margin.
bundle_limit_mib=54
python=${CDUI_GPU_CHECK_PYTHON:-python3}

# The libraries a GPU host has itself: glibc's, and those the torch wheel and its nvidia-* wheels
# bring (their loader paths find them there).
is_host_library() {
  case "$(basename "$1")" in
    libc.so.*|libm.so.*|libdl.so.*|librt.so.*|libpthread.so.*|ld-linux*|libresolv.so.*|libutil.so.*) return 0 ;;
    libtorch*|libc10*|libgomp*|libcaffe2*|libshm*|libcu*|libnv*|libnccl*|libcudnn*) return 0 ;;
  esac
  case "$1" in */site-packages/torch/*|*/site-packages/nvidia/*) return 0 ;; esac
  return 1
}

pack() {
  local build=${1:-build-pip}
  if ! grep -q '^CDUI_TORCH:STRING=pip$' "$build/CMakeCache.txt" 2>/dev/null; then
    echo "gpu-check: $build is not a -DCDUI_TORCH=pip build (docs/gpu.md says how to make one)" >&2
    exit 2
  fi
  for binary in cdui cdui-runtime; do
    [ -x "$build/apps/$binary" ] || { echo "gpu-check: $build/apps/$binary is not built (cmake --build $build --target cdui)" >&2; exit 2; }
  done
  rm -rf "$bundle"
  local staging
  staging=$(mktemp -d)
  mkdir -p "$staging/bin" "$staging/lib" "$staging/lib-stdcxx" "$bundle/data"
  for binary in cdui cdui-runtime; do
    strip -o "$staging/bin/$binary" "$build/apps/$binary"
  done
  # Every library cdui-runtime loads that the host may lack: copied, stripped. libstdc++ and
  # libgcc_s go aside: `run` uses them only where the host's are older than Debian 12's.
  local torch_lib
  torch_lib=$(dirname "$(grep '^TORCH_LIBRARY:FILEPATH=' "$build/CMakeCache.txt" | cut -d= -f2)")
  local lib
  while read -r lib; do
    [ -n "$lib" ] || continue
    is_host_library "$lib" && continue
    case "$(basename "$lib")" in
      libstdc++.so.*|libgcc_s.so.*) cp -L "$lib" "$staging/lib-stdcxx/" ;;
      *) cp -L "$lib" "$staging/lib/" && strip --strip-unneeded "$staging/lib/$(basename "$lib")" ;;
    esac
  done < <(LD_LIBRARY_PATH=$torch_lib ldd "$staging/bin/cdui-runtime" "$staging/bin/cdui" | awk '/=> \// {print $3}' | sort -u)
  # The data set's files are gzip already; the rest shrinks about 4 times.
  tar -C "$staging" -cJf "$bundle/cdui.tar.xz" bin lib lib-stdcxx
  local libraries
  libraries=$(ls "$staging/lib" | wc -l)
  rm -rf "$staging"
  mkdir -p "$bundle/data/fashion-mnist"
  cp /usr/share/datasets/fashion-mnist/*-ubyte.gz "$bundle/data/fashion-mnist/"
  {
    echo "commit $(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with changes)')"
    echo "built against $(grep '^CDUI_TORCH_VENV:PATH=' "$build/CMakeCache.txt" | cut -d= -f2)"
    "$(grep '^CDUI_TORCH_VENV:PATH=' "$build/CMakeCache.txt" | cut -d= -f2)/bin/python" -c \
      "import torch; print('torch', torch.__version__)" 2>/dev/null
    echo "packed $(date -u '+%Y-%m-%d %H:%M UTC')"
  } > "$bundle/manifest.txt"
  local mib
  mib=$(( ($(du -sb "$bundle" | cut -f1) + 1048575) / 1048576 ))
  echo "gpu-check: packed $bundle: ${mib} MiB ($libraries libraries), limit ${bundle_limit_mib} MiB"
  if [ "$mib" -gt "$bundle_limit_mib" ]; then
    echo "gpu-check: the bundle is over ${bundle_limit_mib} MiB: it and the checkout would not fit one carry" >&2
    exit 1
  fi
}

# The bundle's binaries and libraries, unpacked outside gpu-check/ (which stays what a carry takes).
unpacked=${TMPDIR:-/tmp}/cdui-gpu-check-$(id -u)
unpack() {
  [ -f "$bundle/cdui.tar.xz" ] || { echo "gpu-check: no bundle in $bundle: run 'scripts/gpu-check.sh pack' where cdui is built" >&2; exit 2; }
  rm -rf "$unpacked" && mkdir -p "$unpacked" && tar -C "$unpacked" -xJf "$bundle/cdui.tar.xz"
}

# torch's lib/ (the host's PyTorch), the bundle's libraries, and Debian's libstdc++ where the host's
# lacks the version cdui was built with.
library_path() {
  local torch_lib
  torch_lib=$("$python" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))' 2>/dev/null)
  local path="$torch_lib:$unpacked/lib"
  if ! LD_LIBRARY_PATH=$path "$unpacked/bin/cdui-runtime" --version >/dev/null 2>&1; then
    path="$path:$unpacked/lib-stdcxx"
  fi
  echo "$path"
}

run() {
  unpack
  local report=${OUT:+$OUT/gpu-check}
  report=${report:-$PWD/gpu-check-report}
  mkdir -p "$report"
  export LD_LIBRARY_PATH
  LD_LIBRARY_PATH=$(library_path)
  cat "$bundle/manifest.txt"
  "$python" scripts/gpu_check.py --bundle "$bundle" --binaries "$unpacked/bin" --report "$report" \
    --python "$python" "$@" 2>&1 \
    | tee "$report/gpu-check.log"
}

case "${1:-}" in
  pack) shift; pack "$@" ;;
  run) shift; run "$@" ;;
  libs) unpack; library_path ;;
  *) sed -n '2,17p' "$0" >&2; exit 2 ;;
esac
