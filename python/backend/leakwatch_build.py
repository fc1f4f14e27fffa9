# SPDX-License-Identifier: Apache-2.0
"""leakwatch's PEP 517 build backend (pyproject.toml: backend-path).

pip install . builds the native parts with the project's own Makefile
(make all stand-ins docs) and packs them into a wheel with the Python package:

    leakwatch/__init__.py ...        the helper module (step, dump, library_path)
    leakwatch/_bin/leakwatch         the command (the console script runs it)
    leakwatch/_bin/libleakwatch.so   the library it preloads (found beside it)
    leakwatch/_bin/stand-ins/        CPU stand-ins for libcuda/libcudart
                                     (leakwatch run --cuda-stand-ins)
    leakwatch-V.data/data/share/man/man1/leakwatch.1
    leakwatch-V.data/data/share/bash-completion/completions/leakwatch

It uses the standard library only, so that it works offline with
--no-build-isolation under any CPython >= 3.8, with or without setuptools and
wheel installed (a fresh venv of Python 3.12 has neither). The wheel is tagged
py3-none-PLATFORM: the native code does not link libpython, but it is built
for this machine.

Settings: LEAKWATCH_BUILD_DIR (or --config-settings build-dir=DIR), the
Makefile's build folder, default build; MAKE, default make. The version comes
from the VERSION file.

Also a script: python python/backend/leakwatch_build.py wheel|sdist OUTDIR.
"""

import base64
import csv
import hashlib
import io
import os
import re
import subprocess
import sys
import sysconfig
import tarfile
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAME = "leakwatch"
SUMMARY = "Find gradual GPU memory leaks in deep-learning jobs, without changing a line of code"
REQUIRES_PYTHON = ">=3.8"
CLASSIFIERS = [
    "Environment :: GPU :: NVIDIA CUDA",
    "Operating System :: POSIX :: Linux",
    "License :: OSI Approved :: Apache Software License",
    "Programming Language :: C",
    "Programming Language :: Python :: 3",
    "Topic :: Software Development :: Debuggers",
    "Topic :: Scientific/Engineering :: Artificial Intelligence",
]
# Python files of the package (python/leakwatch), relative to it.
PY_FILES = ["__init__.py", "__main__.py", "_torch.py", "_anatomy.py",
            "_autostart/sitecustomize.py"]
# Built files, relative to the build folder -> place in the package, mode.
NATIVE = [
    ("leakwatch", "_bin/leakwatch", 0o755),
    ("libleakwatch.so", "_bin/libleakwatch.so", 0o755),
    ("tests/lib/libcuda.so.1", "_bin/stand-ins/libcuda.so.1", 0o755),
    ("tests/lib/libcudart.so", "_bin/stand-ins/libcudart.so", 0o755),
] + [("tests/lib/" + lib, "_bin/stand-ins/" + lib, 0o755) for lib in (
    # The CUDA 12 stack that PyTorch's CUDA 12 builds load (scripts/install.sh
    # installs the same list).
    "libcudart.so.12", "libcublas.so.12", "libcublasLt.so.12", "libcudnn.so.9", "libcufft.so.11",
    "libcurand.so.10", "libcusparse.so.12", "libcusolver.so.11", "libnccl.so.2",
    "libnvToolsExt.so.1", "libnvrtc.so.12")]
# Built files -> the environment's data folder (the venv, conda env or prefix).
DATA = [
    ("doc/leakwatch.1", "share/man/man1/leakwatch.1"),
    ("doc/leakwatch.bash", "share/bash-completion/completions/leakwatch"),
]


def version():
    with open(os.path.join(ROOT, "VERSION")) as f:
        v = f.read().strip()
    if not re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+(\.?(a|b|rc|dev|post)[0-9]+)?", v):
        raise SystemExit(
            "leakwatch: VERSION holds %r, not a version such as 1.2.3, 1.2.3rc1 or 1.2.3.dev4" % v
        )
    return v


def _setting(config_settings, key, env, default):
    if config_settings and config_settings.get(key):
        return config_settings[key]
    return os.environ.get(env) or default


