#!/usr/bin/env bash
# shell.kernel_rules: the rules every CUDA kernel of kernels/ keeps, read from the source (they hold
# for kernels no GPU test reaches, and a CI machine without a GPU checks them):
#  - every launch goes through launch()/launch_with() (kernels/launch.cuh): no `<<<…>>>`, no direct
#    cudaLaunchKernelEx outside launch.cuh, so programmatic dependent launch (PDL) is decided in
#    one place;
#  - every __global__ function calls pdl_begin() (common.cuh): a kernel launched with PDL that read
#    its inputs or wrote before it could see the previous kernel's partial results (a race no
#    bit-comparison catches every time);
#  - the source stays runnable on memra-emu (kernels/emu/README.md): dynamic shared memory only
#    through MEMRA_DYNAMIC_SMEM, and inline PTX only inside an `#if defined(MEMRA_CUDA_EMU)` …
#    `#else` branch (the emulated build would not compile it), or under `__CUDA_ARCH__`.
# Env (set by CTest): MEMRA_SRC.
set -uo pipefail
src="${MEMRA_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}"
command -v python3 >/dev/null || { echo "skip: python3 is not installed"; exit 77; }
python3 - "$src/kernels" <<'PY'
import pathlib, re, sys

CALL = re.compile(r"(\w+)\s*\(")


def closing(code, i, open_, close):
    """The index of the bracket that closes the one at code[i]."""
    depth = 0
    while True:
        depth += {open_: 1, close: -1}.get(code[i], 0)
        if depth == 0:
            return i
        i += 1


kernels = pathlib.Path(sys.argv[1])
fails = []
n_kernels = 0
for path in sorted(kernels.glob("*.cu")) + sorted(kernels.glob("*.cuh")):
    text = path.read_text()
    code = re.sub(r"//[^\n]*", "", text)  # comments may mention <<<…>>>
    for m in re.finditer(r"<<<", code):
        fails.append(f"{path.name}:{code[:m.start()].count(chr(10)) + 1}: a <<<…>>> launch (use launch() from launch.cuh)")
    if path.name != "launch.cuh":
        for m in re.finditer(r"\bcudaLaunchKernelEx\b", code):
            fails.append(f"{path.name}:{code[:m.start()].count(chr(10)) + 1}: cudaLaunchKernelEx outside launch.cuh")
    for m in re.finditer(r"\bextern\s+__shared__", code):
        if path.name != "common.cuh":
            fails.append(f"{path.name}:{code[:m.start()].count(chr(10)) + 1}: extern __shared__ (use MEMRA_DYNAMIC_SMEM)")
    for m in re.finditer(r"\basm\b", code):
        # the nearest enclosing #if / #else before the asm must be an emu #else or a __CUDA_ARCH__ test
        before = code[:m.start()]
        stack = []
        for d in re.finditer(r"^\s*#\s*(if|ifdef|ifndef|elif|else|endif)\b([^\n]*)", before, re.M):
            kind, rest = d.group(1), d.group(2)
            if kind in ("if", "ifdef", "ifndef"):
                stack.append((kind, rest, False))
            elif kind in ("elif", "else") and stack:
                k0, r0, _ = stack[-1]
                stack[-1] = (k0, r0, True)
            elif kind == "endif" and stack:
                stack.pop()
        ok = any(("MEMRA_CUDA_EMU" in r and in_else) or "__CUDA_ARCH__" in r for _, r, in_else in stack)
        if not ok:
            fails.append(f"{path.name}:{before.count(chr(10)) + 1}: inline PTX without a memra-emu branch")
    for m in re.finditer(r"__global__\s", code):
        # the body: the first '{' after the parameter list (skipping __launch_bounds__(…))
        name_m = CALL.search(code, m.end())
        while name_m and name_m.group(1) == "__launch_bounds__":
            name_m = CALL.search(code, closing(code, name_m.end() - 1, "(", ")") + 1)
        name = name_m.group(1)
        b = code.index("{", closing(code, name_m.end() - 1, "(", ")"))
        k = closing(code, b, "{", "}")
        n_kernels += 1
        if "pdl_begin()" not in code[b:k]:
            fails.append(f"{path.name}: kernel {name} never calls pdl_begin()")
for f in fails:
    print("FAIL:", f)
print(f"{n_kernels} kernels checked, {len(fails)} rule breaks")
sys.exit(1 if fails or n_kernels < 20 else 0)
PY
