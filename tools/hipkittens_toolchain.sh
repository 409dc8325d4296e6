#!/bin/bash
# The toolchain tools/hipkittens_kernels.py compiles HipKittens' MI355X bf16 GEMM with, on a machine with no ROCm
# and no AMD GPU (steps 1-4 of the recipe in results/hipkittens/README.md; about 430 MB of downloads, needs root for
# apt-get). Afterwards:  python tools/hipkittens_kernels.py --shape 8192 -o DIR
#
#   Debian bookworm-security clang-22 / lld-22 / llvm-22 (22.1.8, upstream LLVM with the AMDGPU target; gfx950 needs
#     LLVM >= 20, which bookworm's clang-19 and hipcc 5.2.3 (clang 15) are not)
#   HIP headers: the ROCm/HIP and ROCm/clr git snapshots (HIP 6.3.0) laid out as $W/rocm/include/hip
#   device libs: ockl.bc / ocml.bc from the PyPI triton 3.9.0 wheel; the one-constant oclc_*.bc made here
#   pybind11 in $W/venv (kernel_8192.cpp includes pyutils/pyutils.cuh, which includes pybind11 and Python.h)
#
# Inputs: HIP_GIT, CLR_GIT (bare git dirs of ROCm/HIP and ROCm/clr, e.g. from the search tool's fetch), W (default
# /tmp/hkbuild, where the Python tool looks by default).
set -euo pipefail
HIP_GIT=${HIP_GIT:-/work/.mirror/ROCm+HIP/repo}
CLR_GIT=${CLR_GIT:-/work/.mirror/ROCm+clr/repo}
W=${W:-/tmp/hkbuild}
mkdir -p "$W"

# 1) the compiler
if [ ! -x /usr/lib/llvm-22/bin/clang++ ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends clang-22 lld-22 llvm-22
fi
BIN=/usr/lib/llvm-22/bin

# 2) a stand-in ROCm tree: <R>/include/hip, <R>/share/hip/version, <R>/amdgcn/bitcode/*.bc
R=$W/rocm
rm -rf "$R"; mkdir -p "$R/include" "$R/share/hip" "$R/bin" "$R/amdgcn/bitcode"
git --git-dir="$HIP_GIT" archive HEAD include | tar -x --strip-components=1 -C "$R/include"
git --git-dir="$CLR_GIT" archive HEAD hipamd/include | tar -x --strip-components=2 -C "$R/include"
HV_MAJ=$(git --git-dir="$HIP_GIT" show HEAD:VERSION | sed -n 2p)
HV_MIN=$(git --git-dir="$HIP_GIT" show HEAD:VERSION | sed -n 4p)
HV_PAT=$(git --git-dir="$HIP_GIT" show HEAD:VERSION | sed -n 6p)
cat > "$R/include/hip/hip_version.h" <<EOV
// stand-in for the CMake-generated header (ROCm/HIP VERSION file: $HV_MAJ.$HV_MIN.$HV_PAT)
#ifndef HIP_VERSION_H
#define HIP_VERSION_H
#define HIP_VERSION_MAJOR $HV_MAJ
#define HIP_VERSION_MINOR $HV_MIN
#define HIP_VERSION_PATCH $HV_PAT
#define HIP_VERSION_GITHASH ""
#define HIP_VERSION_BUILD_ID 0
#define HIP_VERSION_BUILD_NAME ""
#define HIP_VERSION (HIP_VERSION_MAJOR * 10000000 + HIP_VERSION_MINOR * 100000 + HIP_VERSION_PATCH)
#endif
EOV
# clang adds `-include __clang_hip_runtime_wrapper.h` only if it reads a HIP version above 3.5 here
printf 'HIP_VERSION_MAJOR=%s\nHIP_VERSION_MINOR=%s\nHIP_VERSION_PATCH=%s\n' "$HV_MAJ" "$HV_MIN" "$HV_PAT" > "$R/share/hip/version"
cp "$R/share/hip/version" "$R/bin/.hipVersion"

# 3) device libs: ockl/ocml from the triton wheel; the oclc control libraries (one constant each, as in
#    ROCm-Device-Libs oclc/src/*.cl)
if [ ! -f "$W/triton/triton/backends/amd/lib/ockl.bc" ]; then
  mkdir -p "$W/dl" "$W/triton"
  pip download -q --no-deps --only-binary=:all: -d "$W/dl" triton==3.9.0
  python3 - "$W" <<'PY'
import sys, zipfile, glob
w = sys.argv[1]
z = zipfile.ZipFile(glob.glob(w + "/dl/triton-3.9.0-*.whl")[0])
for n in z.namelist():
    if n.startswith("triton/backends/amd/lib/") and n.endswith(".bc"):
        z.extract(n, w + "/triton")
PY
fi
cp "$W/triton/triton/backends/amd/lib/ockl.bc" "$W/triton/triton/backends/amd/lib/ocml.bc" "$R/amdgcn/bitcode/"
mkbc() { printf 'target triple = "amdgcn-amd-amdhsa"\n%s\n' "$2" > "$W/$1.ll"
         $BIN/clang --target=amdgcn-amd-amdhsa -nogpulib -c -emit-llvm -x ir "$W/$1.ll" -o "$R/amdgcn/bitcode/$1.bc"; }
C='linkonce_odr hidden local_unnamed_addr addrspace(4) constant'
for v in on off; do b=$([ $v = on ] && echo 1 || echo 0); lg=$([ $v = on ] && echo 6 || echo 5)
  mkbc oclc_daz_opt_$v               "@__oclc_daz_opt = $C i8 $b, align 1"
  mkbc oclc_unsafe_math_$v           "@__oclc_unsafe_math_opt = $C i8 $b, align 1"
  mkbc oclc_finite_only_$v           "@__oclc_finite_only_opt = $C i8 $b, align 1"
  mkbc oclc_correctly_rounded_sqrt_$v "@__oclc_correctly_rounded_sqrt32 = $C i8 $b, align 1"
  mkbc oclc_wavefrontsize64_$v       "@__oclc_wavefrontsize64 = $C i8 $b, align 1
@__oclc_wavefrontsize_log2 = $C i32 $lg, align 4"
done
mkbc oclc_isa_version_942 "@__oclc_ISA_version = $C i32 9402, align 4"
mkbc oclc_isa_version_950 "@__oclc_ISA_version = $C i32 9500, align 4"
for a in 400 500 600; do mkbc oclc_abi_version_$a "@__oclc_ABI_version = $C i32 $a, align 4"; done
mkbc opencl "; placeholder: clang insists the file exists, HIP never links it"

# 4) pybind11 headers
if [ ! -x "$W/venv/bin/python" ]; then python3 -m venv "$W/venv"; "$W/venv/bin/pip" install -q pybind11; fi
echo "toolchain ready in $W: python tools/hipkittens_kernels.py --shape N -o DIR"