def _build_dir(config_settings):
    b = _setting(config_settings, "build-dir", "LEAKWATCH_BUILD_DIR", "build")
    return b if os.path.isabs(b) else os.path.join(ROOT, b)


def _make(config_settings):
    """make all stand-ins docs, in the project's build folder: a no-op when
    it is up to date (make check packs the build it tested)."""
    b = _build_dir(config_settings)
    make = os.environ.get("MAKE", "make")
    jobs = "-j%d" % min(os.cpu_count() or 1, 8)
    cmd = [make, "-C", ROOT, jobs, "B=" + b, "all", "stand-ins", "docs"]
    sys.stderr.write("leakwatch: building the library and the command: %s\n" % " ".join(cmd))
    try:
        # stdout to stderr: pip shows it on failure, and stdout is the frontend's
        r = subprocess.call(cmd, stdout=sys.stderr.fileno())
    except OSError as e:
        raise SystemExit(
            "leakwatch: cannot run %s (%s): building leakwatch needs make and a C compiler "
            "(Debian/Ubuntu: apt-get install build-essential pkg-config uthash-dev "
            "libjansson-dev)" % (make, e.strerror)
        )
    if r != 0:
        raise SystemExit(
            "leakwatch: '%s' failed (status %d); the messages above say why. Building needs a C "
            "compiler, make, pkg-config and the uthash and jansson headers "
            "(scripts/install-deps.sh build installs them on Debian/Ubuntu)" % (" ".join(cmd), r)
        )
    return b


def _platform_tag():
    return sysconfig.get_platform().replace("-", "_").replace(".", "_")


def _dist_info():
    return "%s-%s.dist-info" % (NAME, version())


def _metadata():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    lines = [
        "Metadata-Version: 2.1",
        "Name: " + NAME,
        "Version: " + version(),
        "Summary: " + SUMMARY,
        "Requires-Python: " + REQUIRES_PYTHON,
        "License: Apache-2.0",
    ]
    lines += ["Classifier: " + c for c in CLASSIFIERS]
    lines += ["Description-Content-Type: text/markdown", "", readme]
    return "\n".join(lines)


def _wheel_file(tag):
    return "Wheel-Version: 1.0\nGenerator: leakwatch_build\nRoot-Is-Purelib: false\nTag: %s\n" % tag


ENTRY_POINTS = "[console_scripts]\nleakwatch = leakwatch.__main__:console\n"


