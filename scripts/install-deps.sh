#!/usr/bin/env bash
# Installs every build and run dependency of cdui from Debian's packages. Idempotent: a second run
# installs nothing new. Needs root (or sudo).
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config
  libcaf-dev libtorch-dev libgloo-dev libcereal-dev libzmq3-dev cppzmq-dev libspdlog-dev
  libboost-test-dev nlohmann-json3-dev libcli11-dev libcpp-httplib-dev libsqlite3-dev zlib1g-dev libsodium-dev
  libopenblas0-openmp dataset-fashion-mnist python3-torch
  # The dashboard: Chart.js, compiled into cdui; the headless browser its test drives.
  libjs-chart.js chromium chromium-driver python3-selenium
  clang-14 libclang-rt-14-dev libfuzzer-14-dev
  # Agents as SLURM jobs: integration/slurm_test runs a one-node cluster of these; the Kubernetes
  # recipe's test reads its manifests with python3-yaml.
  slurmctld slurmd slurm-client munge python3-yaml
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
