"""A stand-in for maturin, served from the quick-start test's package index
as the wheel maturin-STANDIN: "maturin build [--release] --out DIR" in a
mixed Rust/Python project (Cargo.toml with a cdylib, pyproject.toml with
tool.maturin.module-name and python-source) builds the library with cargo
-- the Rust toolchain the image installed -- and writes a wheel of the
Python sources with the library as MODULE.so, as maturin does. Only what
the quick-start Dockerfile asks of maturin is here.
"""
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import tomllib

from maturin_standin_wheel import write_wheel


def main():
    args = sys.argv[1:]
    if not args or args[0] != "build" or "--out" not in args:
        print("usage: maturin build [--release] --out DIR", file=sys.stderr)
        return 2
    out = args[args.index("--out") + 1]
    profile = "release" if "--release" in args else "debug"
    subprocess.run(["cargo", "build", "--offline"] + (["--release"] if profile == "release" else []), check=True)
    with open("pyproject.toml", "rb") as f:
        pyproject = tomllib.load(f)
    with open("Cargo.toml", "rb") as f:
        cargo = tomllib.load(f)
    project, tool = pyproject["project"], pyproject.get("tool", {}).get("maturin", {})
    module = tool["module-name"]
    tree = tempfile.mkdtemp()
    if "python-source" in tool:
        shutil.copytree(tool["python-source"], tree, dirs_exist_ok=True)
    pkg, _, mod = module.rpartition(".")
    dest = os.path.join(tree, *pkg.split(".")) if pkg else tree
    os.makedirs(dest, exist_ok=True)
    shutil.copy(os.path.join("target", profile, "lib" + cargo["lib"]["name"] + ".so"), os.path.join(dest, mod + ".so"))
    py = f"cp{sys.version_info.major}{sys.version_info.minor}"
    print(write_wheel(project["name"], project["version"], tree, out, f"{py}-{py}-linux_{platform.machine()}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