class _Wheel:
    """A wheel being written: every file is hashed into RECORD."""

    def __init__(self, path):
        self.path = path
        self.zip = zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED)
        self.records = []
        # Reproducible: SOURCE_DATE_EPOCH, else a fixed date (zip needs >= 1980).
        t = time.gmtime(int(os.environ.get("SOURCE_DATE_EPOCH", "315532800")))
        self.date = tuple(max(t[:6], (1980, 1, 1, 0, 0, 0)))

    def add(self, arcname, data, mode=0o644):
        info = zipfile.ZipInfo(arcname, date_time=self.date)
        info.external_attr = (0o100000 | mode) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self.zip.writestr(info, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
        self.records.append((arcname, "sha256=" + digest.decode(), str(len(data))))

    def add_file(self, arcname, path, mode=None):
        with open(path, "rb") as f:
            data = f.read()
        if mode is None:
            mode = 0o755 if os.access(path, os.X_OK) else 0o644
        self.add(arcname, data, mode)

    def close(self, record_name):
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        for r in self.records:
            w.writerow(r)
        w.writerow((record_name, "", ""))
        info = zipfile.ZipInfo(record_name, date_time=self.date)
        info.external_attr = (0o100644) << 16
        self.zip.writestr(info, out.getvalue())
        self.zip.close()


def _add_metadata(whl, tag):
    di = _dist_info()
    whl.add(di + "/METADATA", _metadata().encode("utf-8"))
    whl.add(di + "/WHEEL", _wheel_file(tag).encode())
    whl.add(di + "/entry_points.txt", ENTRY_POINTS.encode())
    lic = os.path.join(ROOT, "LICENSE")
    if os.path.exists(lic):
        whl.add_file(di + "/LICENSE", lic, 0o644)
    return di + "/RECORD"


def _version_py():
    return ('"""Written by the build from the VERSION file."""\nversion = %r\n' % version()).encode()


def _wheel_name(tag):
    return "%s-%s-%s.whl" % (NAME, version(), tag)


# ---- PEP 517 hooks ----


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    d = os.path.join(metadata_directory, _dist_info())
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata())
    with open(os.path.join(d, "WHEEL"), "w") as f:
        f.write(_wheel_file("py3-none-" + _platform_tag()))
    with open(os.path.join(d, "entry_points.txt"), "w") as f:
        f.write(ENTRY_POINTS)
    return _dist_info()


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    b = _make(config_settings)
    tag = "py3-none-" + _platform_tag()
    name = _wheel_name(tag)
    os.makedirs(wheel_directory, exist_ok=True)
    tmp = os.path.join(wheel_directory, name + ".part")
    whl = _Wheel(tmp)
    pkg = os.path.join(ROOT, "python", NAME)
    for rel in PY_FILES:
        whl.add_file(NAME + "/" + rel, os.path.join(pkg, rel), 0o644)
    whl.add(NAME + "/_version.py", _version_py())
    for src, dst, mode in NATIVE:
        whl.add_file(NAME + "/" + dst, os.path.join(b, src), mode)
    data = "%s-%s.data/data/" % (NAME, version())
    for src, dst in DATA:
        whl.add_file(data + dst, os.path.join(b, src), 0o644)
    whl.close(_add_metadata(whl, tag))
    os.replace(tmp, os.path.join(wheel_directory, name))
    return name


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """pip install -e .: python/ goes on sys.path through a .pth file; the
    package finds the command and the library in the build folder."""
    b = _make(config_settings)
    tag = "py3-none-" + _platform_tag()
    name = _wheel_name(tag)
    os.makedirs(wheel_directory, exist_ok=True)
    whl = _Wheel(os.path.join(wheel_directory, name))
    whl.add("_leakwatch_editable.pth", (os.path.join(ROOT, "python") + "\n").encode())
    data = "%s-%s.data/data/" % (NAME, version())
    for src, dst in DATA:
        whl.add_file(data + dst, os.path.join(b, src), 0o644)
    whl.close(_add_metadata(whl, tag))
    return name


def _sdist_files():
    """The files under version control, else every file but build outputs."""
    try:
        out = subprocess.check_output(
            ["git", "-C", ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            stderr=subprocess.DEVNULL,
        )
        files = [f for f in out.decode().split("\0") if f and os.path.isfile(os.path.join(ROOT, f))]
        if files:
            return sorted(files)
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for d, dirs, names in os.walk(ROOT):
        rel = os.path.relpath(d, ROOT)
        dirs[:] = [x for x in dirs if not (rel == "." and x in ("build", "dist", ".git"))
                   and x != "__pycache__"]
        files += [os.path.normpath(os.path.join(rel, n)) for n in names if not n.endswith(".pyc")]
    return sorted(files)


def build_sdist(sdist_directory, config_settings=None):
    base = "%s-%s" % (NAME, version())
    name = base + ".tar.gz"
    os.makedirs(sdist_directory, exist_ok=True)
    mtime = int(os.environ.get("SOURCE_DATE_EPOCH", time.time()))
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as t:
        for f in _sdist_files():
            t.add(os.path.join(ROOT, f), arcname=base + "/" + f, recursive=False)
        info = tarfile.TarInfo(base + "/PKG-INFO")
        data = _metadata().encode("utf-8")
        info.size, info.mtime, info.mode = len(data), mtime, 0o644
        t.addfile(info, io.BytesIO(data))
    return name


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("wheel", "sdist"):
        sys.exit("usage: leakwatch_build.py wheel|sdist OUTDIR")
    out = sys.argv[2]
    made = build_wheel(out) if sys.argv[1] == "wheel" else build_sdist(out)
    print(os.path.join(out, made))
