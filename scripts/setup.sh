#!/usr/bin/env bash
# scripts/setup.sh — install the build dependencies (Debian/Ubuntu) when they are missing.
# Installs nothing when everything is already there. Works as root, or through sudo.
#   scripts/setup.sh [--fuzz] [--valgrind]
# --fuzz also installs clang and its libFuzzer runtime (fuzz/run.sh); --valgrind installs
# valgrind (scripts/valgrind.sh). Neither is needed to build or test.
set -euo pipefail

PKGS=(cmake gcc libc6-dev make pkg-config libjansson-dev libcmocka-dev python3)
# Plots (cairo, fontconfig, a font), the local web page (libmicrohttpd) and its browser test.
PKGS+=(libcairo2-dev libfontconfig1-dev libmicrohttpd-dev chromium fonts-dejavu-core)
# The library's install test (groff renders the man page) and the Python package's tests
# (python/: ctypes, pytest, an offline venv install with setuptools and pip).
PKGS+=(groff-base python3-pytest python3-venv python3-setuptools python3-pip python3-wheel python3-cffi)
# meshplan sweep over MPI ranks (docs/sweep.md): Open MPI, found by CMake's FindMPI.
PKGS+=(openmpi-bin libopenmpi-dev)
# meshplan probe reads each node's topology with hwloc (docs/probe.md).
PKGS+=(libhwloc-dev)
# import/ reads YAML with libfyaml and TOML with toml++ (C++17: g++).
PKGS+=(g++ libfyaml-dev libtomlplusplus-dev)
for opt in "$@"; do
    case "$opt" in
        --fuzz) PKGS+=(clang libclang-rt-14-dev) ;;
        --valgrind) PKGS+=(valgrind) ;;
        *) echo "setup: unknown option $opt (expected --fuzz or --valgrind)" >&2; exit 2 ;;
    esac
done

missing=()
for p in "${PKGS[@]}"; do
    if ! dpkg -s "$p" >/dev/null 2>&1; then
        missing+=("$p")
    fi
done
# python3 may come from elsewhere (pyenv, a venv); only the Debian package counts if it is absent.
if command -v python3 >/dev/null 2>&1; then
    kept=()
    for p in ${missing[@]+"${missing[@]}"}; do
        [ "$p" = python3 ] || kept+=("$p")
    done
    missing=(${kept[@]+"${kept[@]}"})
fi

if [ ${#missing[@]} -eq 0 ]; then
    echo "setup: dependencies present"
    exit 0
fi

echo "setup: installing ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then
    SUDO=()
elif command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
else
    echo "setup: missing ${missing[*]}, and not root and no sudo: install them and rerun" >&2
    exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "setup: missing ${missing[*]} and no apt-get: install them with your package manager" >&2
    exit 1
fi
${SUDO[@]+"${SUDO[@]}"} env DEBIAN_FRONTEND=noninteractive apt-get update
${SUDO[@]+"${SUDO[@]}"} env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y "${missing[@]}"
echo "setup: installed ${missing[*]}"
