#!/usr/bin/env python3
"""mkwheel.py: write a wheel (PEP 427) of a directory of Python sources.

    mkwheel.py NAME VERSION SRC OUTDIR [TAG] [SCRIPT=MODULE:FUNC ...]

SRC's files go into the wheel as they are; TAG is the wheel's tag
(default py3-none-any). The stand-ins of the quick-start test (maturin,
nvidia-nccl-cu12) are made with it, and the maturin stand-in uses it for
the wheels it builds. Timestamps are fixed, so the same input gives the
same bytes (and the same hash in the lock).
"""
import base64
import hashlib
import os
import sys
import zipfile


def record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def main(argv):
    name, version, src, out = argv[:4]
    tag = argv[4] if len(argv) > 4 and "=" not in argv[4] else "py3-none-any"
    print(write_wheel(name, version, src, out, tag, [a for a in argv[4:] if "=" in a]))


def write_wheel(name, version, src, out, tag="py3-none-any", scripts=()):
    """Writes the wheel of src into out; returns its path."""
    dist = name.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    files = []
    for root, dirs, names in os.walk(src):
        dirs.sort()
        for n in sorted(names):
            path = os.path.join(root, n)
            with open(path, "rb") as f:
                files.append((os.path.relpath(path, src).replace(os.sep, "/"), f.read()))
    files.append((f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()))
    files.append((f"{info}/WHEEL", f"Wheel-Version: 1.0\nGenerator: kvsweep-mkwheel\nRoot-Is-Purelib: {'true' if tag.endswith('-any') else 'false'}\nTag: {tag}\n".encode()))
    if scripts:
        body = "[console_scripts]\n" + "".join(f"{k} = {v}\n" for k, v in (s.split("=", 1) for s in scripts))
        files.append((f"{info}/entry_points.txt", body.encode()))
    record = [record_line(n, d) for n, d in files] + [f"{info}/RECORD,,"]
    files.append((f"{info}/RECORD", ("\n".join(record) + "\n").encode()))
    os.makedirs(out, exist_ok=True)
    whl = os.path.join(out, f"{dist}-{version}-{tag}.whl")
    with zipfile.ZipFile(whl, "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in files:
            zi = zipfile.ZipInfo(n, date_time=(2026, 1, 1, 0, 0, 0))
            zi.external_attr = 0o644 << 16
            z.writestr(zi, d)
    return whl


if __name__ == "__main__":
    main(sys.argv[1:])
